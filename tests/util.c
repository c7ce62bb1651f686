/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/* Shared test helpers: see util.h. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "graph/graph.h"

typedef struct run_state {
    int nin, nout;
    size_t nt;
    starpu_data_handle_t *in, *out;   /* [nin * nt], [nout * nt] */
    void **host_in;                   /* [nin * nt] what was written into each input */
    int *out_is_in;                   /* [nout * nt] output shares its input's handle */
} run_state_t;

static void run_state_free(starfold_context_t ctx, run_state_t *rs)
{
    if (rs->out)
        for (size_t i = 0; i < (size_t)rs->nout * rs->nt; i++)
            if (rs->out[i] && !rs->out_is_in[i]) starfold_vector_destroy(ctx, rs->out[i]);
    if (rs->in)
        for (size_t i = 0; i < (size_t)rs->nin * rs->nt; i++)
            if (rs->in[i]) starfold_vector_destroy(ctx, rs->in[i]);
    if (rs->host_in)
        for (size_t i = 0; i < (size_t)rs->nin * rs->nt; i++) free(rs->host_in[i]);
    free(rs->in);
    free(rs->out);
    free(rs->host_in);
    free(rs->out_is_in);
}

#define FAIL(...)                                                                                    \
    do {                                                                                             \
        fprintf(stderr, "%s: ", label);                                                              \
        fprintf(stderr, __VA_ARGS__);                                                                \
        fprintf(stderr, "\n");                                                                       \
        goto out;                                                                                    \
    } while (0)

int starfold__tu_run_graph(starfold_context_t ctx, starfold_graph_t graph, int in_place, const char *label)
{
    const struct starfold_graph *g = graph;
    run_state_t rs = { g->num_inputs, g->num_outputs, g->num_tensors, NULL, NULL, NULL, NULL };
    const size_t nt = rs.nt;
    const starfold_op_t op = g->op;
    int rc = -1;
    starfold_status_t st;
    void *buf = NULL;
    double *expect = NULL;
    const void **srcs = NULL;
    starfold_request_t req = NULL;

    rs.in = calloc((size_t)rs.nin * nt + 1, sizeof *rs.in);
    rs.out = calloc((size_t)rs.nout * nt + 1, sizeof *rs.out);
    rs.host_in = calloc((size_t)rs.nin * nt + 1, sizeof *rs.host_in);
    rs.out_is_in = calloc((size_t)rs.nout * nt + 1, sizeof *rs.out_is_in);
    srcs = calloc((size_t)rs.nin + 1, sizeof *srcs);
    if (!rs.in || !rs.out || !rs.host_in || !rs.out_is_in || !srcs) FAIL("out of memory");

    for (int s = 0; s < rs.nin; s++)
        for (size_t t = 0; t < nt; t++) {
            const starfold_tensor_desc_t *td = &g->tensors[t];
            const size_t k = (size_t)s * nt + t, ic = starfold_graph_input_count(graph, s, t); /* a gather's may differ */
            if (!(rs.host_in[k] = starfold_tools_alloc(td->dtype, ic))) FAIL("out of memory");
            starfold_tools_fill(rs.host_in[k], td->dtype, ic, op, s, t);
            if ((st = starfold_vector_create(ctx, g->input_devices[s], td->dtype, ic, &rs.in[k])) != STARFOLD_OK)
                FAIL("vector_create: %s (%s)", starfold_status_string(st), starfold_last_error());
            if ((st = starfold_vector_write(rs.in[k], rs.host_in[k], ic * starfold_dtype_size(td->dtype))) !=
                STARFOLD_OK)
                FAIL("vector_write: %s (%s)", starfold_status_string(st), starfold_last_error());
        }
    for (int d = 0; d < rs.nout; d++)
        for (size_t t = 0; t < nt; t++) {
            const starfold_tensor_desc_t *td = &g->tensors[t];
            const starfold_dtype_t odt = starfold_graph_output_dtype(graph, t);
            const size_t k = (size_t)d * nt + t;
            const size_t oc = starfold_graph_output_count(graph, t); /* a gather's: every source's */
            int src_slot = -1;
            for (int s = 0; in_place && odt == td->dtype && oc == td->count && s < rs.nin; s++)
                if (g->input_devices[s] == g->output_devices[d]) src_slot = s;
            if (src_slot >= 0) {
                rs.out[k] = rs.in[(size_t)src_slot * nt + t];
                rs.out_is_in[k] = 1;
                continue;
            }
            if ((st = starfold_vector_create(ctx, g->output_devices[d], odt, oc, &rs.out[k])) != STARFOLD_OK)
                FAIL("vector_create: %s (%s)", starfold_status_string(st), starfold_last_error());
            free(buf);
            if (!(buf = starfold_tools_alloc(odt, oc))) FAIL("out of memory");
            starfold_tools_fill_sentinel(buf, odt, oc);
            if ((st = starfold_vector_write(rs.out[k], buf, oc * starfold_dtype_size(odt))) != STARFOLD_OK)
                FAIL("vector_write: %s (%s)", starfold_status_string(st), starfold_last_error());
        }

    if ((st = starfold_submit(ctx, graph, rs.in, rs.out, &req)) != STARFOLD_OK)
        FAIL("submit: %s (%s)", starfold_status_string(st), starfold_last_error());
    st = starfold_request_wait(req);
    starfold_request_destroy(req);
    if (st != STARFOLD_OK) FAIL("wait: %s (%s)", starfold_status_string(st), starfold_last_error());

    for (size_t t = 0; t < nt; t++) {
        const starfold_tensor_desc_t *td = &g->tensors[t];
        const starfold_dtype_t odt = starfold_graph_output_dtype(graph, t);
        const size_t oc = starfold_graph_output_count(graph, t);
        size_t most_in = td->count; /* a gather's sources may hold more than td->count */
        for (int s = 0; s < rs.nin; s++)
            if (starfold_graph_input_count(graph, s, t) > most_in) most_in = starfold_graph_input_count(graph, s, t);
        free(expect);
        free(buf);
        const size_t most = oc > most_in ? oc : most_in;
        expect = malloc(sizeof(double) * (most + 1));
        buf = starfold_tools_alloc(STARFOLD_FLOAT64, most); /* the widest element */
        if (!expect || !buf) FAIL("out of memory");
        if (g->kind == STARFOLD_COLL_GATHER) { /* the sources' tensors one after the other, source order */
            const int integer = td->dtype == STARFOLD_INT32 || td->dtype == STARFOLD_INT64;
            size_t at = 0;
            for (int s = 0; s < rs.nin; s++)
                for (size_t i = 0; i < starfold_graph_input_count(graph, s, t); i++) {
                    double x = starfold_tools_get(rs.host_in[(size_t)s * nt + t], td->dtype, i);
                    if (op == STARFOLD_OP_MEAN && rs.nin > 1) /* divided as the kernels divide: integers truncate */
                        x = integer ? (double)((int64_t)x / rs.nin) : x / rs.nin;
                    expect[at++] = x;
                }
        } else if (g->kind == STARFOLD_COLL_BROADCAST) {
            for (size_t i = 0; i < td->count; i++) expect[i] = starfold_tools_get(rs.host_in[t], td->dtype, i);
        } else {
            for (int s = 0; s < rs.nin; s++) srcs[s] = rs.host_in[(size_t)s * nt + t];
            starfold_tools_reference_ex(op, td->dtype, odt != td->dtype, srcs, rs.nin, td->count, expect);
        }
        for (int d = 0; d < rs.nout; d++) {
            char why[160];
            const size_t bytes = oc * starfold_dtype_size(odt);
            if ((st = starfold_vector_read(rs.out[(size_t)d * nt + t], buf, bytes)) != STARFOLD_OK)
                FAIL("vector_read: %s (%s)", starfold_status_string(st), starfold_last_error());
            if (starfold_tools_compare(buf, odt, expect, oc, why, sizeof why))
                FAIL("output slot %d (device %d) tensor %zu (%s -> %s, %zu elements, op %s): %s", d,
                     g->output_devices[d], t, starfold_dtype_name(td->dtype), starfold_dtype_name(odt), td->count,
                     starfold_op_name(op), why);
        }
        /* Inputs that are not also outputs are never written. */
        for (int s = 0; s < rs.nin; s++) {
            const size_t k = (size_t)s * nt + t;
            int shared = 0;
            for (size_t o = 0; o < (size_t)rs.nout * nt; o++) shared |= rs.out_is_in[o] && rs.out[o] == rs.in[k];
            if (shared) continue;
            const size_t ic = starfold_graph_input_count(graph, s, t);
            if ((st = starfold_vector_read(rs.in[k], buf, ic * starfold_dtype_size(td->dtype))) != STARFOLD_OK)
                FAIL("vector_read: %s (%s)", starfold_status_string(st), starfold_last_error());
            if (ic && memcmp(buf, rs.host_in[k], ic * starfold_dtype_size(td->dtype)))
                FAIL("input slot %d tensor %zu was modified", s, t);
        }
    }
    rc = 0;
out:
    free(buf);
    free(expect);
    free(srcs);
    run_state_free(ctx, &rs);
    return rc;
}

int starfold__tu_refuses(starfold_topology_t topology, const char *algorithm)
{
    if (strcmp(algorithm, "one-pass") != 0) return 0;
    for (int d = 1; d < starfold_topology_num_devices(topology); d++)
        if (!starfold_topology_same_memory(topology, 0, d)) return 1;
    return 0;
}

int starfold__tu_run_collective(starfold_context_t ctx, starfold_topology_t topology, const char *algorithm,
                         const starfold_collective_desc_t *desc, const starfold_algo_options_t *options, int in_place)
{
    char label[256];
    snprintf(label, sizeof label, "%s %s %s on %d sources -> %d destinations, %zu tensors (first %s x %zu), packs %d%s",
             algorithm, desc->kind == STARFOLD_COLL_BROADCAST ? "broadcast" : "reduce", starfold_op_name(desc->op),
             desc->num_sources, desc->num_destinations ? desc->num_destinations : desc->num_sources, desc->num_tensors,
             starfold_dtype_name(desc->tensors[0].dtype), desc->tensors[0].count, options ? options->num_packs : 1,
             in_place ? ", in place" : "");
    starfold_graph_t graph = NULL;
    starfold_status_t st = starfold_graph_compile(topology, algorithm, desc, options, &graph);
    if (starfold__tu_refuses(topology, algorithm)) { /* one-pass without shared memory: refused, nothing to run */
        if (st == STARFOLD_ERR_NOT_SUPPORTED) return 0;
        fprintf(stderr, "%s: compile gave %s, expected NOT_SUPPORTED\n", label, starfold_status_string(st));
        starfold_graph_destroy(graph);
        return -1;
    }
    if (st != STARFOLD_OK) {
        fprintf(stderr, "%s: compile: %s (%s)\n", label, starfold_status_string(st), starfold_last_error());
        return -1;
    }
    /* A graph that fails the checker still runs: both verdicts are reported. */
    int rc = 0;
    if ((st = starfold_graph_check(graph)) != STARFOLD_OK) {
        fprintf(stderr, "%s: check: %s (%s)\n", label, starfold_status_string(st), starfold_last_error());
        rc = -1;
    }
    if (starfold__tu_run_graph(ctx, graph, in_place, label) != 0) rc = -1;
    starfold_graph_destroy(graph);
    return rc;
}

starfold_device_mode_t starfold__tu_device_mode(void)
{
    const char *d = getenv("SF_TEST_DEVICES");
    return d && strcmp(d, "cuda") == 0 ? STARFOLD_DEVICES_CUDA : STARFOLD_DEVICES_CPU;
}
