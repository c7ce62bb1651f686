/* Shared test helpers: see util.h. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"
#include "graph.h"

double sf_tu_get(const void *data, starfold_dtype_t dtype, size_t i)
{
    switch (dtype) {
    case STARFOLD_FLOAT32: return ((const float *)data)[i];
    case STARFOLD_FLOAT64: return ((const double *)data)[i];
    case STARFOLD_INT32: return ((const int32_t *)data)[i];
    case STARFOLD_INT64: return (double)((const int64_t *)data)[i];
    }
    return NAN;
}

void sf_tu_set(void *data, starfold_dtype_t dtype, size_t i, double value)
{
    switch (dtype) {
    case STARFOLD_FLOAT32: ((float *)data)[i] = (float)value; break;
    case STARFOLD_FLOAT64: ((double *)data)[i] = value; break;
    case STARFOLD_INT32: ((int32_t *)data)[i] = (int32_t)value; break;
    case STARFOLD_INT64: ((int64_t *)data)[i] = (int64_t)value; break;
    }
}

void *sf_tu_alloc(starfold_dtype_t dtype, size_t count)
{
    size_t bytes = count * starfold_dtype_size(dtype);
    return malloc(bytes ? bytes : 1);
}

static uint32_t mix(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x7feb352dU;
    h ^= h >> 15;
    h *= 0x846ca68bU;
    h ^= h >> 16;
    return h;
}

double sf_tu_value(starfold_op_t op, starfold_dtype_t dtype, int replica, size_t tensor, size_t i)
{
    const uint32_t h = mix((uint32_t)replica * 0x9e3779b9U ^ mix((uint32_t)tensor * 0x85ebca6bU ^ mix((uint32_t)i)));
    const int is_int = dtype == STARFOLD_INT32 || dtype == STARFOLD_INT64;
    if (op == STARFOLD_OP_PROD) {
        static const double ints[4] = { -2, -1, 1, 2 };
        static const double floats[6] = { -2, -1, -0.5, 0.5, 1, 2 };
        return is_int ? ints[h % 4] : floats[h % 6];
    }
    if (is_int) return (double)((int)(h % 201) - 100);
    return ((int)(h % 401) - 200) / 4.0;
}

void sf_tu_fill(void *data, starfold_dtype_t dtype, size_t count, starfold_op_t op, int replica, size_t tensor)
{
    for (size_t i = 0; i < count; i++) sf_tu_set(data, dtype, i, sf_tu_value(op, dtype, replica, tensor, i));
}

void sf_tu_fill_sentinel(void *data, starfold_dtype_t dtype, size_t count)
{
    for (size_t i = 0; i < count; i++) sf_tu_set(data, dtype, i, SF_TU_SENTINEL);
}

void sf_tu_reference(starfold_op_t op, starfold_dtype_t dtype, const void *const *srcs, int nsrc, size_t count,
                     double *out)
{
    sf_tu_reference_ex(op, dtype, 0, srcs, nsrc, count, out);
}

void sf_tu_reference_ex(starfold_op_t op, starfold_dtype_t dtype, int promote, const void *const *srcs, int nsrc,
                        size_t count, double *out)
{
    const int is_int = (dtype == STARFOLD_INT32 || dtype == STARFOLD_INT64) && !promote;
    for (size_t i = 0; i < count; i++) {
        double acc = sf_tu_get(srcs[0], dtype, i);
        for (int s = 1; s < nsrc; s++) {
            const double v = sf_tu_get(srcs[s], dtype, i);
            switch (op) {
            case STARFOLD_OP_SUM:
            case STARFOLD_OP_MEAN: acc += v; break;
            case STARFOLD_OP_PROD: acc *= v; break;
            case STARFOLD_OP_MIN: acc = v < acc ? v : acc; break;
            case STARFOLD_OP_MAX: acc = v > acc ? v : acc; break;
            }
        }
        if (op == STARFOLD_OP_MEAN) acc = is_int ? (double)((int64_t)acc / (int64_t)nsrc) : acc / nsrc;
        out[i] = acc;
    }
}

int sf_tu_compare(const void *got, starfold_dtype_t dtype, const double *expected, size_t count, char *why,
                  size_t whylen)
{
    const double tol = dtype == STARFOLD_FLOAT32 ? 1e-5 : dtype == STARFOLD_FLOAT64 ? 1e-12 : 0.0;
    for (size_t i = 0; i < count; i++) {
        const double g = sf_tu_get(got, dtype, i), e = expected[i];
        const int ok = tol == 0.0 ? g == e : fabs(g - e) <= tol * fmax(1.0, fabs(e));
        if (!ok) {
            if (why) snprintf(why, whylen, "element %zu of %zu: got %.17g, expected %.17g", i, count, g, e);
            return -1;
        }
    }
    return 0;
}

double sf_tu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------------------------------ */

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

int sf_tu_run_graph(starfold_context_t ctx, starfold_graph_t graph, int in_place, const char *label)
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
            const size_t k = (size_t)s * nt + t;
            if (!(rs.host_in[k] = sf_tu_alloc(td->dtype, td->count))) FAIL("out of memory");
            sf_tu_fill(rs.host_in[k], td->dtype, td->count, op, s, t);
            if ((st = starfold_vector_create(ctx, g->input_devices[s], td->dtype, td->count, &rs.in[k])) != STARFOLD_OK)
                FAIL("vector_create: %s (%s)", starfold_status_string(st), starfold_last_error());
            if ((st = starfold_vector_write(rs.in[k], rs.host_in[k], td->count * starfold_dtype_size(td->dtype))) !=
                STARFOLD_OK)
                FAIL("vector_write: %s (%s)", starfold_status_string(st), starfold_last_error());
        }
    for (int d = 0; d < rs.nout; d++)
        for (size_t t = 0; t < nt; t++) {
            const starfold_tensor_desc_t *td = &g->tensors[t];
            const starfold_dtype_t odt = starfold_graph_output_dtype(graph, t);
            const size_t k = (size_t)d * nt + t;
            int src_slot = -1;
            for (int s = 0; in_place && odt == td->dtype && s < rs.nin; s++)
                if (g->input_devices[s] == g->output_devices[d]) src_slot = s;
            if (src_slot >= 0) {
                rs.out[k] = rs.in[(size_t)src_slot * nt + t];
                rs.out_is_in[k] = 1;
                continue;
            }
            if ((st = starfold_vector_create(ctx, g->output_devices[d], odt, td->count, &rs.out[k])) != STARFOLD_OK)
                FAIL("vector_create: %s (%s)", starfold_status_string(st), starfold_last_error());
            free(buf);
            if (!(buf = sf_tu_alloc(odt, td->count))) FAIL("out of memory");
            sf_tu_fill_sentinel(buf, odt, td->count);
            if ((st = starfold_vector_write(rs.out[k], buf, td->count * starfold_dtype_size(odt))) != STARFOLD_OK)
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
        free(expect);
        free(buf);
        expect = malloc(sizeof(double) * (td->count + 1));
        buf = sf_tu_alloc(STARFOLD_FLOAT64, td->count); /* the widest element */
        if (!expect || !buf) FAIL("out of memory");
        if (g->kind == STARFOLD_COLL_BROADCAST) {
            for (size_t i = 0; i < td->count; i++) expect[i] = sf_tu_get(rs.host_in[t], td->dtype, i);
        } else {
            for (int s = 0; s < rs.nin; s++) srcs[s] = rs.host_in[(size_t)s * nt + t];
            sf_tu_reference_ex(op, td->dtype, odt != td->dtype, srcs, rs.nin, td->count, expect);
        }
        for (int d = 0; d < rs.nout; d++) {
            char why[160];
            const size_t bytes = td->count * starfold_dtype_size(odt);
            if ((st = starfold_vector_read(rs.out[(size_t)d * nt + t], buf, bytes)) != STARFOLD_OK)
                FAIL("vector_read: %s (%s)", starfold_status_string(st), starfold_last_error());
            if (sf_tu_compare(buf, odt, expect, td->count, why, sizeof why))
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
            if ((st = starfold_vector_read(rs.in[k], buf, td->count * starfold_dtype_size(td->dtype))) != STARFOLD_OK)
                FAIL("vector_read: %s (%s)", starfold_status_string(st), starfold_last_error());
            if (td->count && memcmp(buf, rs.host_in[k], td->count * starfold_dtype_size(td->dtype)))
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

int sf_tu_refuses(starfold_topology_t topology, const char *algorithm)
{
    if (strcmp(algorithm, "one-pass") != 0) return 0;
    for (int d = 1; d < starfold_topology_num_devices(topology); d++)
        if (!starfold_topology_same_memory(topology, 0, d)) return 1;
    return 0;
}

int sf_tu_run_collective(starfold_context_t ctx, starfold_topology_t topology, const char *algorithm,
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
    if (sf_tu_refuses(topology, algorithm)) { /* one-pass without shared memory: refused, nothing to run */
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
    if (sf_tu_run_graph(ctx, graph, in_place, label) != 0) rc = -1;
    starfold_graph_destroy(graph);
    return rc;
}
