/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The harness of the command's tests (test_cli.c, test_cli_run.c): the built binary
 * (SF_BUILDDIR/starfold) spawned through /bin/sh with its stdout and stderr captured, and a small JSON
 * reader for what it prints.
 */
#ifndef SF_TEST_CLI_HARNESS_H
#define SF_TEST_CLI_HARNESS_H

#include <stddef.h>

#include "runner.h"

typedef struct cli_result {
    int status;  /* exit status, or -1 when it did not exit normally */
    char *out;   /* stdout, NUL-terminated */
    char *err;   /* stderr */
} cli_result_t;

typedef enum { J_NULL, J_NUM, J_STR, J_ARR, J_OBJ, J_BOOL } jtype_t;
typedef struct jval {
    jtype_t type;
    double num;
    char *str;
    size_t n;             /* items of an array or object */
    struct jval *items;   /* [n] */
    char **keys;          /* [n] for objects */
} jval_t;

typedef struct { const char *p; int bad; } jcur_t;

const char *out_dir(void);
const char *out_path(const char *file);
char *slurp(const char *path, size_t *len);
void result_free(cli_result_t *r);
int sh_status(char *cmd);
void run_env(cli_result_t *r, const char *env, const char *fmt, ...);
/* The command with @fmt's arguments, no extra environment. */
#define run(r, ...) run_env((r), NULL, __VA_ARGS__)
int count_lines(const char *s);
void expect_usage_error(const char *cmd, const char *args, const char *mention);
void jskip(jcur_t *c);
void jfree(jval_t *v);
char *jstring(jcur_t *c);
void jparse(jcur_t *c, jval_t *v);
int jparse_text(const char *text, jval_t *v);
const jval_t *jget(const jval_t *obj, const char *key);
double jnum(const jval_t *obj, const char *key);

/* Whether the file at @path starts with the @len bytes of @prefix, or contains @needle. */
int file_starts_with(const char *path, const char *prefix, size_t len);
int file_contains(const char *path, const char *needle);

/* The main() of a command test program @name: the command must be built, the output folder made,
 * then @tests run (starfold__tu_main_grouped()); the exit status. */
int cli_harness_main(const char *name, const starfold__tu_entry_t *tests, size_t n);

#endif /* SF_TEST_CLI_HARNESS_H */
