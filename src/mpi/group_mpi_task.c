/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Step 3 of the "mpi" lowering: one StarPU task per dtype on a CPU worker calls MPI's own all-reduce
 * on that dtype's run (every tensor of the dtype one after another: a fusion buffer), on the group's
 * data communicator; MEAN divides by every replica of every rank there. The run is the leader
 * vector, in place, or with the direct plan the caller's inputs into its outputs (group_plan.h).
 *
 *   leader f32 --[task: MPI_Iallreduce, polled]--> leader f32     (token in STARPU_RW)
 *   input  i64 --[task: MPI_Iallreduce, polled]--> output i64     (direct)
 *
 * The group's token handle in STARPU_RW orders these tasks as they were submitted, so every rank
 * calls its MPI collectives in the same order whatever StarPU's scheduler does (two all-reduces
 * reordered on one rank and not on another would deadlock). The tasks poll their request against
 * timeout_seconds, so a rank gone missing mid-collective costs a timeout, not a worker forever.
 */
#include "config.h"

#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "mpi/group.h"
#include "mpi/group_plan.h"
#include "exec/vectors.h"
#include "base/half.h"
#include "mpi/mpi_types.h"

/*
 * MEAN's division, as the kernels do it: float32 and float64 divide, float16 and bfloat16 divide in
 * float32 and round once, integers truncate toward zero (signed or not).
 */
void starfold__group_divide(void *p, starfold_dtype_t t, size_t count, int divisor)
{
    switch (t) {
    case STARFOLD_FLOAT32:
        for (size_t i = 0; i < count; i++) ((float *)p)[i] /= (float)divisor;
        return;
    case STARFOLD_FLOAT64:
        for (size_t i = 0; i < count; i++) ((double *)p)[i] /= (double)divisor;
        return;
    case STARFOLD_FLOAT16:
        for (size_t i = 0; i < count; i++)
            ((uint16_t *)p)[i] = starfold__f32_to_f16(starfold__f16_to_f32(((uint16_t *)p)[i]) / (float)divisor);
        return;
    case STARFOLD_BFLOAT16:
        for (size_t i = 0; i < count; i++)
            ((uint16_t *)p)[i] = starfold__f32_to_bf16(starfold__bf16_to_f32(((uint16_t *)p)[i]) / (float)divisor);
        return;
    default:
        break;
    }
    const int sgn = starfold__dtype_signed(t);
    for (size_t i = 0; i < count; i++) {
        const uint64_t x = starfold__element_bits(t, p, i);
        starfold__element_set_bits(t, p, i, sgn ? (uint64_t)((int64_t)x / divisor) : x / (uint64_t)divisor);
    }
}

/* Records @failure in *@status unless a failure is there already (atomic: the collective's tasks
 * share it); -1. */
static int record(int *status, int failure)
{
    int expected = STARFOLD_OK;
    __atomic_compare_exchange_n(status, &expected, failure, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    return -1;
}

/*
 * Completes the @n non-blocking collectives @rq, polled (non-blocking collectives progress only when
 * tested) against @timeout_seconds (0 or infinity: none), so that a rank gone missing mid-collective
 * costs a timeout, not a worker forever. 0 when they completed; else the failure is recorded in
 * *@status.
 */
static int poll_within(size_t n, MPI_Request *rq, double timeout_seconds, int *status)
{
    const double t0 = starfold__now_s();
    int fin = 0, err = MPI_SUCCESS;
    while (!fin) {
        err = MPI_Testall((int)n, rq, &fin, MPI_STATUSES_IGNORE);
        if (err != MPI_SUCCESS || fin) break;
        if (timeout_seconds > 0 && isfinite(timeout_seconds) && starfold__now_s() - t0 > timeout_seconds)
            return record(status, STARFOLD_ERR_TIMEOUT);
        sched_yield();
    }
    return err == MPI_SUCCESS ? 0 : record(status, STARFOLD_ERR_RUNTIME);
}

/* MPI counts are ints: a call goes out in slices of at most this many elements. */
#define SLICE ((size_t)1 << 30)

size_t starfold__group_mpi_requests(const starfold__mpi_task_arg_t *a)
{
    return (a->cuts ? a->ncuts : 1) + a->count / SLICE + 1;
}

int starfold__group_mpi_post(const starfold__mpi_task_arg_t *a, const void *in, void *out, size_t count, MPI_Request *rq,
                             size_t *n)
{
    const size_t es = starfold_dtype_size(a->dtype);
    for (size_t done = 0; done < count;) {
        const size_t k = count - done < SLICE ? count - done : SLICE;
        const int err = MPI_Iallreduce(in == out ? MPI_IN_PLACE : (const void *)((const char *)in + done * es),
                                       (char *)out + done * es, (int)k, starfold__mpi_datatype(a->dtype), starfold__mpi_reduce_op(a->dtype, a->op), a->comm,
                                       &rq[*n]);
        if (err != MPI_SUCCESS) return record(a->status, STARFOLD_ERR_RUNTIME);
        ++*n;
        done += k;
    }
    return 0;
}

int starfold__group_mpi_wait(const starfold__mpi_task_arg_t *a, MPI_Request *rq, size_t n)
{
    return poll_within(n, rq, a->timeout_seconds, a->status);
}

/* Every call of the run (a->cuts) in flight at once, then waited for; MEAN's division after. */
int starfold__group_mpi_allreduce(const starfold__mpi_task_arg_t *a, const void *in, void *out)
{
    const size_t es = starfold_dtype_size(a->dtype), calls = a->cuts ? a->ncuts : 1;
    MPI_Request *rq = malloc(sizeof *rq * starfold__group_mpi_requests(a));
    if (!rq) return record(a->status, STARFOLD_ERR_OUT_OF_MEMORY);
    size_t n = 0;
    int failed = 0;
    for (size_t c = 0; !failed && c < calls; c++) {
        const size_t lo = c ? a->cuts[c - 1] : 0, hi = a->cuts ? a->cuts[c] : a->count;
        failed = starfold__group_mpi_post(a, (const char *)in + lo * es, (char *)out + lo * es, hi - lo, rq, &n);
        if (!failed && n) { /* the calls posted so far progress while the next is posted */
            int ignored = 0;
            MPI_Testall((int)n, rq, &ignored, MPI_STATUSES_IGNORE);
        }
    }
    failed = failed || starfold__group_mpi_wait(a, rq, n) != 0;
    free(rq);
    if (failed) return -1;
    if (a->divisor > 1) starfold__group_divide(out, a->dtype, a->count, a->divisor);
    return 0;
}

/* The task of one dtype's run: buffers[0] the input (R) and buffers[1] the output (W or RW), or
 * buffers[0] both (RW, in place: MPI_IN_PLACE, a leader vector's case); the token last. */
static void mpi_allreduce_cpu(void *buffers[], void *cl_arg)
{
    const starfold__mpi_task_arg_t *a = cl_arg;
    const struct starpu_task *task = starpu_task_get_current();
    const int in_place = STARPU_TASK_GET_NBUFFERS(task) == 2;
    const size_t es = starfold_dtype_size(a->dtype);
    const char *in = (const char *)STARPU_VECTOR_GET_PTR(buffers[0]) + a->in_offset * es;
    char *out = (char *)STARPU_VECTOR_GET_PTR(buffers[in_place ? 0 : 1]) + a->out_offset * es;
    starfold__group_mpi_allreduce(a, in_place ? out : in, out);
}

static struct starpu_codelet mpi_allreduce_cl = {
    .where = STARPU_CPU,
    .cpu_funcs = { mpi_allreduce_cpu },
    .cpu_funcs_name = { "starfold_mpi_allreduce_cpu" },
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .name = "starfold_mpi_allreduce",
};

/* Submits an MPI task of @fn's collective (@which: which one, "" or " of the float32 tensors");
 * refused, it breaks the group: the other ranks' tasks (and this rank's earlier ones) are queued, and
 * this rank's later collectives would pair with them. */
starfold_status_t starfold__group_mpi_task_submit(starfold_group_t g, struct starpu_task *task, const char *fn,
                                                  const char *which)
{
    /* Its vectors whole: a bucket may still be partitioned by the last graph started on it. */
    for (unsigned b = 0; b < (unsigned)STARPU_TASK_GET_NBUFFERS(task); b++)
        starfold__vector_whole(STARPU_TASK_GET_HANDLE(task, b));
    const int err = starpu_task_submit(task);
    if (err == 0) return STARFOLD_OK;
    task->destroy = 0;
    starpu_task_destroy(task);
    g->broken = 1;
    return starfold__error(STARFOLD_ERR_RUNTIME, "%s: StarPU refused the MPI task%s (%d); the group is broken", fn,
                           which, err);
}

starfold_status_t starfold__group_mpi_submit(starfold_group_t g, starfold_op_t op, const starfold__runs_t *d,
                                             size_t *const *cuts, const size_t *ncuts, starfold__mpi_task_arg_t *args,
                                             int *status)
{
    if (!g->token) starpu_variable_data_register(&g->token, STARPU_MAIN_RAM, (uintptr_t)&g->token_value, sizeof(int));
    for (int dt = 0; dt < STARFOLD_DTYPE_COUNT; dt++) {
        args[dt] = (starfold__mpi_task_arg_t){ g->data_comm, g->timeout_seconds, (starfold_dtype_t)dt, op, d->count[dt],
                                               op == STARFOLD_OP_MEAN ? g->total_devices : 1, status, d->in_offset[dt],
                                               d->out_offset[dt], cuts[dt], ncuts[dt] };
        if (!d->count[dt]) continue;
        const int in_place = d->in[dt] == d->out[dt];
        struct starpu_task *task = starpu_task_create();
        task->cl = &mpi_allreduce_cl;
        task->nbuffers = in_place ? 2 : 3;
        task->handles[0] = d->in[dt];
        task->modes[0] = in_place ? STARPU_RW : STARPU_R;
        if (!in_place) {
            /* The run may be part of its vector (other views there keep their values): written
             * whole only when it is all of it. */
            task->handles[1] = d->out[dt];
            task->modes[1] = d->out_offset[dt] == 0 && d->count[dt] == starpu_vector_get_nx(d->out[dt]) ? STARPU_W : STARPU_RW;
        }
        task->handles[task->nbuffers - 1] = g->token;
        task->modes[task->nbuffers - 1] = STARPU_RW;
        task->cl_arg = &args[dt];
        task->cl_arg_size = sizeof args[dt];
        char which[40];
        snprintf(which, sizeof which, " of the %s tensors", starfold_dtype_name((starfold_dtype_t)dt));
        const starfold_status_t st = starfold__group_mpi_task_submit(g, task, "starfold_group_all_reduce", which);
        if (st != STARFOLD_OK) return st;
    }
    return STARFOLD_OK;
}

/*
 * An MPI task of the collective, finished: its handles @h (@n, NULLs skipped) polled free within
 * timeout_seconds, then its shared @status read; @call names the MPI call in the messages. A rank
 * whose call failed or timed out leaves every output as it was (a direct plan's outputs, and a relay
 * plan's device 0's, are MPI's own receive buffers: a failure there may leave them partly written). A timeout sets *@abandoned (the
 * handles and the task's arguments stay StarPU's); either failure breaks the group.
 */
starfold_status_t starfold__group_mpi_done(const char *fn, starfold_group_t g, const starpu_data_handle_t *h, size_t n,
                                           const int *status, const char *call, int *abandoned)
{
    char what[96];
    snprintf(what, sizeof what, "its task calling %s", call);
    if (starfold__handles_free_by(h, n, starfold__now_s(), g->timeout_seconds, g, what) != 0) {
        g->broken = 1;
        *abandoned = 1;
        char why[320];
        return starfold__error(STARFOLD_ERR_TIMEOUT, "%s: rank %d's %s did not complete within timeout_seconds (%g s)%s; "
                               "the group is broken", fn, g->rank, call, g->timeout_seconds,
                               starfold__group_stall_suffix(g, why, sizeof why));
    }
    const int failed = __atomic_load_n(status, __ATOMIC_ACQUIRE);
    if (failed == STARFOLD_OK) return STARFOLD_OK;
    g->broken = 1;
    return starfold__error((starfold_status_t)failed, "%s: %s %s on this rank; the group is broken", fn, call,
                           failed == STARFOLD_ERR_TIMEOUT ? "did not complete within timeout_seconds" : "failed");
}

/* ------------------------------------------------------------------------------------------------
 * The all-gather's task: MPI_Iallgatherv of every rank's part into the whole vector, polled the same
 * way, MEAN's division after it (an IndexedSlices MEAN divides the gathered values).
 */

static void mpi_allgather_cpu(void *buffers[], void *cl_arg)
{
    starfold__mpi_gather_arg_t *a = cl_arg;
    const size_t es = starfold_dtype_size(a->dtype);
    char *all = (char *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const char *mine = a->has_input ? (const char *)STARPU_VECTOR_GET_PTR(buffers[2]) + a->in_offset * es : all;
    MPI_Request rq;
    const int err = MPI_Iallgatherv(mine, a->counts[a->rank], starfold__mpi_datatype(a->dtype), all, a->counts, a->displs,
                                    starfold__mpi_datatype(a->dtype), a->comm, &rq);
    if (err != MPI_SUCCESS) {
        record(&a->status, STARFOLD_ERR_RUNTIME);
        return;
    }
    if (poll_within(1, &rq, a->timeout_seconds, &a->status) != 0) return;
    if (a->divisor > 1) starfold__group_divide(all, a->dtype, a->total, a->divisor);
}

static struct starpu_codelet mpi_allgather_cl = {
    .where = STARPU_CPU,
    .cpu_funcs = { mpi_allgather_cpu },
    .cpu_funcs_name = { "starfold_mpi_allgather_cpu" },
    .nbuffers = STARPU_VARIABLE_NBUFFERS, /* the whole vector (W), the group's token (RW), this rank's part (R) */
    .name = "starfold_mpi_allgather",
};

starfold_status_t starfold__group_mpi_gather_submit(starfold_group_t g, starpu_data_handle_t all, starpu_data_handle_t mine,
                                                    starfold__mpi_gather_arg_t *a)
{
    if (!g->token) starpu_variable_data_register(&g->token, STARPU_MAIN_RAM, (uintptr_t)&g->token_value, sizeof(int));
    struct starpu_task *task = starpu_task_create();
    task->cl = &mpi_allgather_cl;
    task->nbuffers = mine ? 3 : 2;
    task->handles[0] = all;
    task->modes[0] = STARPU_W;
    task->handles[1] = g->token;
    task->modes[1] = STARPU_RW;
    if (mine) {
        task->handles[2] = mine;
        task->modes[2] = STARPU_R;
    }
    task->cl_arg = a;
    task->cl_arg_size = sizeof *a;
    return starfold__group_mpi_task_submit(g, task, "starfold_group_all_gather", "");
}

/* ------------------------------------------------------------------------------------------------
 * A broadcast's task: the root copies each input into its output (unless they are one handle), then
 * every tensor's MPI_Ibcast is in flight at once, polled the same way.
 *
 *   buffers: [out 0 .. out n-1] [token] [the root's inputs that are not their outputs, in order]
 */

static void mpi_bcast_cpu(void *buffers[], void *cl_arg)
{
    starfold__mpi_bcast_arg_t *a = cl_arg;
    MPI_Request *rq = malloc(sizeof *rq * (a->n ? a->n : 1));
    if (!rq) {
        record(&a->status, STARFOLD_ERR_OUT_OF_MEMORY);
        return;
    }
    /* The root sends from its inputs, and copies them into its outputs once every call is posted,
     * while MPI moves them (both only read the inputs). */
    size_t posted = 0, next_in = a->n + 1;
    for (size_t k = 0; k < a->n; k++) {
        char *buf = (char *)STARPU_VECTOR_GET_PTR(buffers[a->from_input[k] ? next_in++ : k]);
        if (MPI_Ibcast(buf, (int)a->count[k], starfold__mpi_datatype(a->dtype[k]), a->root, a->comm, &rq[posted]) !=
            MPI_SUCCESS) {
            record(&a->status, STARFOLD_ERR_RUNTIME);
            break;
        }
        posted++;
    }
    next_in = a->n + 1;
    for (size_t k = 0; k < posted; k++)
        if (a->from_input[k])
            memcpy((char *)STARPU_VECTOR_GET_PTR(buffers[k]), (const char *)STARPU_VECTOR_GET_PTR(buffers[next_in++]),
                   a->count[k] * starfold_dtype_size(a->dtype[k]));
    /* Posted calls complete even after a failure: a request left pending would pair with the next. */
    if (posted) (void)poll_within(posted, rq, a->timeout_seconds, &a->status);
    free(rq);
}

static struct starpu_codelet mpi_bcast_cl = {
    .where = STARPU_CPU,
    .cpu_funcs = { mpi_bcast_cpu },
    .cpu_funcs_name = { "starfold_mpi_bcast_cpu" },
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .name = "starfold_mpi_bcast",
};

starfold_status_t starfold__group_mpi_bcast_submit(starfold_group_t g, const starpu_data_handle_t *out,
                                                   const starpu_data_handle_t *in, starfold__mpi_bcast_arg_t *a)
{
    if (!g->token) starpu_variable_data_register(&g->token, STARPU_MAIN_RAM, (uintptr_t)&g->token_value, sizeof(int));
    size_t nin = 0;
    for (size_t k = 0; k < a->n; k++) nin += a->from_input[k] != 0;
    const size_t nbuf = a->n + 1 + nin;
    struct starpu_task *task = starpu_task_create();
    task->cl = &mpi_bcast_cl;
    task->nbuffers = (int)nbuf;
    starpu_data_handle_t *h = task->handles;
    enum starpu_data_access_mode *m = task->modes;
    if (nbuf > STARPU_NMAXBUFS) {
        task->dyn_handles = malloc(sizeof *task->dyn_handles * nbuf);
        task->dyn_modes = malloc(sizeof *task->dyn_modes * nbuf);
        if (!task->dyn_handles || !task->dyn_modes) {
            starpu_task_destroy(task); /* frees dyn_handles and dyn_modes */
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_group_broadcast: out of memory");
        }
        h = task->dyn_handles;
        m = task->dyn_modes;
    }
    size_t j = a->n + 1;
    for (size_t k = 0; k < a->n; k++) {
        h[k] = out[k];
        /* the root sends its output's values when they are its input (in place): read them too */
        m[k] = g->rank == a->root && !a->from_input[k] ? STARPU_RW : STARPU_W;
        if (a->from_input[k]) {
            h[j] = in[k];
            m[j++] = STARPU_R;
        }
    }
    h[a->n] = g->token;
    m[a->n] = STARPU_RW;
    task->cl_arg = a;
    task->cl_arg_size = sizeof *a;
    return starfold__group_mpi_task_submit(g, task, "starfold_group_broadcast", "");
}
