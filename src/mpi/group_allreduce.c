/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * All-reduce across the ranks of a process group (starfold_group_all_reduce()): one call, in four
 * steps, each rank over its own devices.
 *
 *   1. agree        every rank tells every other one what it is about to do (group_agree.c):
 *                   differences fail every rank before anything is submitted; a rank that does not
 *                   answer within timeout_seconds fails every rank that waits, named
 *   2. local reduce a graph over this rank's devices reduces every tensor to a leader vector on
 *                   device 0 (one-pass where the devices share one memory, else reduce-to-one; MEAN
 *                   is summed here)
 *   3. across ranks the lowering (group_lowering.c): "mpi" is one StarPU task per dtype calling MPI's
 *                   own all-reduce on the leader vector (group_mpi_task.c); the others run a graph
 *                   compiled on the rank topology, its cross-rank edges StarPU-MPI sends and
 *                   receives (rank_graph.c), into a second set of leader vectors
 *   4. local bcast  a graph copies each leader vector to this rank's outputs
 *
 * One device on the rank, the MPI lowering, each dtype's inputs and outputs one run of a vector each:
 * steps 2 and 4 have nothing to do, and the MPI tasks go from the inputs straight into the outputs
 * (the direct plan, group_plan.h).
 *
 *        dev0 dev1 dev2          dev0 dev1              (rank 0, rank 1)
 *          \   |   /               \  /
 *          leader0    <== 3 ==>    leader1
 *          /   |   \               /  \
 *        out0 out1 out2          out0 out1
 *
 * One device with tensors that are not one run (each its own vector, as a StarPU application
 * registers them), or several in host memory whose tensors are not buckets, the MPI lowering: one
 * task per dtype reduces them into a staging buffer, calls MPI and copies the result out (the packed
 * plan, group_pack.c), instead of graphs of copies and reductions in and out of a leader.
 *
 * Several devices, the MPI lowering, device 0's outputs one run per dtype: the MPI tasks go from the
 * leader into device 0's outputs, and step 4 copies those to the other devices only (the relay plan:
 * no copy back to device 0, and MPI out of place, which Open MPI's MPI_Iallreduce does 20-40 %
 * faster than in place on this machine):
 *
 *        dev0 dev1 dev2
 *          \   |   /
 *          leader0   --MPI-->  out0 --> out1, out2
 *
 * Which of these a call takes is decided from its views alone (group_layout.c).
 *
 * What a call prepares (lowering, graphs, leader vectors) is a plan (group_plan.h): made, run and
 * freed by each call here, made once and run every start by a persistent all-reduce
 * (group_persistent.c). StarPU's sequential consistency on the leader vectors chains the steps.
 */
#include "config.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "base/common.h"
#include "mpi/group.h"
#include "mpi/group_call.h"
#include "mpi/group_plan.h"
#include "exec/partitions.h"

/* ------------------------------------------------------------------------------------------------
 * Steps 2 and 4: the local graphs
 */

static starfold_status_t local_topology(starfold_group_t g)
{
    if (g->local) return STARFOLD_OK;
    return starfold_context_topology(g->ctx, &g->local);
}

/* The local reduce (every device to device 0) or broadcast (device 0 to every device, or with
 * @others_only to devices 1 .. n-1: the relay plan's, where device 0 has its result already). */
static starfold_status_t compile_local(starfold_group_t g, starfold_collective_t kind, starfold_op_t op, size_t nt,
                                       const starfold_tensor_desc_t *tensors, int others_only, starfold_graph_t *graph)
{
    const int n = starfold_context_num_devices(g->ctx);
    int devices[STARFOLD_MAX_DEVICES], zero = 0;
    for (int d = 0; d < n; d++) devices[d] = d;
    starfold_collective_desc_t desc = { .kind = kind, .op = op, .num_tensors = nt, .tensors = tensors };
    if (kind == STARFOLD_COLL_REDUCE) {
        desc.num_sources = n, desc.sources = devices;
        desc.num_destinations = 1, desc.destinations = &zero;
    } else {
        desc.num_sources = 1, desc.sources = &zero;
        desc.num_destinations = others_only ? n - 1 : n, desc.destinations = devices + (others_only ? 1 : 0);
    }
    /* Devices sharing one memory: one-pass, whose segmented tasks take a run of small tensors at once
     * (1,000 x 4 KiB: a few tasks instead of 1,000 copies in and 1,000 out); else reduce-to-one. */
    const starfold_status_t st = starfold_graph_compile(g->local, "one-pass", &desc, NULL, graph);
    if (st != STARFOLD_ERR_NOT_SUPPORTED) return st;
    return starfold_graph_compile(g->local, "reduce-to-one", &desc, NULL, graph);
}

static int cpu_worker_present(void)
{
    return starpu_worker_get_count_by_type(STARPU_CPU_WORKER) > 0;
}

/* The local verdict: arguments of this rank alone. */
static starfold_status_t check_args(const char *fn, starfold_group_t g, starfold_op_t op, size_t nt,
                                    const starfold_tensor_desc_t *tensors, const void *inputs, const void *outputs)
{
    if ((int)op < 0 || (int)op >= STARFOLD_OP_COUNT)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: unknown reduce op %d", fn, (int)op);
    if (nt == 0 || !tensors || !inputs || !outputs)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s", fn,
                               nt == 0 ? "no tensors" : "NULL tensors, inputs or outputs");
    for (size_t t = 0; t < nt; t++)
        if ((int)tensors[t].dtype < 0 || (int)tensors[t].dtype >= STARFOLD_DTYPE_COUNT)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: tensor %zu: unknown dtype %d", fn, t,
                                   (int)tensors[t].dtype);
    if (!cpu_worker_present())
        return starfold__error(STARFOLD_ERR_NOT_SUPPORTED,
                               "%s: the MPI step runs on a CPU worker and StarPU has none here (set STARPU_NCPU >= 1)",
                               fn);
    return local_topology(g);
}

/* ------------------------------------------------------------------------------------------------
 * The collective
 */

static starfold_status_t make_leaders(starfold_group_t g, size_t nt, const starfold_tensor_desc_t *tensors,
                                      starfold__leaders_t *l)
{
    memset(l, 0, sizeof *l);
    if (!(l->offset = calloc(nt, sizeof *l->offset)))
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_group_all_reduce: out of memory");
    for (size_t t = 0; t < nt; t++) {
        l->offset[t] = l->total[tensors[t].dtype];
        l->total[tensors[t].dtype] += tensors[t].count;
    }
    for (int dt = 0; dt < STARFOLD_DTYPE_COUNT; dt++) {
        if (!l->total[dt]) continue;
        const starfold_status_t st = starfold_vector_create(g->ctx, 0, (starfold_dtype_t)dt, l->total[dt], &l->vec[dt]);
        if (st != STARFOLD_OK) return st;
    }
    return STARFOLD_OK;
}

static void free_leaders(starfold_group_t g, starfold__leaders_t *l)
{
    for (int dt = 0; dt < STARFOLD_DTYPE_COUNT; dt++) starfold_vector_destroy(g->ctx, l->vec[dt]); /* waits for tasks */
    free(l->offset);
}

/* The leaders' views of the tensors (by offset in their dtype's vector). */
static starfold_status_t make_leader_views(size_t nt, const starfold_tensor_desc_t *tensors, const starfold__leaders_t *l,
                                           starfold_view_t **lead)
{
    *lead = calloc(nt, sizeof **lead);
    if (!*lead) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_group_all_reduce: out of memory");
    for (size_t t = 0; t < nt; t++) (*lead)[t] = (starfold_view_t){ l->vec[tensors[t].dtype], l->offset[t] };
    return STARFOLD_OK;
}

/* Handles as whole views (NULL for NULL handles); NULL when out of memory. */
starfold_view_t *starfold__group_whole_views(size_t n, const starpu_data_handle_t *handles)
{
    starfold_view_t *v = calloc(n ? n : 1, sizeof *v);
    for (size_t k = 0; v && handles && k < n; k++) v[k] = (starfold_view_t){ handles[k], 0 };
    return v;
}

/*
 * Step 3 as a graph across ranks: runs the graph from the leaders into the results, then MEAN's
 * division there. It does not wait for the local reduce: the graph partitions the leaders with
 * submitted partitions, which StarPU orders after the reduce's tasks, so a rank whose own tasks hang
 * still reaches the graph's polled wait and times out like the others. Every rank runs the same
 * graph, its tags numbered from the collective's sequence number. A failure here cannot be undone
 * across ranks: the group is broken.
 */
static starfold_status_t cross_ranks(starfold_group_t g, starfold_graph_t across, starfold_op_t op, const starfold__leaders_t *in,
                                     const starfold__leaders_t *out, int64_t sequence, int *abandoned)
{
    starfold_status_t st = STARFOLD_OK;
    starpu_data_handle_t ins[STARFOLD_DTYPE_COUNT], outs[STARFOLD_DTYPE_COUNT];
    size_t nt = 0;
    for (int dt = 0; dt < STARFOLD_DTYPE_COUNT; dt++)
        if (in->total[dt]) ins[nt] = in->vec[dt], outs[nt++] = out->vec[dt];
    /* Even when the local reduce failed, this rank's sends and receives must happen: the other
     * ranks are waiting for them. The values are then wrong, and the status says so. */
    const starfold_status_t run = starfold__rank_graph_run(g, across, ins, outs, (sequence & 0xffffff) << 24);
    if (run != STARFOLD_OK) g->broken = 1;
    if (run == STARFOLD_ERR_TIMEOUT) *abandoned = 1; /* the leaders are still StarPU-MPI's: never freed */
    if (st == STARFOLD_OK) st = run;
    for (int dt = 0; st == STARFOLD_OK && op == STARFOLD_OP_MEAN && g->total_devices > 1 && dt < STARFOLD_DTYPE_COUNT;
         dt++) {
        if (!out->total[dt]) continue;
        if (starfold__acquire_main(out->vec[dt], STARPU_RW) != 0) {
            st = starfold__error(STARFOLD_ERR_RUNTIME, "starfold_group_all_reduce: cannot acquire the results");
            break;
        }
        starfold__group_divide((void *)starpu_vector_get_local_ptr(out->vec[dt]), (starfold_dtype_t)dt, out->total[dt], g->total_devices);
        starpu_data_release_on_node(out->vec[dt], STARPU_MAIN_RAM);
    }
    return st;
}

/*
 * Waits for one of the collective's requests within the group's timeout_seconds (0 or infinity: for
 * ever): a task of this rank that hangs (a kernel, or the MPI task behind it) must not hold the
 * caller past the limit the other ranks keep. On STARFOLD_ERR_TIMEOUT the group is broken and
 * *@abandoned set: the request and the leaders stay StarPU's, never freed.
 */
static starfold_status_t wait_within(starfold_group_t g, starfold_request_t r, int *abandoned)
{
    const double limit = g->timeout_seconds;
    const int limited = limit > 0 && isfinite(limit);
    starfold__stall_t stall;
    starfold__group_stall_begin(g, &stall, "its tasks");
    /* In slices, so that the stall warning comes in time (a slice returns as soon as the request is done). */
    const double slice = 0.25;
    starfold_status_t st;
    for (;;) {
        const double left = limited ? limit - (starfold__now_s() - stall.t0) : slice;
        st = starfold_request_wait_timeout(r, left < slice ? (left > 0 ? left : 0) : slice);
        if (st != STARFOLD_ERR_TIMEOUT) return st;
        if (limited && starfold__now_s() - stall.t0 >= limit) break;
        starfold__group_stall_poll(g, &stall);
    }
    g->broken = 1;
    *abandoned = 1;
    char why[320];
    return starfold__error(STARFOLD_ERR_TIMEOUT, "starfold_group_all_reduce: rank %d's tasks did not complete within "
                           "timeout_seconds (%g s)%s; the group is broken", g->rank, limit,
                           starfold__group_stall_suffix(g, why, sizeof why));
}

/*
 * Everything this rank prepares alone, before the agreement. @st: the caller's verdict so far; the
 * result is this rank's verdict, which the agreement shares (a graph that does not compile, leaders
 * that cannot be allocated: every rank fails together). MEAN crosses ranks as SUM, divided after.
 */
starfold_status_t starfold__group_plan_make(const char *fn, starfold_group_t g, starfold_op_t op, size_t nt,
                                            const starfold_tensor_desc_t *tensors, const starfold_view_t *inputs,
                                            const starfold_view_t *outputs, starfold_status_t st, starfold__plan_t *p)
{
    memset(p, 0, sizeof *p);
    *p = (starfold__plan_t){ .op = op, .nt = nt, .tensors = tensors, .inputs = inputs, .outputs = outputs, .lowering = SF_LOWER_MPI };
    if (st == STARFOLD_OK) st = check_args(fn, g, op, nt, tensors, inputs, outputs);
    const starfold_op_t local_op = op == STARFOLD_OP_MEAN ? STARFOLD_OP_SUM : op;
    size_t totals[STARFOLD_DTYPE_COUNT] = { 0 };
    for (size_t t = 0; st == STARFOLD_OK && t < nt; t++) totals[tensors[t].dtype] += tensors[t].count;
    if (st == STARFOLD_OK) st = starfold__group_lower(g, local_op, totals, &p->lowering, &p->across);
    int packed = 0;
    if (st == STARFOLD_OK) st = starfold__group_layout(fn, g, p, &packed);
    if (st == STARFOLD_OK && p->lowering == SF_LOWER_MPI) st = starfold__group_cuts(g, p);
    if (st != STARFOLD_OK || p->direct) return st;
    if (packed) return starfold__group_pack_make(g, p);
    const int graph_lowering = p->lowering != SF_LOWER_MPI;
    if (st == STARFOLD_OK) st = compile_local(g, STARFOLD_COLL_REDUCE, local_op, nt, tensors, 0, &p->reduce);
    if (st == STARFOLD_OK) st = compile_local(g, STARFOLD_COLL_BROADCAST, local_op, nt, tensors, p->relay, &p->bcast);
    if (st == STARFOLD_OK) st = make_leaders(g, nt, tensors, &p->leaders);
    if (st == STARFOLD_OK && graph_lowering) st = make_leaders(g, nt, tensors, &p->results);
    if (st == STARFOLD_OK) st = make_leader_views(nt, tensors, &p->leaders, &p->lead);
    if (st == STARFOLD_OK && !p->relay)
        st = make_leader_views(nt, tensors, graph_lowering ? &p->results : &p->leaders, &p->lead2);
    for (int dt = 0; st == STARFOLD_OK && !graph_lowering && dt < STARFOLD_DTYPE_COUNT; dt++) {
        p->runs.in[dt] = p->leaders.vec[dt];
        p->runs.in_offset[dt] = 0;
        if (!p->relay) p->runs.out[dt] = p->leaders.vec[dt], p->runs.out_offset[dt] = 0; /* in place on the leaders */
        p->runs.count[dt] = p->leaders.total[dt];
    }
    return st;
}

/* The broadcast's sources and destinations: the leaders to every device, or (relay) device 0's
 * outputs to the others'. */
static const starfold_view_t *bcast_inputs(const starfold__plan_t *p) { return p->relay ? p->outputs : p->lead2; }
static const starfold_view_t *bcast_outputs(const starfold__plan_t *p) { return p->relay ? p->outputs + p->nt : p->outputs; }

void starfold__group_plan_free(starfold_group_t g, starfold__plan_t *p)
{
    if (!p->abandoned) {
        free_leaders(g, &p->leaders);
        free_leaders(g, &p->results);
    } else {
        free(p->leaders.offset);
        free(p->results.offset);
    }
    starfold__group_pack_free(p);
    for (int dt = 0; !p->abandoned && dt < STARFOLD_DTYPE_COUNT; dt++) free(p->cuts[dt]); /* else the tasks' */
    free(p->lead);
    free(p->lead2);
    starfold_graph_destroy(p->reduce);
    starfold_graph_destroy(p->bcast);
    starfold_graph_destroy(p->across);
    memset(p, 0, sizeof *p);
}

/*
 * Steps 1-4 of one run of @p: agree, local reduce, across ranks, local broadcast; a failure before
 * step 3 is agreed on again (round 2) so that no rank crosses ranks alone. A graph lowering writes
 * the results into a second set of leader vectors (the graph's outputs differ from its inputs),
 * which the broadcast reads. @st: this rank's verdict (starfold__group_plan_make()'s).
 */
starfold_status_t starfold__group_plan_run(const char *fn, starfold_group_t group, starfold__plan_t *p, starfold_status_t st)
{
    /* The MPI tasks' arguments and shared status, on the heap: after a timeout the tasks may still
     * run when this call has returned (the block is then never freed, like the leaders). Made before
     * the agreement, so that failing to make it is this rank's verdict there. */
    struct mpi_tasks {
        starfold__mpi_task_arg_t args[STARFOLD_DTYPE_COUNT];
        int status;
    } *mt = calloc(1, sizeof *mt);
    if (!mt && st == STARFOLD_OK) st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    const starfold__agree_what_t what = { SF_GROUP_ALL_REDUCE, p->op, p->nt, p->tensors, p->lowering, 0,
                                          group->call_batch };
    st = starfold__group_agree(fn, group, &what, st, NULL);
    if (st != STARFOLD_OK) {
        free(mt);
        return st;
    }
    const int graph_lowering = p->lowering != SF_LOWER_MPI;
    starfold_request_t r1 = NULL, r2 = NULL;
    const int64_t sequence = group->sequence;
    /* Round 2 confirms the local reduce went in everywhere; the direct and packed plans have none,
     * and round 1 has said all there is to say. */
    const int local = !p->direct && !p->pack;
    if (local) {
        st = starfold_submit_views(group->ctx, p->reduce, p->inputs, p->lead, &r1);
        st = starfold__group_agree_submitted(fn, group, p->lowering, st);
    }
    group->sequence++;
    if (st == STARFOLD_OK) {
        group->last_lowering = p->lowering;
        group->last_plan = p->direct ? "direct" : p->pack ? "packed" : p->relay ? "relay" : "leaders";
    }
    int abandoned = 0;
    if (st == STARFOLD_OK && p->pack) {
        st = starfold__group_pack_submit(group, p, &mt->status);
        /* The token is in every MPI task of the group: free, they are all done. */
        if (st == STARFOLD_OK) st = starfold__group_mpi_done(fn, group, &group->token, 1, &mt->status, "MPI_Allreduce", &abandoned);
    } else if (st == STARFOLD_OK && !graph_lowering) {
        st = starfold__group_mpi_submit(group, p->op, &p->runs, p->cuts, p->ncuts, mt->args, &mt->status);
        if (st == STARFOLD_OK)
            st = starfold__group_mpi_done(fn, group, p->runs.out, STARFOLD_DTYPE_COUNT, &mt->status, "MPI_Allreduce", &abandoned);
    }
    if (st == STARFOLD_OK && graph_lowering)
        st = cross_ranks(group, p->across, p->op, &p->leaders, &p->results, sequence, &abandoned);
    if (st == STARFOLD_OK && local)
        st = starfold_submit_views(group->ctx, p->bcast, bcast_inputs(p), bcast_outputs(p), &r2);
    /* Abandoned (a timeout across ranks): the local reduce may be what hangs; it is left to StarPU,
     * its request never waited for nor freed, like the leaders it writes. */
    const starfold_status_t w1 = r1 && !abandoned ? wait_within(group, r1, &abandoned) : STARFOLD_OK;
    const starfold_status_t w2 = r2 && !abandoned ? wait_within(group, r2, &abandoned) : STARFOLD_OK;
    if (!abandoned) starfold_request_destroy(r1);
    if (!abandoned) starfold_request_destroy(r2);
    if (!abandoned) free(mt);
    if (abandoned) p->abandoned = 1;
    if (st == STARFOLD_OK && w1 != STARFOLD_OK) st = w1;
    if (st == STARFOLD_OK && w2 != STARFOLD_OK) st = w2;
    return st;
}

/*
 * The collective over views (inputs and outputs num_devices x num_tensors, slot-major). @st is this
 * rank's verdict on its arguments so far: a refusal still takes part in the agreement, so that every
 * rank fails together.
 */
static starfold_status_t group_all_reduce(const char *fn, starfold_group_t group, starfold_op_t op, size_t num_tensors,
                                          const starfold_tensor_desc_t *tensors, const starfold_view_t *inputs,
                                          const starfold_view_t *outputs, starfold_status_t st)
{
    starfold__plan_t p;
    st = starfold__group_plan_make(fn, group, op, num_tensors, tensors, inputs, outputs, st, &p);
    st = starfold__group_plan_run(fn, group, &p, st);
    starfold__group_plan_free(group, &p);
    return st;
}

starfold_status_t starfold__group_all_reduce_run(const char *fn, starfold_group_t group, starfold_op_t op,
                                                 size_t num_tensors, const starfold_tensor_desc_t *tensors,
                                                 const starfold_view_t *inputs, const starfold_view_t *outputs,
                                                 starfold_status_t st)
{
    return group_all_reduce(fn, group, op, num_tensors, tensors, inputs, outputs, st);
}

/*
 * A group that can take part: not NULL, not broken (then nothing is exchanged: every call fails at
 * once). Its asynchronous collectives finish first: the group runs one collective at a time, in the
 * order they were called.
 */
starfold_status_t starfold__group_usable(const char *fn, starfold_group_t group)
{
    if (!group) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL group", fn);
    starfold__group_async_quiesce(group);
    if (group->broken)
        return starfold__error(STARFOLD_ERR_RUNTIME, "%s: the group is broken (an earlier collective timed out or "
                               "failed between ranks): destroy it", fn);
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_group_all_reduce(starfold_group_t group, starfold_op_t op, size_t num_tensors,
                                                         const starfold_tensor_desc_t *tensors,
                                                         const starpu_data_handle_t *inputs,
                                                         const starpu_data_handle_t *outputs)
{
    static const char fn[] = "starfold_group_all_reduce";
    starfold_status_t st = starfold__group_usable(fn, group);
    if (st != STARFOLD_OK) return st;
    const size_t n = (size_t)starfold_context_num_devices(group->ctx) * num_tensors;
    starfold_view_t *in = inputs ? starfold__group_whole_views(n, inputs) : NULL, *out = outputs ? starfold__group_whole_views(n, outputs) : NULL;
    if ((inputs && !in) || (outputs && !out)) st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    st = group_all_reduce(fn, group, op, num_tensors, tensors, in, out, st);
    free(in);
    free(out);
    return st;
}

STARFOLD_API starfold_status_t starfold_group_all_reduce_views(starfold_group_t group, starfold_op_t op,
                                                               size_t num_tensors, const starfold_tensor_desc_t *tensors,
                                                               const starfold_view_t *inputs,
                                                               const starfold_view_t *outputs)
{
    static const char fn[] = "starfold_group_all_reduce_views";
    const starfold_status_t st = starfold__group_usable(fn, group);
    if (st != STARFOLD_OK) return st;
    return group_all_reduce(fn, group, op, num_tensors, tensors, inputs, outputs, STARFOLD_OK);
}

starfold_status_t starfold__group_all_reduce_views_with(starfold_group_t group, starfold_op_t op, size_t num_tensors,
                                                        const starfold_tensor_desc_t *tensors,
                                                        const starfold_view_t *inputs, const starfold_view_t *outputs,
                                                        double timeout_seconds, const char *lowering, uint64_t batch)
{
    static const char fn[] = "starfold_group_all_reduce_views";
    starfold_status_t st = starfold__group_usable(fn, group);
    if (st != STARFOLD_OK) return st;
    const double timeout = group->timeout_seconds;
    const int chosen = group->lowering;
    if (timeout_seconds > 0) group->timeout_seconds = timeout_seconds;
    /* An unknown name is this rank's refusal, shared with the others by the agreement. */
    if (lowering) st = starfold_group_set_lowering(group, lowering);
    group->call_batch = batch;
    st = group_all_reduce(fn, group, op, num_tensors, tensors, inputs, outputs, st);
    group->call_batch = 0;
    group->timeout_seconds = timeout;
    group->lowering = chosen;
    return st;
}

void starfold__group_collectives_wait(starfold_group_t g)
{
    if (g->token) {
        starpu_data_acquire(g->token, STARPU_R); /* after every MPI task of the group */
        starpu_data_release(g->token);
    }
}

void starfold__group_collectives_release(starfold_group_t g)
{
    /* A broken group may have a packed MPI task still to run on the staging buffer: left to it. */
    if (!g->broken) free(g->stage);
    g->stage = NULL;
    g->stage_bytes = 0;
    /* A broken group may have an MPI task waiting for a rank that is gone: do not wait for it. */
    if (g->token && g->broken) starpu_data_unregister_submit(g->token);
    else if (g->token) starpu_data_unregister(g->token);
    g->token = NULL;
    starfold_topology_destroy(g->local);
    g->local = NULL;
    starfold_topology_destroy(g->ranks);
    g->ranks = NULL;
}

STARFOLD_API int starfold_group_is_broken(starfold_group_t group) { return group ? group->broken : 1; }

STARFOLD_API void starfold_group_abort(starfold_group_t group, int code)
{
    MPI_Abort(group ? group->comm : MPI_COMM_WORLD, code);
}
