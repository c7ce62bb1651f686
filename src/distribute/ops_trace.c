/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The test trace of cross-device ops: the path (shortcut, all-reduce, reduce-to-one, fallback, ...)
 * each pair of the last calls took, kept in a ring for the tests that check TensorFlow's dispatch.
 */
#include "config.h"

#include <pthread.h>

#include "base/common.h"
#include "distribute/distribute.h"

static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static starfold__trace_entry_t trace_ring[SF_TRACE_MAX];
static size_t trace_total;

void starfold__trace_reset(void)
{
    pthread_mutex_lock(&trace_lock);
    trace_total = 0;
    pthread_mutex_unlock(&trace_lock);
}

size_t starfold__trace_count(void)
{
    pthread_mutex_lock(&trace_lock);
    const size_t n = trace_total;
    pthread_mutex_unlock(&trace_lock);
    return n;
}

int starfold__trace_get(size_t i, starfold__trace_entry_t *out)
{
    pthread_mutex_lock(&trace_lock);
    const size_t kept = trace_total < SF_TRACE_MAX ? trace_total : SF_TRACE_MAX;
    int ok = i < kept;
    if (ok) *out = trace_ring[(trace_total - kept + i) % SF_TRACE_MAX];
    pthread_mutex_unlock(&trace_lock);
    return ok ? 0 : -1;
}

void starfold__trace_add(const starfold__trace_entry_t *e)
{
    pthread_mutex_lock(&trace_lock);
    trace_ring[trace_total % SF_TRACE_MAX] = *e;
    trace_total++;
    pthread_mutex_unlock(&trace_lock);
}

const char *starfold__path_name(starfold__path_t p)
{
    static const char *const names[SF_PATH_COUNT] = { "shortcut", "all-reduce", "reduce-to-one", "fallback",
                                                      "broadcast", "gather", "update" };
    return (int)p >= 0 && p < SF_PATH_COUNT ? names[p] : "unknown";
}
