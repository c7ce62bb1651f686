/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The replicas a command reduces (cli_replicas_*), which run, bench and run/bench --mpi share: each
 * replica's tensors as vectors of their own or as views of one bucket, filled with deterministic data
 * from their global replica id (tools/verify.h), cleared, submitted and verified element by element
 * against a float64 host reference.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------------
 * Data and reference
 */

uint64_t cli_tensors_bytes(const starfold_tensor_desc_t *tensors, size_t nt)
{
    uint64_t b = 0;
    for (size_t t = 0; t < nt; t++) b += (uint64_t)tensors[t].count * starfold_dtype_size(tensors[t].dtype);
    return b;
}

uint64_t cli_tensors_elements(const starfold_tensor_desc_t *tensors, size_t nt)
{
    uint64_t e = 0;
    for (size_t t = 0; t < nt; t++) e += tensors[t].count;
    return e;
}

/* ------------------------------------------------------------------------------------------------
 * Replicas
 */

/* Elements of all tensors together (a bucket). */
static size_t total_count(const cli_replicas_t *rep)
{
    size_t c = 0;
    for (size_t t = 0; t < rep->nt; t++) c += rep->tensors[t].count;
    return c;
}

/* Elements of output tensor @t: an all-gather's hold every replica's. */
static size_t out_count(const cli_replicas_t *rep, size_t t)
{
    return rep->gathered * rep->tensors[t].count;
}

/* A host buffer for the largest output tensor, or for a whole output bucket (at least one byte). */
static void *host_buffer(const cli_replicas_t *rep)
{
    size_t most = 1;
    if (rep->bucketed) {
        most = rep->gathered * total_count(rep) * starfold_dtype_size(rep->tensors[0].dtype);
    } else {
        for (size_t t = 0; t < rep->nt; t++) {
            const size_t b = out_count(rep, t) * starfold_dtype_size(rep->tensors[t].dtype);
            if (b > most) most = b;
        }
    }
    return malloc(most ? most : 1);
}

void cli_replicas_destroy(cli_replicas_t *rep)
{
    const size_t total = (size_t)rep->n * rep->nt;
    for (size_t k = 0; k < total; k++) {
        if (rep->in && rep->in[k]) starfold_vector_destroy(rep->ctx, rep->in[k]);
        if (rep->out && rep->out[k]) starfold_vector_destroy(rep->ctx, rep->out[k]);
    }
    for (int r = 0; r < rep->n; r++) {
        if (rep->bin && rep->bin[r]) starfold_vector_destroy(rep->ctx, rep->bin[r]);
        if (rep->bout && rep->bout[r]) starfold_vector_destroy(rep->ctx, rep->bout[r]);
    }
    free(rep->in);
    free(rep->out);
    free(rep->bin);
    free(rep->bout);
    free(rep->vin);
    free(rep->vout);
    memset(rep, 0, sizeof *rep);
}

static void replicas_init(cli_replicas_t *rep, starfold_context_t ctx, int n, const starfold_tensor_desc_t *tensors,
                          size_t nt, starfold_op_t op, int collective, int root)
{
    memset(rep, 0, sizeof *rep);
    rep->collective = collective;
    rep->root = root;
    rep->gathered = collective == CLI_COLL_ALL_GATHER ? (size_t)n : 1;
    rep->ctx = ctx;
    rep->n = n;
    rep->offset = 0;
    rep->total = n;
    rep->nt = nt;
    rep->tensors = tensors;
    rep->op = op;
}

static starfold_status_t replicas_create(starfold_context_t ctx, int n, int offset, int total,
                                         const starfold_tensor_desc_t *tensors, size_t nt, starfold_op_t op,
                                         int collective, int root, cli_replicas_t *rep)
{
    replicas_init(rep, ctx, n, tensors, nt, op, collective, root);
    rep->offset = offset;
    rep->total = total;
    rep->in = calloc((size_t)n * nt, sizeof *rep->in);
    rep->out = calloc((size_t)n * nt, sizeof *rep->out);
    void *host = host_buffer(rep);
    starfold_status_t st = STARFOLD_ERR_OUT_OF_MEMORY;
    if (!rep->in || !rep->out || !host) goto fail;
    for (int r = 0; r < n; r++)
        for (size_t t = 0; t < nt; t++) {
            const size_t k = (size_t)r * nt + t, count = tensors[t].count;
            const starfold_dtype_t dt = tensors[t].dtype;
            if ((st = starfold_vector_create(ctx, r, dt, count, &rep->in[k])) != STARFOLD_OK) goto fail;
            if ((st = starfold_vector_create(ctx, r, dt, out_count(rep, t), &rep->out[k])) != STARFOLD_OK) goto fail;
            for (size_t i = 0; i < count; i++)
                starfold_tools_set(host, dt, i, starfold_tools_value(op, dt, offset + r, t, i));
            if ((st = starfold_vector_write(rep->in[k], host, count * starfold_dtype_size(dt))) != STARFOLD_OK) goto fail;
        }
    free(host);
    return STARFOLD_OK;
fail:
    free(host);
    cli_replicas_destroy(rep);
    return st;
}

starfold_status_t cli_replicas_create(starfold_context_t ctx, int n, const starfold_tensor_desc_t *tensors, size_t nt,
                                      starfold_op_t op, int collective, int root, cli_replicas_t *rep)
{
    return replicas_create(ctx, n, 0, n, tensors, nt, op, collective, root, rep);
}

starfold_status_t cli_replicas_create_global(starfold_context_t ctx, int n, int offset, int total,
                                             const starfold_tensor_desc_t *tensors, size_t nt, starfold_op_t op,
                                             cli_replicas_t *rep)
{
    if (n < 1 || offset < 0 || total < offset + n) return STARFOLD_ERR_INVALID_ARGUMENT;
    return replicas_create(ctx, n, offset, total, tensors, nt, op, CLI_COLL_ALL_REDUCE, 0, rep);
}

static starfold_status_t bucketed_create(starfold_context_t ctx, int n, int offset, int total_replicas,
                                         const starfold_tensor_desc_t *tensors, size_t nt, starfold_op_t op,
                                         int collective, int root, cli_replicas_t *rep)
{
    replicas_init(rep, ctx, n, tensors, nt, op, collective, root);
    rep->offset = offset;
    rep->total = total_replicas;
    for (size_t t = 1; t < nt; t++)
        if (tensors[t].dtype != tensors[0].dtype) return STARFOLD_ERR_INVALID_ARGUMENT;
    rep->bucketed = 1;
    const starfold_dtype_t dt = nt ? tensors[0].dtype : STARFOLD_FLOAT32;
    const size_t total = total_count(rep);
    rep->bin = calloc((size_t)n, sizeof *rep->bin);
    rep->bout = calloc((size_t)n, sizeof *rep->bout);
    rep->vin = calloc((size_t)n * nt + 1, sizeof *rep->vin);
    rep->vout = calloc((size_t)n * nt + 1, sizeof *rep->vout);
    void *host = host_buffer(rep);
    starfold_status_t st = STARFOLD_ERR_OUT_OF_MEMORY;
    if (!rep->bin || !rep->bout || !rep->vin || !rep->vout || !host) goto fail;
    for (int r = 0; r < n; r++) {
        if ((st = starfold_vector_create(ctx, r, dt, total, &rep->bin[r])) != STARFOLD_OK) goto fail;
        if ((st = starfold_vector_create(ctx, r, dt, rep->gathered * total, &rep->bout[r])) != STARFOLD_OK) goto fail;
        size_t at = 0;
        for (size_t t = 0; t < nt; t++) {
            const size_t k = (size_t)r * nt + t;
            rep->vin[k] = (starfold_view_t){ rep->bin[r], at };
            rep->vout[k] = (starfold_view_t){ rep->bout[r], rep->gathered * at }; /* an all-gather's: n blocks */
            for (size_t i = 0; i < tensors[t].count; i++)
                starfold_tools_set(host, dt, at + i, starfold_tools_value(op, dt, offset + r, t, i));
            at += tensors[t].count;
        }
        if ((st = starfold_vector_write(rep->bin[r], host, total * starfold_dtype_size(dt))) != STARFOLD_OK) goto fail;
    }
    free(host);
    return STARFOLD_OK;
fail:
    free(host);
    cli_replicas_destroy(rep);
    return st;
}

starfold_status_t cli_replicas_create_bucketed(starfold_context_t ctx, int n, const starfold_tensor_desc_t *tensors,
                                               size_t nt, starfold_op_t op, int collective, int root,
                                               cli_replicas_t *rep)
{
    return bucketed_create(ctx, n, 0, n, tensors, nt, op, collective, root, rep);
}

starfold_status_t cli_replicas_create_global_bucketed(starfold_context_t ctx, int n, int offset, int total,
                                                      const starfold_tensor_desc_t *tensors, size_t nt, starfold_op_t op,
                                                      cli_replicas_t *rep)
{
    if (n < 1 || offset < 0 || total < offset + n) return STARFOLD_ERR_INVALID_ARGUMENT;
    return bucketed_create(ctx, n, offset, total, tensors, nt, op, CLI_COLL_ALL_REDUCE, 0, rep);
}

/* First input and output slot of the collective: a reduce writes the root's only, a broadcast reads it only. */
static size_t in_slot(const cli_replicas_t *rep)
{
    return rep->collective == CLI_COLL_BROADCAST ? (size_t)rep->root : 0;
}

static size_t out_slot(const cli_replicas_t *rep)
{
    return rep->collective == CLI_COLL_REDUCE ? (size_t)rep->root : 0;
}

starfold_status_t cli_replicas_submit(cli_replicas_t *rep, starfold_graph_t g, starfold_request_t *req)
{
    if (rep->bucketed)
        return starfold_submit_views(rep->ctx, g, rep->vin + in_slot(rep) * rep->nt, rep->vout + out_slot(rep) * rep->nt, req);
    return starfold_submit(rep->ctx, g, rep->in + in_slot(rep) * rep->nt, rep->out + out_slot(rep) * rep->nt, req);
}

starfold_status_t cli_replicas_persistent(cli_replicas_t *rep, starfold_graph_t g, starfold_persistent_t *p)
{
    if (rep->bucketed)
        return starfold_persistent_create_views(rep->ctx, g, rep->vin + in_slot(rep) * rep->nt,
                                                rep->vout + out_slot(rep) * rep->nt, p);
    return starfold_persistent_create(rep->ctx, g, rep->in + in_slot(rep) * rep->nt, rep->out + out_slot(rep) * rep->nt, p);
}

/*
 * Element i of tensor t's expected result: the reduction over every replica, the root's own value,
 * or for an all-gather replica i / count's element i % count.
 */
static double expected_at(const cli_replicas_t *rep, starfold_dtype_t dt, size_t t, size_t i)
{
    if (rep->collective == CLI_COLL_BROADCAST) return starfold_tools_value(rep->op, dt, rep->root, t, i);
    if (rep->collective == CLI_COLL_ALL_GATHER) {
        const size_t c = rep->tensors[t].count;
        return starfold_tools_value(rep->op, dt, (int)(i / c), t, i % c);
    }
    return starfold_tools_reference_at(rep->op, dt, rep->total, t, i); /* every replica of every rank */
}

/* Whether replica r's outputs hold a result (a reduce writes only the root's). */
static int has_result(const cli_replicas_t *rep, int r)
{
    return rep->collective != CLI_COLL_REDUCE || r == rep->root;
}

starfold_status_t cli_replicas_clear(cli_replicas_t *rep)
{
    void *host = host_buffer(rep);
    if (!host) return STARFOLD_ERR_OUT_OF_MEMORY;
    starfold_status_t st = STARFOLD_OK;
    if (rep->bucketed) {
        const starfold_dtype_t dt = rep->nt ? rep->tensors[0].dtype : STARFOLD_FLOAT32;
        const size_t total = rep->gathered * total_count(rep);
        for (size_t i = 0; i < total; i++) starfold_tools_set(host, dt, i, starfold_tools_sentinel(dt));
        for (int r = 0; r < rep->n && st == STARFOLD_OK; r++)
            st = starfold_vector_write(rep->bout[r], host, total * starfold_dtype_size(dt));
        free(host);
        return st;
    }
    for (size_t t = 0; t < rep->nt && st == STARFOLD_OK; t++) {
        const starfold_dtype_t dt = rep->tensors[t].dtype;
        for (size_t i = 0; i < out_count(rep, t); i++) starfold_tools_set(host, dt, i, starfold_tools_sentinel(dt));
        for (int r = 0; r < rep->n && st == STARFOLD_OK; r++)
            st = starfold_vector_write(rep->out[(size_t)r * rep->nt + t], host, out_count(rep, t) * starfold_dtype_size(dt));
    }
    free(host);
    return st;
}

starfold_status_t cli_replicas_verify(cli_replicas_t *rep, uint64_t *wrong, uint64_t *checked)
{
    uint64_t bad = 0, seen = 0;
    void *host = host_buffer(rep);
    size_t most = 1;
    for (size_t t = 0; t < rep->nt; t++)
        if (out_count(rep, t) > most) most = out_count(rep, t);
    double *ref = malloc(most * sizeof *ref);
    starfold_status_t st = STARFOLD_OK;
    if (!host || !ref) st = STARFOLD_ERR_OUT_OF_MEMORY;
    if (rep->bucketed) { /* every replica's bucket read once, its tensors checked in place */
        const starfold_dtype_t dt = rep->nt ? rep->tensors[0].dtype : STARFOLD_FLOAT32;
        for (int r = 0; r < rep->n && st == STARFOLD_OK; r++) {
            if (!has_result(rep, r)) continue;
            st = starfold_vector_read(rep->bout[r], host, rep->gathered * total_count(rep) * starfold_dtype_size(dt));
            for (size_t t = 0, at = 0; t < rep->nt && st == STARFOLD_OK; at += out_count(rep, t++)) {
                for (size_t i = 0; i < out_count(rep, t); i++)
                    if (!starfold_tools_close_enough(dt, starfold_tools_get(host, dt, at + i), expected_at(rep, dt, t, i)))
                        bad++;
                seen += out_count(rep, t);
            }
        }
    }
    for (size_t t = 0; t < rep->nt && st == STARFOLD_OK && !rep->bucketed; t++) {
        const starfold_dtype_t dt = rep->tensors[t].dtype;
        const size_t count = out_count(rep, t);
        /* The reference once per tensor, then every replica against it. */
        for (size_t i = 0; i < count; i++) ref[i] = expected_at(rep, dt, t, i);
        for (int r = 0; r < rep->n && st == STARFOLD_OK; r++) {
            if (!has_result(rep, r)) continue;
            st = starfold_vector_read(rep->out[(size_t)r * rep->nt + t], host, count * starfold_dtype_size(dt));
            for (size_t i = 0; i < count && st == STARFOLD_OK; i++)
                if (!starfold_tools_close_enough(dt, starfold_tools_get(host, dt, i), ref[i])) bad++;
            seen += count;
        }
    }
    free(host);
    free(ref);
    if (st == STARFOLD_OK) {
        *wrong = bad;
        *checked = seen;
    }
    return st;
}
