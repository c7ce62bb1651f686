#ifndef SF_TEST_UTIL_H
#define SF_TEST_UTIL_H
#endif
