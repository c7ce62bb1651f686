/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/* The command tests' harness (cli_harness.h). */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "config.h"

#include <CUnit/Basic.h>
#include <ctype.h>
#include <signal.h>
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef HAVE_LIBPNG
#include <png.h>
#endif

#include <starfold.h>

#include "tools.h"
#include "cli_harness.h"

extern char **environ;

/* ------------------------------------------------------------------------------------------------
 * Running the command
 */


const char *out_dir(void)
{
    const char *d = getenv("SF_TEST_OUT");
    return d && *d ? d : SF_BUILDDIR "/tests/out";
}

/* A path under the test output folder; each of the 4 slots is reused every fourth call. */
const char *out_path(const char *file)
{
    static char paths[4][1024];
    static int slot;
    char *p = paths[slot++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", out_dir(), file);
    return p;
}

char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

void result_free(cli_result_t *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

/* The exit status of `sh -c CMD`, -1 when it did not exit. */
int sh_status(char *cmd)
{
    char *argv[] = { "sh", "-c", cmd, NULL };
    pid_t pid;
    int status = -1;
    fflush(NULL);
    if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) == 0) {
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
        if (WIFEXITED(st)) status = WEXITSTATUS(st);
    }
    return status;
}

/* Runs `[ENV] starfold ARGS` through /bin/sh; @env is a prefix of VAR=value words or NULL. */
void run_env(cli_result_t *r, const char *env, const char *fmt, ...)
{
    char args[2048], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char outp[1024], errp[1024];
    snprintf(outp, sizeof outp, "%s/cli-stdout.txt", out_dir());
    snprintf(errp, sizeof errp, "%s/cli-stderr.txt", out_dir());
    snprintf(cmd, sizeof cmd, "%s exec '%s/starfold' %s >'%s' 2>'%s'", env ? env : "", SF_BUILDDIR, args, outp, errp);
    memset(r, 0, sizeof *r);
    r->status = sh_status(cmd);
    r->out = slurp(outp, NULL);
    r->err = slurp(errp, NULL);
    if (!r->out) r->out = calloc(1, 1);
    if (!r->err) r->err = calloc(1, 1);
}


int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* A bad-argument run: status 2, nothing on stdout, exactly one line on stderr "starfold CMD: ...". */
void expect_usage_error(const char *cmd, const char *args, const char *mention)
{
    cli_result_t r;
    run(&r, "%s %s", cmd, args);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "starfold %s: ", cmd);
    const int ok = r.status == 2 && r.out[0] == '\0' && count_lines(r.err) == 1 &&
                   strncmp(r.err, prefix, strlen(prefix)) == 0 && (!mention || strstr(r.err, mention));
    if (!ok)
        fprintf(stderr, "\n  starfold %s %s: status %d, stdout '%.80s', stderr '%s' (wanted 2 and '%s')\n", cmd, args,
                r.status, r.out, r.err, mention ? mention : "");
    CU_ASSERT(ok);
    result_free(&r);
}

/* ------------------------------------------------------------------------------------------------
 * A small JSON reader: enough for the command's output (objects, arrays, numbers, strings, null).
 */



void jskip(jcur_t *c)
{
    while (*c->p && isspace((unsigned char)*c->p)) c->p++;
}

void jfree(jval_t *v)
{
    for (size_t i = 0; i < v->n; i++) {
        jfree(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    memset(v, 0, sizeof *v);
}

char *jstring(jcur_t *c)
{
    if (*c->p != '"') {
        c->bad = 1;
        return NULL;
    }
    c->p++;
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    while (s && *c->p && *c->p != '"') {
        char ch = *c->p++;
        if (ch == '\\') {
            ch = *c->p++;
            if (ch == 'u') { /* the command escapes only control characters */
                ch = (char)strtol((char[]){ c->p[0], c->p[1], c->p[2], c->p[3], 0 }, NULL, 16);
                c->p += 4;
            } else if (ch == 'n') ch = '\n';
        }
        if (n + 2 > cap) {
            char *t = realloc(s, cap *= 2);
            if (!t) {
                free(s);
                s = NULL;
                break;
            }
            s = t;
        }
        s[n++] = ch;
    }
    if (!s || *c->p != '"') {
        free(s);
        c->bad = 1;
        return NULL;
    }
    c->p++;
    s[n] = '\0';
    return s;
}

void jparse(jcur_t *c, jval_t *v)
{
    memset(v, 0, sizeof *v);
    jskip(c);
    if (*c->p == '{' || *c->p == '[') {
        const int obj = *c->p == '{';
        const char close = obj ? '}' : ']';
        v->type = obj ? J_OBJ : J_ARR;
        c->p++;
        jskip(c);
        if (*c->p == close) {
            c->p++;
            return;
        }
        for (;;) {
            v->items = realloc(v->items, (v->n + 1) * sizeof *v->items);
            if (obj) v->keys = realloc(v->keys, (v->n + 1) * sizeof *v->keys);
            if (!v->items || (obj && !v->keys)) {
                c->bad = 1;
                return;
            }
            if (obj) {
                jskip(c);
                v->keys[v->n] = jstring(c);
                jskip(c);
                if (c->bad || *c->p != ':') {
                    c->bad = 1;
                    free(v->keys[v->n]);
                    return;
                }
                c->p++;
            }
            jparse(c, &v->items[v->n]);
            v->n++;
            if (c->bad) return;
            jskip(c);
            if (*c->p == ',') {
                c->p++;
                continue;
            }
            if (*c->p == close) {
                c->p++;
                return;
            }
            c->bad = 1;
            return;
        }
    } else if (*c->p == '"') {
        v->type = J_STR;
        v->str = jstring(c);
    } else if (strncmp(c->p, "null", 4) == 0) {
        v->type = J_NULL;
        c->p += 4;
    } else if (strncmp(c->p, "true", 4) == 0 || strncmp(c->p, "false", 5) == 0) {
        v->type = J_BOOL;
        v->num = c->p[0] == 't';
        c->p += c->p[0] == 't' ? 4 : 5;
    } else {
        char *end = NULL;
        v->type = J_NUM;
        v->num = strtod(c->p, &end);
        if (end == c->p) c->bad = 1;
        c->p = end;
    }
}

/* Parses one JSON value that must be all of @text but blanks; 0 or -1. */
int jparse_text(const char *text, jval_t *v)
{
    jcur_t c = { text, 0 };
    jparse(&c, v);
    jskip(&c);
    if (c.bad || *c.p) {
        jfree(v);
        return -1;
    }
    return 0;
}

const jval_t *jget(const jval_t *obj, const char *key)
{
    if (!obj || obj->type != J_OBJ) return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (obj->keys[i] && strcmp(obj->keys[i], key) == 0) return &obj->items[i];
    return NULL;
}

double jnum(const jval_t *obj, const char *key)
{
    const jval_t *v = jget(obj, key);
    return v && v->type == J_NUM ? v->num : NAN;
}

int file_starts_with(const char *path, const char *prefix, size_t len)
{
    size_t n = 0;
    char *s = slurp(path, &n);
    const int ok = s && n >= len && memcmp(s, prefix, len) == 0;
    free(s);
    return ok;
}

int file_contains(const char *path, const char *needle)
{
    char *s = slurp(path, NULL);
    const int ok = s && strstr(s, needle) != NULL;
    free(s);
    return ok;
}

int cli_harness_main(const char *name, const starfold__tu_entry_t *tests, size_t n)
{
    struct stat sb;
    if (stat(SF_BUILDDIR "/starfold", &sb) != 0) {
        fprintf(stderr, "%s: %s/starfold is not built\n", name, SF_BUILDDIR);
        return 1;
    }
    mkdir(out_dir(), 0755);
    return starfold__tu_main_grouped(tests, n);
}
