/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Error detail recording (thread-local, so concurrent callers do not see each other's messages) and
 * small helpers every layer uses.
 */
#include "base/common.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static _Thread_local char starfold__last_error[STARFOLD_ERROR_LEN];

starfold_status_t starfold__error(starfold_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(starfold__last_error, sizeof starfold__last_error, fmt, ap);
    va_end(ap);
    return status;
}

STARFOLD_API const char *starfold_last_error(void)
{
    return starfold__last_error;
}

void starfold__error_save(char saved[STARFOLD_ERROR_LEN])
{
    memcpy(saved, starfold__last_error, strnlen(starfold__last_error, STARFOLD_ERROR_LEN - 1) + 1);
}

void starfold__error_restore(const char *saved)
{
    const size_t n = strnlen(saved, STARFOLD_ERROR_LEN - 1);
    memcpy(starfold__last_error, saved, n);
    starfold__last_error[n] = 0;
}

int starfold__grow(void **items, size_t *cap, size_t n, size_t elem_size)
{
    if (n < *cap) return 0;
    size_t ncap = *cap ? *cap * 2 : 8;
    if (ncap < n + 1 || ncap > ((size_t)-1) / elem_size) return -1;
    void *p = realloc(*items, ncap * elem_size);
    if (!p) return -1;
    *items = p;
    *cap = ncap;
    return 0;
}

char *starfold__strdup(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (!d) {
        starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "out of memory copying a string of %zu bytes", n);
        return NULL;
    }
    return memcpy(d, s, n);
}

int starfold__streq_nocase(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    return *a == *b;
}

double starfold__now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int starfold__env_set(const char *name)
{
    const char *v = getenv(name);
    return v && *v;
}

void starfold__nap(long *ns, long max_ns)
{
    const struct timespec pause = { 0, *ns };
    nanosleep(&pause, NULL);
    if (*ns < max_ns) *ns = *ns * 2 < max_ns ? *ns * 2 : max_ns;
}
