/*
 * one-pass: for devices that share one memory (CPU devices in host memory, StarPU's CPU-only mode).
 *
 * On one memory node there is nothing to route: copies between "devices" are memcpys through the same
 * DRAM, so a hierarchy or a ring only multiplies the memory traffic. The floor is reading each of the
 * n inputs once and writing each of the m outputs once. Here every chunk of every tensor is one task
 * that does exactly that: it reads the chunk from every replica, reduces it in cache-sized blocks,
 * and stores the result (divided by n for MEAN) into every destination.
 *
 *     chunk c of tensor t, a task on device d(c) (round robin over the sources):
 *
 *        in_0[c] --\                              /--> out_0[c]
 *        in_1[c] ---+--> reduce (/n for MEAN) ---+---> out_1[c]
 *          ...    --/                              \--> ...
 *        in_n-1[c]                                      out_m-1[c]
 *
 *     memory traffic: n reads + m writes per element, nothing else (an all-reduce of 8 replicas:
 *     16 x S, against 8 x S more per extra pass a hierarchy of copies adds)
 *
 * Chunks: chunk_bytes of one replica's tensor (default 1 MiB); a tensor of at least n x 64 KiB gets
 * at least n chunks, so every worker has work; the devices run the chunks in turn across tensors, so
 * many small tensors spread too. Broadcast is the same with one source (one pass that writes every
 * destination). A promoted integer MEAN (float64 outputs) reduces each chunk into a temporary, then
 * divides it into each output.
 *
 * In place: the task reading in_d[c] is the task writing out_d[c], element for element, so the same
 * handle may be both. Devices that do not share one memory: STARFOLD_ERR_NOT_SUPPORTED ("auto" then
 * skips it).
 */
#include "config.h"

#include "algorithms.h"
#include "common.h"

#define ONE_PASS_CHUNK ((size_t)1 << 20)
#define ONE_PASS_MIN_SPLIT ((size_t)64 << 10)

static starfold_status_t build(starfold_graph_t g, const starfold_algo_options_t *options)
{
    starfold_status_t st = STARFOLD_OK;
    const int n = g->num_inputs, m = g->num_outputs;
    const int home = g->input_devices[0];
    for (int i = 0; i < n + m; i++) {
        const int dev = i < n ? g->input_devices[i] : g->output_devices[i - n];
        if (!starfold_topology_same_memory(g->topology, home, dev))
            return sf_error(STARFOLD_ERR_NOT_SUPPORTED,
                            "one-pass needs every replica in one memory (CPU devices in host memory); devices %d and "
                            "%d of topology '%s' have memories of their own",
                            home, dev, starfold_topology_name(g->topology));
    }
    const int broadcast = g->kind == STARFOLD_COLL_BROADCAST;
    const starfold_op_t acc = broadcast ? STARFOLD_OP_SUM : g->op == STARFOLD_OP_MEAN ? STARFOLD_OP_SUM : g->op;
    const size_t target = options->chunk_bytes ? options->chunk_bytes : ONE_PASS_CHUNK;
    sf_span_t *src = malloc(sizeof *src * (size_t)n), *dst = malloc(sizeof *dst * (size_t)m);
    if (!src || !dst) {
        st = sf_error(STARFOLD_ERR_OUT_OF_MEMORY, "one-pass: out of memory");
        goto out;
    }
    size_t turn = 0; /* round robin of the tasks over the source devices, across tensors */
    for (size_t t = 0; t < g->num_tensors; t++) {
        const size_t count = g->tensors[t].count;
        if (count == 0) continue;
        const starfold_dtype_t dt = g->tensors[t].dtype, out_dt = sf_graph_out_dtype(g, dt);
        const size_t bytes = count * starfold_dtype_size(dt);
        size_t chunks = (bytes + target - 1) / target;
        if (chunks < (size_t)n && bytes >= (size_t)n * ONE_PASS_MIN_SPLIT) chunks = (size_t)n;
        if (chunks > count) chunks = count;
        const int promoted = !broadcast && g->op == STARFOLD_OP_MEAN && out_dt != dt;
        const uint32_t divisor = !broadcast && g->op == STARFOLD_OP_MEAN && !promoted ? (uint32_t)n : 1;
        for (size_t c = 0; c < chunks; c++) {
            const size_t lo = count * c / chunks, len = count * (c + 1) / chunks - lo;
            const int device = g->input_devices[turn++ % (size_t)n];
            for (int s = 0; s < n; s++) src[s] = sf_span(sf_graph_input(g, s, t), lo, len);
            if (!promoted) {
                for (int d = 0; d < m; d++) dst[d] = sf_span(sf_graph_output(g, d, t), lo, len);
                SF_CHECK_GOTO(sf_graph_reduce_on(g, device, acc, src, (size_t)n, dst, (size_t)m, divisor, (int)t, NULL),
                              st, out);
                continue;
            }
            /* TensorFlow's truediv: the integer sum in a temporary, divided into each float64 output. */
            size_t sum;
            SF_CHECK_GOTO(sf_graph_add_temp(g, device, dt, len, (int)t, &sum), st, out);
            const sf_span_t whole = sf_whole(g, sum);
            SF_CHECK_GOTO(sf_graph_reduce_on(g, device, acc, src, (size_t)n, &whole, 1, 1, (int)t, NULL), st, out);
            for (int d = 0; d < m; d++)
                SF_CHECK_GOTO(sf_graph_scale(g, whole, sf_span(sf_graph_output(g, d, t), lo, len), (uint32_t)n, (int)t,
                                             NULL),
                              st, out);
        }
    }
out:
    free(src);
    free(dst);
    return st;
}

const sf_algorithm_t sf_algo_one_pass = {
    .name = "one-pass",
    .description = "devices sharing one memory: each chunk read once from every replica, reduced and written to "
                   "every destination by one task",
    .build = build,
};
