/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * MultiWorkerMirroredStrategy (TensorFlow's CollectiveAllReduce extended): one strategy per process,
 * over every device of its context, whose replicas are in sync with every other process's.
 *
 *     process 0: replicas 0 1 2 3      process 1: replicas 4 5 6 7      num_replicas_in_sync = 8
 *
 * It is a MirroredStrategy of this process's devices (run, merge_call, update, variables: all local)
 * whose reductions go across the processes: every (value, destinations) pair of a batch_reduce_to,
 * a reduce_to or a replica context's all_reduce is all-reduced over every replica of every process
 * by starfold_group_all_reduce() (one call for the whole batch, its tensors in input order), then
 * delivered to the destinations: the value's own devices directly (the all-reduce's outputs), another
 * device or the host by a copy of the first result (TensorFlow's CollectiveAllReduce: all-reduce, then
 * the destinations). Every process must make the same reductions in the same order; the group agrees
 * on each before it runs and fails every process alike otherwise (starfold/mpi.h).
 *
 * CommunicationOptions, per call (the strategy's merged with the call's):
 *   bytes_per_pack   TensorFlow's group_by_size: the batch cut, in order, into packs of whole tensors
 *                    (a pack closed once it holds more than bytes_per_pack bytes), one group
 *                    all-reduce per pack; 0: the whole batch in one (each dtype one fusion buffer)
 *   timeout_seconds  bounds each of those all-reduces, agreement included (0: the group's)
 *   implementation   the lowering across processes: RING the ring of StarPU-MPI sends, NCCL the
 *                    communication library's own tuned all-reduce (MPI's, as NCCL is NVIDIA's), AUTO
 *                    the group's choice (starfold_group_set_lowering(), by default the cost model's)
 *   promote_integer_mean  an integer MEAN summed across processes in its dtype, then divided as float64
 *                    (float32 for 8- and 16-bit integers) on the host (promoted_mean()); the batch is then two reductions, the integers'
 *                    SUM after the rest, in that order everywhere
 *
 * Every group call of one batch carries the batch's fingerprint (batch_fingerprint()), which the
 * agreement compares: a batch that differs only in its last pack fails in the first, on every process.
 *
 * Built with MPI only (the distribute layer's MPI part, compiled without StarPU's flags).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "distribute/distribute.h"
#include "mpi/group_call.h"
#include <starfold/mpi.h>

/* The component of @v on context device @d; -1 when it has none. */
static int component_on(starfold_value_t v, int d)
{
    for (int c = 0; c < v->n; c++)
        if (v->devices[c] == d) return c;
    return -1;
}

/*
 * The component of @v that replica device @d gives to a reduction across processes: its component on
 * @d, else, for a value of one component (on the host, or on another device), that one: TensorFlow's
 * MultiWorkerMirroredStrategy takes a worker's non-distributed tensor as its replicas' value and
 * all-reduces it across the workers. -1 when there is none.
 */
static int contribution(starfold_value_t v, int d)
{
    const int c = component_on(v, d);
    return c >= 0 || v->n != 1 ? c : 0;
}

/* The lowering CommunicationOptions.implementation names (see above); NULL: the group's own. */
static const char *lowering_of(starfold_communication_implementation_t implementation)
{
    switch (implementation) {
    case STARFOLD_COMMUNICATION_RING: return "ring";
    case STARFOLD_COMMUNICATION_NCCL: return "mpi";
    default: return NULL;
    }
}

/* The end of the pack that starts at tensor @from: group_by_size with @bytes_per_pack (0: all). */
static size_t pack_end(const starfold_tensor_desc_t *t, size_t n, size_t from, int64_t bytes_per_pack)
{
    if (bytes_per_pack <= 0) return n;
    size_t bytes = 0, i = from;
    for (; i < n && bytes <= (size_t)bytes_per_pack; i++) bytes += t[i].count * starfold_dtype_size(t[i].dtype);
    return i;
}

/*
 * The fingerprint of a whole reduction across processes (FNV-1a), which every group call it is cut
 * into carries: processes whose batches differ only in a later pack fail in the first call, all of
 * them, instead of one waiting alone for a call the others never make.
 */
static uint64_t batch_fingerprint(starfold_op_t op, size_t n, const starfold_tensor_desc_t *t,
                                  const starfold_communication_options_t *o)
{
    uint64_t h = STARFOLD__FNV_OFFSET;
#define MIX(v) (h = starfold__fnv1a(h, (uint64_t)(v)))
    MIX(op);
    MIX(n);
    MIX(o->bytes_per_pack);
    MIX(o->promote_integer_mean);
    for (size_t i = 0; i < n; i++) {
        MIX(t[i].dtype);
        MIX(t[i].count);
    }
#undef MIX
    return h ? h : 1;
}

/* The group all-reduces of the batch, pack by pack (@in and @out: [device x tensor], @n tensors). */
static starfold_status_t all_reduce_packs(starfold_group_t g, starfold_op_t op, int nd, size_t n,
                                          const starfold_tensor_desc_t *tensors, const starfold_view_t *in,
                                          const starfold_view_t *out, const starfold_communication_options_t *o,
                                          uint64_t batch, const char *fn)
{
    starfold_view_t *pin = calloc((size_t)nd * (n ? n : 1), sizeof *pin);
    starfold_view_t *pout = calloc((size_t)nd * (n ? n : 1), sizeof *pout);
    starfold_status_t st = pin && pout ? STARFOLD_OK : starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (size_t a = 0, b; a < n && st == STARFOLD_OK; a = b) {
        b = pack_end(tensors, n, a, o->bytes_per_pack);
        const size_t np = b - a;
        for (int d = 0; d < nd; d++)
            for (size_t k = 0; k < np; k++) {
                pin[(size_t)d * np + k] = in[(size_t)d * n + a + k];
                pout[(size_t)d * np + k] = out[(size_t)d * n + a + k];
            }
        st = starfold__group_all_reduce_views_with(g, op, np, tensors + a, pin, pout, o->timeout_seconds,
                                                   lowering_of(o->implementation), batch);
    }
    free(pin);
    free(pout);
    return st;
}

/*
 * The tensors whose @promoted flag is @want, in order, as all_reduce_packs() takes them: a batch of
 * promoted integer MEANs and other pairs is two reductions (the integers summed, the rest with @op),
 * in that fixed order on every process, both carrying the batch's fingerprint.
 */
static starfold_status_t all_reduce_part(starfold_group_t g, starfold_op_t op, int nd, size_t n,
                                         const starfold_tensor_desc_t *tensors, const starfold_view_t *in,
                                         const starfold_view_t *out, const unsigned char *promoted, int want,
                                         const starfold_communication_options_t *o, uint64_t batch, const char *fn)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) m += promoted[i] == want;
    if (m == 0) return STARFOLD_OK;
    if (m == n) return all_reduce_packs(g, op, nd, n, tensors, in, out, o, batch, fn);
    starfold_tensor_desc_t *t = malloc(sizeof *t * m);
    starfold_view_t *pin = malloc(sizeof *pin * m * (size_t)nd), *pout = malloc(sizeof *pout * m * (size_t)nd);
    starfold_status_t st = t && pin && pout ? STARFOLD_OK : starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (size_t i = 0, k = 0; st == STARFOLD_OK && i < n; i++) {
        if (promoted[i] != want) continue;
        t[k] = tensors[i];
        for (int d = 0; d < nd; d++) {
            pin[(size_t)d * m + k] = in[(size_t)d * n + i];
            pout[(size_t)d * m + k] = out[(size_t)d * n + i];
        }
        k++;
    }
    if (st == STARFOLD_OK) st = all_reduce_packs(g, op, nd, m, t, pin, pout, o, batch, fn);
    free(t);
    free(pin);
    free(pout);
    return st;
}

/*
 * A promoted integer MEAN's result (TensorFlow's truediv): the integer SUM of every replica of every
 * process, @sum, divided by their number in float64 (float32 for 8- and 16-bit integers, as
 * TensorFlow's truediv), onto @d. The division and the conversion are done on the host, where the
 * group divides every MEAN across processes (group_allreduce.c); the result is then written to each
 * destination.
 */
static starfold_status_t promoted_mean(starfold_group_t g, starfold_context_t ctx, starfold_value_t sum,
                                       const starfold__dest_t *d, const char *fn, starfold_value_t *result)
{
    const size_t count = sum->count, es = starfold_dtype_size(sum->dtype);
    const starfold_dtype_t odt = starfold__dtype_truediv(sum->dtype); /* float32 for 8- and 16-bit integers */
    int replicas = 0;
    for (int r = 0; r < starfold_group_size(g); r++) replicas += starfold_group_num_devices(g, r);
    void *ints = malloc(count ? count * es : 1);
    void *out = malloc(count ? count * starfold_dtype_size(odt) : 1);
    starfold_status_t st = ints && out ? STARFOLD_OK : starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    if (st == STARFOLD_OK && count) st = starfold_value_read(sum, 0, ints, count * es);
    for (size_t k = 0; st == STARFOLD_OK && k < count; k++) {
        const double x = starfold_element_to_double(sum->dtype, ints, k);
        if (odt == STARFOLD_FLOAT32) ((float *)out)[k] = (float)x / (float)replicas;
        else ((double *)out)[k] = x / (double)replicas;
    }
    if (st == STARFOLD_OK)
        st = starfold_value_create(ctx, STARFOLD_VALUE_MIRRORED, d->n, d->devices, odt, count, out, result);
    free(ints);
    free(out);
    return st;
}

/*
 * This process's refusal @st (@why) as its verdict in the group's next agreement, so that the other
 * processes fail with it at once instead of waiting for this one (a refusal wins over whatever
 * collective the others ask for). The one way every path of this file refuses; starfold_last_error()
 * is @why again afterwards.
 */
static void share_refusal(starfold_group_t g, starfold_status_t st, const char *why,
                          const starfold_communication_options_t *o)
{
    char keep[512];
    snprintf(keep, sizeof keep, "%s", why);
    (void)starfold__error(st, "%s", keep);
    const starfold_view_t none = { NULL, 0 };
    starpu_data_handle_t whole = NULL;
    size_t total = 0;
    (void)starfold__group_all_gather_with(g, STARFOLD_FLOAT32, 1, none, 0, 1, o ? o->timeout_seconds : 0, st, &whole,
                                          &total);
    (void)starfold__error(st, "%s", keep);
}

/* What a reduction across processes needs of the strategy (or of a variable it made). */
typedef struct across {
    starfold_group_t group;
    starfold_context_t ctx;
    int n;                 /* this process's replicas = the context's devices, in order */
    const int *devices;
    starfold_cross_device_ops_t ops;
    starfold_topology_t topology;
} across_t;

static starfold_status_t all_reduce_across(const across_t *s, starfold_op_t op, size_t n, const starfold__pair_t *pairs,
                                           const starfold_communication_options_t *o, const char *fn,
                                           starfold_value_t *results)
{
    starfold_group_t g = s->group;
    const int nd = s->n;
    /* Every pair's value has a component on every device of this process (a per-replica value of its
     * replicas, or a mirrored one), or is one component anywhere (see contribution()). Checked here,
     * agreed on by the group: a refusal on one process is a refusal on all. */
    starfold_status_t local = STARFOLD_OK;
    for (size_t i = 0; i < n && local == STARFOLD_OK; i++)
        for (int d = 0; d < nd && local == STARFOLD_OK; d++)
            if (contribution(pairs[i].value, s->devices[d]) < 0)
                local = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                        "%s: pair %zu: the value has no component on device %d: across processes every "
                                        "value holds one per replica of the process (%d), or is one tensor", fn, i,
                                        s->devices[d], nd);
            else if (pairs[i].value->n == 1 && nd > 1 && (op == STARFOLD_OP_SUM || op == STARFOLD_OP_PROD))
                local = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                        "%s: pair %zu: A non-DistributedValues value (one component) cannot be reduced "
                                        "with the given reduce op ReduceOp.%s: it stands for the same tensor on each of "
                                        "this process's %d replicas (TensorFlow refuses too); give each replica a "
                                        "component, or use MEAN", fn, i, op == STARFOLD_OP_SUM ? "SUM" : "PROD", nd);
    starfold_tensor_desc_t *tensors = calloc(n ? n : 1, sizeof *tensors);
    starfold_view_t *in = calloc((size_t)nd * (n ? n : 1), sizeof *in);
    starfold_view_t *out = calloc((size_t)nd * (n ? n : 1), sizeof *out);
    starfold_value_t *all = calloc(n ? n : 1, sizeof *all);
    size_t *counts = calloc(n ? n : 1, sizeof *counts);
    /* promote_integer_mean: an integer MEAN is summed across processes, then divided as float64. */
    unsigned char *promoted = calloc(n ? n : 1, 1);
    starfold_status_t st = local;
    for (size_t i = 0; promoted && i < n; i++)
        promoted[i] = op == STARFOLD_OP_MEAN && o->promote_integer_mean &&
                      starfold__dtype_integer(pairs[i].value->dtype);
    if (!tensors || !in || !out || !all || !counts || !promoted) st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    /*
     * The all-reduce's outputs: a mirrored value per pair over this process's devices, in the arena
     * (one block per device and dtype); inputs and outputs go to the group as views, so values stay
     * in the arena (no copy) as on one process.
     */
    for (size_t i = 0; i < n && st == STARFOLD_OK; i++) {
        const starfold_value_t v = pairs[i].value;
        tensors[i] = (starfold_tensor_desc_t){ v->dtype, v->count };
        starfold_view_t vv[STARFOLD_MAX_DEVICES];
        starfold__value_views(v, vv);
        for (int d = 0; d < nd; d++) in[(size_t)d * n + i] = vv[contribution(v, s->devices[d])];
    }
    for (int dt = 0; dt < STARFOLD_DTYPE_COUNT && st == STARFOLD_OK; dt++) {
        size_t nk = 0;
        for (size_t i = 0; i < n; i++)
            if (tensors[i].dtype == (starfold_dtype_t)dt) counts[nk++] = tensors[i].count;
        if (!nk) continue;
        starfold_value_t *block = calloc(nk, sizeof *block);
        if (!block) st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        else st = starfold__values_alloc_block(s->ctx, STARFOLD_VALUE_MIRRORED, nd, s->devices, (starfold_dtype_t)dt, nk,
                                               counts, NULL, block, NULL);
        for (size_t i = 0, j = 0; st == STARFOLD_OK && i < n; i++)
            if (tensors[i].dtype == (starfold_dtype_t)dt) all[i] = block[j++];
        free(block);
    }
    for (size_t i = 0; i < n && st == STARFOLD_OK; i++) {
        starfold_view_t rv[STARFOLD_MAX_DEVICES];
        starfold__value_views(all[i], rv);
        for (int d = 0; d < nd; d++) out[(size_t)d * n + i] = rv[d];
    }
    /* A local failure still takes part (with a refusal) so that no process waits for this one. */
    if (st != STARFOLD_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", starfold_last_error());
        share_refusal(g, st, why, o);
    } else {
        const uint64_t batch = batch_fingerprint(op, n, tensors, o);
        st = all_reduce_part(g, op, nd, n, tensors, in, out, promoted, 0, o, batch, fn);
        if (st == STARFOLD_OK) st = all_reduce_part(g, STARFOLD_OP_SUM, nd, n, tensors, in, out, promoted, 1, o, batch, fn);
        if (st != STARFOLD_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", starfold_last_error());
            st = starfold__error(st, "%s: %s", fn, why);
        }
    }
    /* Deliver: to the value's devices, the all-reduce itself; elsewhere, a copy of the first result. */
    size_t delivered = 0;
    for (; delivered < n && st == STARFOLD_OK; delivered++) {
        const size_t i = delivered;
        const starfold__dest_t *d = &pairs[i].dest;
        results[i] = NULL;
        if (promoted[i]) {
            st = promoted_mean(g, s->ctx, all[i], d, fn, &results[i]);
        } else if (!d->host && d->n == nd && !memcmp(d->devices, s->devices, sizeof(int) * (size_t)nd)) {
            results[i] = all[i];
            all[i] = NULL;
        } else {
            st = starfold__ops_broadcast(s->ops, s->topology, all[i], d, fn, &results[i]);
            if (st == STARFOLD_OK) st = starfold_value_wait(results[i]);
        }
    }
    /* A failure leaves the caller no result: those delivered before it go too. */
    for (size_t i = 0; st != STARFOLD_OK && i < delivered; i++) {
        starfold_value_destroy(results[i]);
        results[i] = NULL;
    }
    if (all)
        for (size_t i = 0; i < n; i++) starfold_value_destroy(all[i]);
    free(tensors);
    free(in);
    free(out);
    free(all);
    free(counts);
    free(promoted);
    return st;
}

static starfold_status_t cross_process(struct starfold_strategy *s, starfold_op_t op, size_t n,
                                       const starfold__pair_t *pairs, const starfold_communication_options_t *o,
                                       const char *fn, starfold_value_t *results)
{
    const across_t a = { s->group, s->ctx, s->n, s->devices, s->ops, s->topology };
    return all_reduce_across(&a, op, n, pairs, o, fn, results);
}

/* A sync-on-read variable's cross-replica read: its copies (one per replica of this process) reduced
 * over every process, with the options its strategy had when it was made. */
static starfold_status_t cross_reduce(const starfold__variable_t *info, starfold_value_t var, starfold_op_t op,
                                      const starfold__dest_t *dest, const char *fn, starfold_value_t *result)
{
    const across_t a = { info->group, var->ctx, var->n, var->devices, info->ops, info->topology };
    const starfold__pair_t p = { .value = var, .dest = *dest };
    return all_reduce_across(&a, op, 1, &p, &info->options, fn, result);
}

/* A refusal the other processes see in the agreement of their next collective (share_refusal()). */
static void cross_refuse(struct starfold_strategy *s, starfold_status_t st, const char *why,
                         const starfold_communication_options_t *o)
{
    share_refusal(s->group, st, why, o);
}

/*
 * The gathers across processes (s->cross_gather, distribute.h):
 *
 *   process 0: replica 0 [a0 a1]  replica 1 [b0]     process 1: replica 2 []  replica 3 [d0 d1]
 *   1. local   a graph gathers this process's parts on its device 0       [a0 a1 b0]   [d0 d1]
 *   2. across  the group's all-gather (MPI_Allgatherv in a StarPU task)   [a0 a1 b0 d0 d1] on both
 *   3. deliver a copy of the whole onto the destinations (the ops' broadcast)
 */
static starfold_status_t cross_gather(struct starfold_strategy *s, starfold_status_t st, starfold_dtype_t dtype,
                                      size_t match, const starfold_view_t *views, const size_t *counts, int divisor,
                                      const starfold__dest_t *dest, const starfold_communication_options_t *o,
                                      const char *fn, starfold_value_t *result)
{
    *result = NULL;
    size_t mine = 0;
    for (int c = 0; c < s->n; c++) mine += counts[c];
    starfold_value_t local = NULL, whole_value = NULL;
    starfold__dest_t here = { .n = 1, .ctx = s->ctx };
    here.devices[0] = s->devices[0];
    if (st == STARFOLD_OK && mine)
        st = starfold__gather_parts(s->ops, s->topology, s->ctx, dtype, s->n, s->devices, views, counts, &here, fn, &local);
    if (st == STARFOLD_OK && local) st = starfold_value_wait(local);
    const starfold_view_t part = local ? starfold__value_view(local, 0) : (starfold_view_t){ NULL, 0 };
    /* A width (@match) that differs between processes fails every one of them in the agreement. */
    starpu_data_handle_t whole = NULL;
    size_t total = 0;
    st = starfold__group_all_gather_with(s->group, dtype, match, part, mine, divisor, o->timeout_seconds, st, &whole,
                                         &total);
    if (st == STARFOLD_OK && whole)
        st = starfold_value_wrap(s->ctx, STARFOLD_VALUE_MIRRORED, 1, &s->devices[0], &whole, dtype, &whole_value);
    if (st == STARFOLD_OK && whole_value) st = starfold__ops_broadcast(s->ops, s->topology, whole_value, dest, fn, result);
    else if (st == STARFOLD_OK)
        st = starfold__value_alloc(s->ctx, STARFOLD_VALUE_MIRRORED, dest->n, dest->devices, dtype, 0, result);
    if (st == STARFOLD_OK) st = starfold_value_wait(*result);
    if (st != STARFOLD_OK) {
        starfold_value_destroy(*result);
        *result = NULL;
    }
    starfold_value_destroy(whole_value);
    starfold_vector_destroy(s->ctx, whole); /* after the copies that read it (unregistering waits) */
    starfold_value_destroy(local);
    return st;
}

/*
 * A new variable's initial value: rank 0's on every process, every component (TensorFlow's
 * collective strategy broadcasts it from the chief, so that processes that drew different random
 * initial values still train one model). The variable's components are its handles of their own, one
 * per device of the context in device order: the group's device-major layout of one tensor.
 */
static starfold_status_t cross_init(starfold_strategy_t s, starfold_value_t var, const char *fn)
{
    const int nd = starfold_context_num_devices(s->ctx);
    starpu_data_handle_t *h = calloc((size_t)(nd > 0 ? nd : 1), sizeof *h);
    starfold_status_t st = h ? STARFOLD_OK : starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (int c = 0; st == STARFOLD_OK && c < nd; c++) {
        if (var->n != nd || var->devices[c] != c)
            st = starfold__error(STARFOLD_ERR_INTERNAL, "%s: a variable's components are not the context's devices", fn);
        else
            h[c] = starfold__value_handle(var, c);
    }
    const starfold_tensor_desc_t t = { var->dtype, var->count };
    /* A refusal here still takes part in the broadcast's agreement: every process fails together. */
    const starfold_status_t bc = starfold_group_broadcast(s->group, 0, st == STARFOLD_OK ? 1 : 0, &t, h, h);
    if (st == STARFOLD_OK) st = bc;
    free(h);
    return st;
}

STARFOLD_API starfold_status_t starfold_multi_worker_mirrored_strategy_create(
    starfold_group_t group, const starfold_communication_options_t *options, starfold_strategy_t *strategy)
{
    static const char fn[] = "starfold_multi_worker_mirrored_strategy_create";
    if (!group || !strategy)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, !group ? "group" : "strategy");
    starfold_context_t ctx = starfold_group_context(group);
    starfold_strategy_t s = NULL;
    starfold_status_t st = starfold_mirrored_strategy_create(ctx, NULL, 0, NULL, NULL, &s);
    if (st != STARFOLD_OK) return st;
    if (options && (st = starfold_strategy_set_communication_options(s, options)) != STARFOLD_OK) {
        starfold_strategy_destroy(s);
        return st;
    }
    s->kind = STARFOLD_STRATEGY_MULTI_WORKER_MIRRORED;
    s->group = group;
    s->cross_process = cross_process;
    s->cross_gather = cross_gather;
    s->cross_refuse = cross_refuse;
    s->cross_reduce = cross_reduce;
    s->cross_init = cross_init;
    for (int r = 0; r < starfold_group_rank(group); r++) s->replica_offset += starfold_group_num_devices(group, r);
    for (int r = 0; r < starfold_group_size(group); r++) s->total_replicas += starfold_group_num_devices(group, r);
    *strategy = s;
    return STARFOLD_OK;
}
