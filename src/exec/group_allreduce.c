/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * All-reduce across the ranks of a process group (starfold_group_all_reduce()): the leader lowering.
 *
 *   rank r:   devices 0 .. n_r-1 hold the replicas
 *
 *   1. agree        every rank tells every other one (point to point, on the group's own
 *                   communicator, tag = the collective's sequence number) what it is about to do:
 *                   its verdict on its own arguments, the sequence number and a fingerprint of
 *                   (op, tensors). Differences fail every rank before anything is submitted; a rank
 *                   that does not answer within timeout_seconds fails every rank that waits, named.
 *   2. local reduce a graph over this rank's devices reduces every tensor to a leader vector on
 *                   device 0 (reduce-to-one; MEAN is summed here)
 *   3. across ranks one StarPU task per dtype on a CPU worker calls MPI's all-reduce on the leader
 *                   vector of that dtype (every tensor of the dtype one after another: a fusion
 *                   buffer), in place, on the group's data communicator; MEAN divides by every
 *                   replica of every rank there. A token handle in STARPU_RW orders these tasks as
 *                   they were submitted, so every rank calls its MPI collectives in the same order
 *                   whatever StarPU's scheduler does (two all-reduces reordered on one rank and not
 *                   on another would deadlock)
 *   4. local bcast  a graph copies each leader vector to this rank's outputs
 *
 *        dev0 dev1 dev2          dev0 dev1              (rank 0, rank 1)
 *          \   |   /               \  /
 *          leader0    <== MPI ==>  leader1              (step 3)
 *          /   |   \               /  \
 *        out0 out1 out2          out0 out1
 *
 * StarPU's sequential consistency on the leader vectors chains the steps: the call returns once
 * step 4 is done. This is the lowering the measurements favour for a shard (one MPI
 * collective per tensor, 1.1-1.2x MPI's own time); graphs whose cross-rank edges are StarPU-MPI
 * sends and receives come next.
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
#include "exec/group.h"
#include "exec/group_call.h"

/* ------------------------------------------------------------------------------------------------
 * 1. Agreement
 */

typedef struct hello {
    int64_t sequence;
    uint64_t fingerprint;
    int32_t status;   /* this rank's verdict on its own arguments */
    int32_t op;
    int64_t num_tensors;
    int32_t lowering;  /* SF_LOWER_* this rank will take */
    int32_t unused;
} hello_t;

/* FNV-1a over what must be the same on every rank. */
static uint64_t fingerprint(starfold_op_t op, size_t nt, const starfold_tensor_desc_t *tensors)
{
    uint64_t h = 1469598103934665603ull;
#define MIX(v) (h = (h ^ (uint64_t)(v)) * 1099511628211ull)
    MIX(op);
    MIX(nt);
    for (size_t t = 0; tensors && t < nt; t++) {
        MIX(tensors[t].dtype);
        MIX(tensors[t].count);
    }
#undef MIX
    return h;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "1, 3 and 4" (at most a few hundred ranks fit). */
static void list_ranks(char *buf, size_t size, const int *missing, int n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int r = 0, k = 0; r < n && used + 16 < size; r++) {
        if (!missing[r]) continue;
        used += (size_t)snprintf(buf + used, size - used, "%s%d", k ? ", " : "", r);
        k++;
    }
}

/*
 * The "broken" notice: a rank whose collective timed out tells every other rank, so that a rank that
 * comes late (or calls starfold_group_destroy()) fails at once instead of waiting for ranks that have
 * given up. Sent once, never waited for (MPI_Request_free).
 */
#define NOTICE_TAG 32000

static void send_notices(starfold_group_t g)
{
    g->notice = g->sequence;
    for (int r = 0; r < g->size; r++) {
        if (r == g->rank) continue;
        MPI_Request rq;
        if (MPI_Isend(&g->notice, 1, MPI_LONG, r, NOTICE_TAG, g->comm, &rq) == MPI_SUCCESS) MPI_Request_free(&rq);
    }
}

/* A notice from another rank, received: the group is broken; -1 when none. */
int starfold__group_notice(starfold_group_t g)
{
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, NOTICE_TAG, g->comm, &flag, &status) != MPI_SUCCESS || !flag) return -1;
    long seq = 0;
    MPI_Recv(&seq, 1, MPI_LONG, status.MPI_SOURCE, NOTICE_TAG, g->comm, MPI_STATUS_IGNORE);
    g->broken = 1;
    return status.MPI_SOURCE;
}

static starfold_status_t noticed(const char *fn, starfold_group_t g, int from)
{
    return starfold__error(STARFOLD_ERR_RUNTIME,
                           "%s: rank %d declared the group broken (a collective timed out there, waiting for this rank "
                           "or another): destroy the group and end the job (starfold_group_abort())",
                           fn, from);
}

/*
 * Every rank sends its hello to every other and receives theirs, waiting at most the group's
 * timeout. Fills all[] (all[rank] = mine). On a timeout the receives still pending are cancelled and
 * the group is broken.
 */
static starfold_status_t exchange(const char *fn, starfold_group_t g, int phase, const hello_t *mine, hello_t *all)
{
    const int n = g->size, tag = (int)(g->sequence % 15000) * 2 + 1 + phase;
    MPI_Request *req = malloc(sizeof *req * 2 * (size_t)n);
    int *missing = calloc((size_t)n, sizeof *missing);
    if (!req || !missing) {
        free(req);
        free(missing);
        return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    all[g->rank] = *mine;
    int from = starfold__group_notice(g);
    if (from >= 0) {
        free(req);
        free(missing);
        return noticed(fn, g, from);
    }
    int nreq = 0, err = MPI_SUCCESS;
    for (int r = 0; r < n && err == MPI_SUCCESS; r++) {
        if (r == g->rank) continue;
        err = MPI_Irecv(&all[r], (int)sizeof(hello_t), MPI_BYTE, r, tag, g->comm, &req[nreq++]);
    }
    for (int r = 0; r < n && err == MPI_SUCCESS; r++) {
        if (r == g->rank) continue;
        err = MPI_Isend(mine, (int)sizeof(hello_t), MPI_BYTE, r, tag, g->comm, &req[nreq++]);
    }
    const double t0 = now_s();
    const int limited = g->timeout_seconds > 0 && isfinite(g->timeout_seconds);
    int warned = 0, done = 0;
    while (err == MPI_SUCCESS && !done) {
        err = MPI_Testall(nreq, req, &done, MPI_STATUSES_IGNORE);
        if (err != MPI_SUCCESS || done) break;
        const double waited = now_s() - t0;
        if ((g->stall_warning_seconds > 0 && !warned && waited >= g->stall_warning_seconds) ||
            (limited && waited >= g->timeout_seconds)) {
            /* Which ranks have not spoken: the receives from them are still pending. */
            int k = 0;
            for (int r = 0; r < n; r++) {
                if (r == g->rank) continue;
                int flag = 0;
                MPI_Request_get_status(req[k++], &flag, MPI_STATUS_IGNORE);
                missing[r] = !flag;
            }
            char who[512];
            list_ranks(who, sizeof who, missing, n);
            if (limited && waited >= g->timeout_seconds) {
                for (int i = 0; i < n - 1; i++) {
                    int flag = 0;
                    MPI_Request_get_status(req[i], &flag, MPI_STATUS_IGNORE);
                    if (!flag) MPI_Cancel(&req[i]);
                }
                g->broken = 1;
                send_notices(g);
                free(req);
                free(missing);
                return starfold__error(STARFOLD_ERR_TIMEOUT,
                                       "%s: collective #%ld: rank%s %s did not join within %g s; the group is broken "
                                       "(every later call fails): destroy it and end the job (starfold_group_abort())",
                                       fn, (long)g->sequence, strchr(who, ',') ? "s" : "", who, g->timeout_seconds);
            }
            fprintf(stderr, "starfold: rank %d: collective #%ld has waited %.1f s for rank%s %s\n", g->rank,
                    (long)g->sequence, waited, strchr(who, ',') ? "s" : "", who);
            warned = 1;
        }
        if ((from = starfold__group_notice(g)) >= 0) {
            /* Another waiting rank gave up first. Those this rank still waits for are missing for it
             * too: the same TIMEOUT as if its own limit had passed; with nobody missing here, it was
             * this rank that came late. */
            int k = 0, any = 0;
            for (int r = 0; r < n; r++) {
                if (r == g->rank) continue;
                int flag = 0;
                MPI_Request_get_status(req[k], &flag, MPI_STATUS_IGNORE);
                missing[r] = !flag;
                any |= !flag;
                if (!flag) MPI_Cancel(&req[k]);
                k++;
            }
            char who[512];
            list_ranks(who, sizeof who, missing, n);
            free(req);
            free(missing);
            if (!any) return noticed(fn, g, from);
            return starfold__error(STARFOLD_ERR_TIMEOUT,
                                   "%s: collective #%ld: rank%s %s did not join (rank %d gave up after %g s); the group "
                                   "is broken (every later call fails): destroy it and end the job "
                                   "(starfold_group_abort())",
                                   fn, (long)g->sequence, strchr(who, ',') ? "s" : "", who, from, g->timeout_seconds);
        }
        const struct timespec pause = { 0, 200000 }; /* 0.2 ms */
        nanosleep(&pause, NULL);
    }
    free(req);
    free(missing);
    /* Everyone answered; a notice that came meanwhile still wins (the others have given up). */
    if (err == MPI_SUCCESS && (from = starfold__group_notice(g)) >= 0) return noticed(fn, g, from);
    if (err != MPI_SUCCESS) {
        g->broken = 1;
        char buf[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(err, buf, &len);
        return starfold__error(STARFOLD_ERR_RUNTIME, "%s: exchanging with the other ranks failed: %s", fn, buf);
    }
    return STARFOLD_OK;
}

/* What every rank concludes from the same hellos: the same status and message everywhere. */
static starfold_status_t verdict(const char *fn, starfold_group_t g, const hello_t *all, const char *mine_msg)
{
    for (int r = 0; r < g->size; r++) {
        if (all[r].status == STARFOLD_OK) continue;
        if (r == g->rank) return starfold__error((starfold_status_t)all[r].status, "%s", mine_msg);
        return starfold__error((starfold_status_t)all[r].status, "%s: rank %d refused its arguments (%s); nothing was "
                               "submitted", fn, r, starfold_status_string((starfold_status_t)all[r].status));
    }
    for (int r = 1; r < g->size; r++) {
        if (all[r].sequence != all[0].sequence)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                   "%s: rank %d is at collective #%lld, rank 0 at #%lld: the ranks called different "
                                   "numbers of collectives",
                                   fn, r, (long long)all[r].sequence, (long long)all[0].sequence);
        if (all[r].fingerprint != all[0].fingerprint)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                   "%s: collective #%lld: rank %d asks for %s over %lld tensors, rank 0 for %s over %lld "
                                   "(ops, tensor counts, dtypes or sizes differ); nothing was submitted",
                                   fn, (long long)all[0].sequence, r, starfold_op_name((starfold_op_t)all[r].op),
                                   (long long)all[r].num_tensors, starfold_op_name((starfold_op_t)all[0].op),
                                   (long long)all[0].num_tensors);
        if (all[r].lowering != all[0].lowering)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                   "%s: collective #%lld: rank %d crosses ranks with '%s', rank 0 with '%s' "
                                   "(starfold_group_set_lowering() must be the same on every rank); nothing was submitted",
                                   fn, (long long)all[0].sequence, r, starfold__lowering_name(all[r].lowering),
                                   starfold__lowering_name(all[0].lowering));
    }
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------
 * 3. The MPI task
 */

typedef struct mpi_task_arg {
    MPI_Comm comm;
    double timeout_seconds; /* 0 or infinity: none */
    starfold_dtype_t dtype;
    starfold_op_t op;
    size_t count;
    int divisor;        /* MEAN: every replica of every rank; else 1 */
    int *status;        /* shared by the collective's tasks: first failure (atomic) */
} mpi_task_arg_t;

static MPI_Datatype mpi_type(starfold_dtype_t t)
{
    switch (t) {
    case STARFOLD_FLOAT32: return MPI_FLOAT;
    case STARFOLD_FLOAT64: return MPI_DOUBLE;
    case STARFOLD_INT32: return MPI_INT32_T;
    default: return MPI_INT64_T;
    }
}

static MPI_Op mpi_op(starfold_op_t op)
{
    switch (op) {
    case STARFOLD_OP_MIN: return MPI_MIN;
    case STARFOLD_OP_MAX: return MPI_MAX;
    case STARFOLD_OP_PROD: return MPI_PROD;
    default: return MPI_SUM; /* SUM, and MEAN before its division */
    }
}

/* MEAN's division, as the kernels do it: floats divide, integers truncate toward zero. */
static void divide(void *p, starfold_dtype_t t, size_t count, int divisor)
{
    switch (t) {
    case STARFOLD_FLOAT32:
        for (size_t i = 0; i < count; i++) ((float *)p)[i] /= (float)divisor;
        break;
    case STARFOLD_FLOAT64:
        for (size_t i = 0; i < count; i++) ((double *)p)[i] /= (double)divisor;
        break;
    case STARFOLD_INT32:
        for (size_t i = 0; i < count; i++) ((int32_t *)p)[i] /= divisor;
        break;
    default:
        for (size_t i = 0; i < count; i++) ((int64_t *)p)[i] /= divisor;
        break;
    }
}

static void mpi_allreduce_cpu(void *buffers[], void *cl_arg)
{
    const mpi_task_arg_t *a = cl_arg;
    char *p = (char *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const size_t es = starfold_dtype_size(a->dtype);
    /* MPI counts are ints: in slices of at most 2^30 elements. */
    for (size_t done = 0; done < a->count;) {
        const size_t n = a->count - done < ((size_t)1 << 30) ? a->count - done : ((size_t)1 << 30);
        /* Non-blocking and polled, so that a rank gone missing mid-collective costs a timeout, not
         * a worker forever. */
        MPI_Request rq;
        int err = MPI_Iallreduce(MPI_IN_PLACE, p + done * es, (int)n, mpi_type(a->dtype), mpi_op(a->op), a->comm, &rq);
        const double t0 = now_s();
        int fin = 0, failure = STARFOLD_OK;
        while (err == MPI_SUCCESS && !fin) {
            err = MPI_Test(&rq, &fin, MPI_STATUS_IGNORE);
            if (err != MPI_SUCCESS || fin) break;
            if (a->timeout_seconds > 0 && isfinite(a->timeout_seconds) && now_s() - t0 > a->timeout_seconds) {
                failure = STARFOLD_ERR_TIMEOUT;
                break;
            }
            sched_yield(); /* non-blocking collectives progress only when tested: test again soon */
        }
        if (err != MPI_SUCCESS) failure = STARFOLD_ERR_RUNTIME;
        if (failure != STARFOLD_OK) {
            int expected = STARFOLD_OK;
            __atomic_compare_exchange_n(a->status, &expected, failure, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
            return;
        }
        done += n;
    }
    if (a->divisor > 1) divide(p, a->dtype, a->count, a->divisor);
}

static struct starpu_codelet mpi_allreduce_cl = {
    .where = STARPU_CPU,
    .cpu_funcs = { mpi_allreduce_cpu },
    .cpu_funcs_name = { "starfold_mpi_allreduce_cpu" },
    .nbuffers = 2,
    .modes = { STARPU_RW, STARPU_RW }, /* the leader vector, the group's token */
    .name = "starfold_mpi_allreduce",
};

/* ------------------------------------------------------------------------------------------------
 * Steps 2 and 4: the local graphs
 */

static starfold_status_t local_topology(starfold_group_t g)
{
    if (g->local) return STARFOLD_OK;
    return starfold_context_topology(g->ctx, &g->local);
}

static starfold_status_t compile_local(starfold_group_t g, starfold_collective_t kind, starfold_op_t op, size_t nt,
                                       const starfold_tensor_desc_t *tensors, starfold_graph_t *graph)
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
        desc.num_destinations = n, desc.destinations = devices;
    }
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

/*
 * The leader buffers: one vector per dtype on device 0, the tensors of that dtype one after another
 * (a fusion buffer), so the MPI step is one collective per dtype however many tensors there are.
 *
 *     tensors   a(f32, 3)  b(i32, 2)  c(f32, 4)
 *     leaders   f32: [a a a c c c c]   i32: [b b]        offset of c = 3
 */
typedef struct leaders {
    starpu_data_handle_t vec[STARFOLD_DTYPE_COUNT];
    size_t total[STARFOLD_DTYPE_COUNT];
    size_t *offset;   /* [tensor] its first element in its dtype's vector */
} leaders_t;

static starfold_status_t make_leaders(starfold_group_t g, size_t nt, const starfold_tensor_desc_t *tensors,
                                      leaders_t *l)
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

static void free_leaders(starfold_group_t g, leaders_t *l)
{
    for (int dt = 0; dt < STARFOLD_DTYPE_COUNT; dt++) starfold_vector_destroy(g->ctx, l->vec[dt]); /* waits for tasks */
    free(l->offset);
}

/* The leaders' views of the tensors (by offset in their dtype's vector). */
static starfold_status_t make_leader_views(size_t nt, const starfold_tensor_desc_t *tensors, const leaders_t *l,
                                           starfold_view_t **lead)
{
    *lead = calloc(nt, sizeof **lead);
    if (!*lead) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_group_all_reduce: out of memory");
    for (size_t t = 0; t < nt; t++) (*lead)[t] = (starfold_view_t){ l->vec[tensors[t].dtype], l->offset[t] };
    return STARFOLD_OK;
}

/* Handles as whole views (NULL for NULL handles); NULL when out of memory. */
static starfold_view_t *whole_views(size_t n, const starpu_data_handle_t *handles)
{
    starfold_view_t *v = calloc(n ? n : 1, sizeof *v);
    for (size_t k = 0; v && handles && k < n; k++) v[k] = (starfold_view_t){ handles[k], 0 };
    return v;
}

static starfold_status_t submit_mpi_tasks(starfold_group_t g, starfold_op_t op, const leaders_t *l,
                                          mpi_task_arg_t *args, int *status)
{
    if (!g->token) starpu_variable_data_register(&g->token, STARPU_MAIN_RAM, (uintptr_t)&g->token_value, sizeof(int));
    for (int dt = 0; dt < STARFOLD_DTYPE_COUNT; dt++) {
        args[dt] = (mpi_task_arg_t){ g->data_comm, g->timeout_seconds, (starfold_dtype_t)dt, op, l->total[dt],
                                     op == STARFOLD_OP_MEAN ? g->total_devices : 1, status };
        if (!l->total[dt]) continue;
        struct starpu_task *task = starpu_task_create();
        task->cl = &mpi_allreduce_cl;
        task->handles[0] = l->vec[dt];
        task->handles[1] = g->token;
        task->cl_arg = &args[dt];
        task->cl_arg_size = sizeof args[dt];
        const int err = starpu_task_submit(task);
        if (err != 0) {
            task->destroy = 0;
            starpu_task_destroy(task);
            /* Earlier dtypes' tasks are already queued: this rank's later collectives would pair with
             * them on the other ranks. The group cannot go on. */
            g->broken = 1;
            return starfold__error(STARFOLD_ERR_RUNTIME, "starfold_group_all_reduce: StarPU refused the MPI task of "
                                   "the %s tensors (%d); the group is broken", starfold_dtype_name((starfold_dtype_t)dt), err);
        }
    }
    return STARFOLD_OK;
}

/*
 * Step 3 as a graph across ranks: runs the graph from the leaders into the results, then MEAN's
 * division there. It does not wait for the local reduce: the graph partitions the leaders with
 * submitted partitions, which StarPU orders after the reduce's tasks, so a rank whose own tasks hang
 * still reaches the graph's polled wait and times out like the others. Every rank runs the same
 * graph, its tags numbered from the collective's sequence number. A failure here cannot be undone
 * across ranks: the group is broken.
 */
static starfold_status_t cross_ranks(starfold_group_t g, starfold_graph_t across, starfold_op_t op, const leaders_t *in,
                                     const leaders_t *out, int64_t sequence, int *abandoned)
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
        if (starpu_data_acquire_on_node(out->vec[dt], STARPU_MAIN_RAM, STARPU_RW) != 0) {
            st = starfold__error(STARFOLD_ERR_RUNTIME, "starfold_group_all_reduce: cannot acquire the results");
            break;
        }
        divide((void *)starpu_vector_get_local_ptr(out->vec[dt]), (starfold_dtype_t)dt, out->total[dt], g->total_devices);
        starpu_data_release_on_node(out->vec[dt], STARPU_MAIN_RAM);
    }
    return st;
}

/*
 * Step 3 with the MPI lowering, finished: the MPI tasks are waited for (their leaders polled, within
 * timeout_seconds) before the local broadcast is submitted, so that a rank whose MPI_Allreduce
 * failed or timed out leaves every output as it was, as a graph lowering does.
 */
static starfold_status_t mpi_tasks_done(const char *fn, starfold_group_t g, const leaders_t *l, const int *status,
                                        int *abandoned)
{
    if (starfold__handles_free_by(l->vec, STARFOLD_DTYPE_COUNT, starfold__now_s(), g->timeout_seconds) != 0) {
        g->broken = 1;
        *abandoned = 1;
        return starfold__error(STARFOLD_ERR_TIMEOUT, "%s: rank %d's MPI_Allreduce did not complete within "
                               "timeout_seconds (%g s); the group is broken", fn, g->rank, g->timeout_seconds);
    }
    const int failed = __atomic_load_n(status, __ATOMIC_ACQUIRE);
    if (failed == STARFOLD_OK) return STARFOLD_OK;
    g->broken = 1;
    return starfold__error((starfold_status_t)failed, "%s: MPI_Allreduce %s on this rank; the group is broken", fn,
                           failed == STARFOLD_ERR_TIMEOUT ? "did not complete within timeout_seconds" : "failed");
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
    if (!(limit > 0) || !isfinite(limit)) return starfold_request_wait(r);
    const starfold_status_t st = starfold_request_wait_timeout(r, limit);
    if (st != STARFOLD_ERR_TIMEOUT) return st;
    g->broken = 1;
    *abandoned = 1;
    return starfold__error(STARFOLD_ERR_TIMEOUT, "starfold_group_all_reduce: rank %d's tasks did not complete within "
                           "timeout_seconds (%g s); the group is broken", g->rank, limit);
}

/*
 * One all-reduce made ready to run (a plan): what a call prepares before the agreement and frees after
 * it, or what a persistent all-reduce (starfold_group_all_reduce_init()) keeps across its starts: the
 * lowering and its graph across ranks, the local reduce and broadcast graphs, the leader vectors (and
 * the results' for a graph lowering) and their views. The tensors and views are borrowed.
 */
typedef struct plan {
    starfold_op_t op;
    size_t nt;
    const starfold_tensor_desc_t *tensors;
    const starfold_view_t *inputs, *outputs;   /* num_devices x nt, slot-major */
    int lowering;
    starfold_graph_t across, reduce, bcast;
    leaders_t leaders, results;
    starfold_view_t *lead, *lead2;
    int abandoned;    /* a timeout left the leaders to StarPU: never freed */
} plan_t;

/*
 * Everything this rank prepares alone, before the agreement. @st: the caller's verdict so far; the
 * result is this rank's verdict, which the agreement shares (a graph that does not compile, leaders
 * that cannot be allocated: every rank fails together). MEAN crosses ranks as SUM, divided after.
 */
static starfold_status_t plan_make(const char *fn, starfold_group_t g, starfold_op_t op, size_t nt,
                                   const starfold_tensor_desc_t *tensors, const starfold_view_t *inputs,
                                   const starfold_view_t *outputs, starfold_status_t st, plan_t *p)
{
    memset(p, 0, sizeof *p);
    *p = (plan_t){ .op = op, .nt = nt, .tensors = tensors, .inputs = inputs, .outputs = outputs, .lowering = SF_LOWER_MPI };
    if (st == STARFOLD_OK) st = check_args(fn, g, op, nt, tensors, inputs, outputs);
    const starfold_op_t local_op = op == STARFOLD_OP_MEAN ? STARFOLD_OP_SUM : op;
    size_t totals[STARFOLD_DTYPE_COUNT] = { 0 };
    for (size_t t = 0; st == STARFOLD_OK && t < nt; t++) totals[tensors[t].dtype] += tensors[t].count;
    if (st == STARFOLD_OK) st = starfold__group_lower(g, local_op, totals, &p->lowering, &p->across);
    const int graph_lowering = p->lowering != SF_LOWER_MPI;
    if (st == STARFOLD_OK) st = compile_local(g, STARFOLD_COLL_REDUCE, local_op, nt, tensors, &p->reduce);
    if (st == STARFOLD_OK) st = compile_local(g, STARFOLD_COLL_BROADCAST, local_op, nt, tensors, &p->bcast);
    if (st == STARFOLD_OK) st = make_leaders(g, nt, tensors, &p->leaders);
    if (st == STARFOLD_OK && graph_lowering) st = make_leaders(g, nt, tensors, &p->results);
    if (st == STARFOLD_OK) st = make_leader_views(nt, tensors, &p->leaders, &p->lead);
    if (st == STARFOLD_OK) st = make_leader_views(nt, tensors, graph_lowering ? &p->results : &p->leaders, &p->lead2);
    return st;
}

static void plan_free(starfold_group_t g, plan_t *p)
{
    if (!p->abandoned) {
        free_leaders(g, &p->leaders);
        free_leaders(g, &p->results);
    } else {
        free(p->leaders.offset);
        free(p->results.offset);
    }
    free(p->lead);
    free(p->lead2);
    starfold_graph_destroy(p->reduce);
    starfold_graph_destroy(p->bcast);
    starfold_graph_destroy(p->across);
    memset(p, 0, sizeof *p);
}

/*
 * Step 1: every rank tells every other one its verdict @st, the sequence number, a fingerprint of
 * (op, tensors) and its lowering (exchange(), time-limited); any difference or refusal fails every
 * rank alike. The sequence number is consumed when this fails. @all: [size], filled.
 */
static starfold_status_t plan_agree(const char *fn, starfold_group_t g, const plan_t *p, starfold_status_t st, hello_t *all)
{
    char mine_msg[512];
    snprintf(mine_msg, sizeof mine_msg, "%s", st != STARFOLD_OK ? starfold_last_error() : "");
    const int ok = st == STARFOLD_OK;
    const hello_t mine = { g->sequence, fingerprint(p->op, ok ? p->nt : 0, ok ? p->tensors : NULL), (int32_t)st,
                           (int32_t)p->op, (int64_t)(ok ? p->nt : 0), p->lowering, 0 };
    starfold_status_t agreed = exchange(fn, g, 0, &mine, all);
    if (agreed == STARFOLD_OK) agreed = verdict(fn, g, all, mine_msg);
    if (agreed != STARFOLD_OK) g->sequence++;
    return agreed;
}

/*
 * Steps 1-4 of one run of @p: agree, local reduce, across ranks, local broadcast; a failure before
 * step 3 is agreed on again so that no rank crosses ranks alone. A graph lowering writes the results
 * into a second set of leader vectors (the graph's outputs differ from its inputs), which the
 * broadcast reads. @st: this rank's verdict (plan_make()'s).
 */
static starfold_status_t plan_run(const char *fn, starfold_group_t group, plan_t *p, starfold_status_t st)
{
    hello_t *all = calloc((size_t)group->size, sizeof *all);
    if (!all) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    const starfold_status_t agreed = plan_agree(fn, group, p, st, all);
    if (agreed != STARFOLD_OK) {
        free(all);
        return agreed;
    }
    const int graph_lowering = p->lowering != SF_LOWER_MPI;
    char mine_msg[512];
    /* The MPI tasks' arguments and shared status, on the heap: after a timeout the tasks may still
     * run when this call has returned (the block is then never freed, like the leaders). */
    struct mpi_tasks {
        mpi_task_arg_t args[STARFOLD_DTYPE_COUNT];
        int status;
    } *mt = calloc(1, sizeof *mt);
    if (!mt) st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    starfold_request_t r1 = NULL, r2 = NULL;
    const int64_t sequence = group->sequence;
    if (st == STARFOLD_OK) st = starfold_submit_views(group->ctx, p->reduce, p->inputs, p->lead, &r1);
    {
        /* Everyone's local part was accepted, or nobody crosses ranks: a second round of the same
         * time-limited exchange (a rank that gave up in the first never answers this one). */
        snprintf(mine_msg, sizeof mine_msg, "%s", st != STARFOLD_OK ? starfold_last_error() : "");
        const hello_t go = { group->sequence, 0, (int32_t)st, 0, 0, p->lowering, 0 };
        starfold_status_t both = exchange(fn, group, 1, &go, all);
        for (int r = 0; both == STARFOLD_OK && r < group->size; r++)
            if (all[r].status != STARFOLD_OK && r != group->rank)
                both = starfold__error(STARFOLD_ERR_RUNTIME, "%s: rank %d could not submit its local part (%s); nothing "
                                       "was reduced across ranks", fn, r,
                                       starfold_status_string((starfold_status_t)all[r].status));
        if (st != STARFOLD_OK) st = starfold__error(st, "%s", mine_msg);
        else st = both;
    }
    group->sequence++;
    free(all);
    if (st == STARFOLD_OK) group->last_lowering = p->lowering;
    int abandoned = 0;
    if (st == STARFOLD_OK && !graph_lowering) st = submit_mpi_tasks(group, p->op, &p->leaders, mt->args, &mt->status);
    if (st == STARFOLD_OK && !graph_lowering) st = mpi_tasks_done(fn, group, &p->leaders, &mt->status, &abandoned);
    if (st == STARFOLD_OK && graph_lowering)
        st = cross_ranks(group, p->across, p->op, &p->leaders, &p->results, sequence, &abandoned);
    if (st == STARFOLD_OK) st = starfold_submit_views(group->ctx, p->bcast, p->lead2, p->outputs, &r2);
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
    plan_t p;
    st = plan_make(fn, group, op, num_tensors, tensors, inputs, outputs, st, &p);
    st = plan_run(fn, group, &p, st);
    plan_free(group, &p);
    return st;
}

/* A group that can take part: not NULL, not broken (then nothing is exchanged: every call fails at once). */
static starfold_status_t usable(const char *fn, starfold_group_t group)
{
    if (!group) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL group", fn);
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
    starfold_status_t st = usable(fn, group);
    if (st != STARFOLD_OK) return st;
    const size_t n = (size_t)starfold_context_num_devices(group->ctx) * num_tensors;
    starfold_view_t *in = inputs ? whole_views(n, inputs) : NULL, *out = outputs ? whole_views(n, outputs) : NULL;
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
    const starfold_status_t st = usable(fn, group);
    if (st != STARFOLD_OK) return st;
    return group_all_reduce(fn, group, op, num_tensors, tensors, inputs, outputs, STARFOLD_OK);
}

/* ------------------------------------------------------------------------------------------------
 * Persistent all-reduces (MPI-4's MPI_Allreduce_init / MPI_Start): the plan made and agreed on once.
 */

struct starfold_group_persistent {
    starfold_group_t group;
    starfold_tensor_desc_t *tensors;       /* copies: the plan borrows them */
    starfold_view_t *inputs, *outputs;
    plan_t plan;
};

STARFOLD_API starfold_status_t starfold_group_all_reduce_init(starfold_group_t group, starfold_op_t op,
                                                              size_t num_tensors, const starfold_tensor_desc_t *tensors,
                                                              const starpu_data_handle_t *inputs,
                                                              const starpu_data_handle_t *outputs,
                                                              starfold_group_persistent_t *persistent)
{
    static const char fn[] = "starfold_group_all_reduce_init";
    starfold_status_t st = usable(fn, group);
    if (st != STARFOLD_OK) return st;
    if (persistent) *persistent = NULL;
    const size_t n = (size_t)starfold_context_num_devices(group->ctx) * num_tensors;
    struct starfold_group_persistent *P = calloc(1, sizeof *P);
    if (P) {
        P->group = group;
        P->tensors = tensors && num_tensors ? malloc(num_tensors * sizeof *tensors) : NULL;
        if (P->tensors) memcpy(P->tensors, tensors, num_tensors * sizeof *tensors);
        P->inputs = inputs ? whole_views(n, inputs) : NULL;
        P->outputs = outputs ? whole_views(n, outputs) : NULL;
    }
    if (!persistent) st = starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL persistent", fn);
    else if (!P || (tensors && num_tensors && !P->tensors) || (inputs && !P->inputs) || (outputs && !P->outputs))
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    plan_t scratch;
    plan_t *plan = P ? &P->plan : &scratch;
    st = plan_make(fn, group, op, num_tensors, P ? P->tensors : NULL, P ? P->inputs : NULL, P ? P->outputs : NULL, st, plan);
    /* Agreed on once, like a call's first round: a refusal or a difference fails every rank here. */
    hello_t *all = calloc((size_t)group->size, sizeof *all);
    st = all ? plan_agree(fn, group, plan, st, all) : starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    if (st == STARFOLD_OK) group->sequence++;
    free(all);
    if (st != STARFOLD_OK || !P) {
        plan_free(group, plan);
        if (P) free(P->tensors), free(P->inputs), free(P->outputs);
        free(P);
        return st;
    }
    *persistent = P;
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_group_persistent_start(starfold_group_persistent_t persistent)
{
    static const char fn[] = "starfold_group_persistent_start";
    if (!persistent) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL persistent", fn);
    const starfold_status_t st = usable(fn, persistent->group);
    if (st != STARFOLD_OK) return st;
    return plan_run(fn, persistent->group, &persistent->plan, STARFOLD_OK);
}

STARFOLD_API void starfold_group_persistent_destroy(starfold_group_persistent_t persistent)
{
    if (!persistent) return;
    plan_free(persistent->group, &persistent->plan);
    free(persistent->tensors);
    free(persistent->inputs);
    free(persistent->outputs);
    free(persistent);
}

starfold_status_t starfold__group_all_reduce_views_with(starfold_group_t group, starfold_op_t op, size_t num_tensors,
                                                        const starfold_tensor_desc_t *tensors,
                                                        const starfold_view_t *inputs, const starfold_view_t *outputs,
                                                        double timeout_seconds, const char *lowering)
{
    static const char fn[] = "starfold_group_all_reduce_views";
    starfold_status_t st = usable(fn, group);
    if (st != STARFOLD_OK) return st;
    const double timeout = group->timeout_seconds;
    const int chosen = group->lowering;
    if (timeout_seconds > 0) group->timeout_seconds = timeout_seconds;
    /* An unknown name is this rank's refusal, shared with the others by the agreement. */
    if (lowering) st = starfold_group_set_lowering(group, lowering);
    st = group_all_reduce(fn, group, op, num_tensors, tensors, inputs, outputs, st);
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
