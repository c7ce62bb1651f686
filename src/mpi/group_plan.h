/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * One all-reduce across ranks, made ready to run (a plan), and its steps (group_allreduce.c,
 * group_agree.c, group_mpi_task.c), shared with the persistent all-reduces (group_persistent.c).
 * Private.
 */
#ifndef STARFOLD_SRC_MPI_GROUP_PLAN_H
#define STARFOLD_SRC_MPI_GROUP_PLAN_H

#include <starpu.h>
#include <starfold/mpi.h>

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
} starfold__leaders_t;

/* The argument of one MPI task (group_mpi_task.c). */
typedef struct mpi_task_arg {
    MPI_Comm comm;
    double timeout_seconds; /* 0 or infinity: none */
    starfold_dtype_t dtype;
    starfold_op_t op;
    size_t count;
    int divisor;        /* MEAN: every replica of every rank; else 1 */
    int *status;        /* shared by the collective's tasks: first failure (atomic) */
    size_t in_offset, out_offset; /* direct: where the dtype's run starts in its input and output */
    const size_t *cuts; /* the calls (group_cuts.c): call i ends at element cuts[i] of the run, */
    size_t ncuts;       /* cuts[ncuts - 1] = count; NULL: one call */
} starfold__mpi_task_arg_t;

/*
 * Each dtype's run for the MPI step: where its tensors' inputs start, where their outputs start, how
 * many elements. With leaders that is the leader vector, in and out (in place), or with the relay
 * plan from the leader vector into device 0's outputs. The direct plan: one
 * device on this rank, the MPI lowering, and per dtype the tensors' inputs one run of one vector and
 * their outputs one run of another (or of the same, at the same place: in place). Then there is
 * nothing to reduce locally: each dtype's MPI task reads the inputs and writes the outputs itself
 * (MPI_Iallreduce from one to the other), with no leader vector and no copy in or out, as an MPI
 * program would call it.
 *
 *     in  [a a a c c c c]  --MPI_Iallreduce(in + 0, out + 0, 7)-->  out [a a a c c c c]
 */
typedef struct runs {
    starpu_data_handle_t in[STARFOLD_DTYPE_COUNT], out[STARFOLD_DTYPE_COUNT];
    size_t in_offset[STARFOLD_DTYPE_COUNT], out_offset[STARFOLD_DTYPE_COUNT], count[STARFOLD_DTYPE_COUNT];
} starfold__runs_t;

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
    starfold__leaders_t leaders, results;
    starfold_view_t *lead, *lead2;
    int direct;       /* no local graphs and no leaders: the MPI tasks on the views (starfold__runs_t) */
    int relay;        /* the MPI tasks from the leaders into device 0's outputs, the broadcast from
                       * there to the other devices (group_allreduce.c); no lead2 */
    struct starfold__pack *pack; /* the packed plan (group_pack.c): one device, tensors not one run;
                                  * no local graphs and no leaders */
    starfold__runs_t runs;  /* the MPI step's runs: the views' (direct) or the leaders' (MPI lowering) */
    size_t *cuts[STARFOLD_DTYPE_COUNT]; /* the MPI calls of each dtype's run (group_cuts.c); kept, */
    size_t ncuts[STARFOLD_DTYPE_COUNT]; /* like the leaders, when a timeout abandoned the plan */
    int abandoned;    /* a timeout left the leaders to StarPU: never freed */
} starfold__plan_t;

/* The collectives of a group, as the agreement tells them apart. */
enum { SF_GROUP_ALL_REDUCE = 0, SF_GROUP_ALL_GATHER, SF_GROUP_BROADCAST, SF_GROUP_BARRIER };

/* What a rank is about to do, as the agreement compares it. */
typedef struct starfold__agree_what {
    int collective;                         /* SF_GROUP_* */
    starfold_op_t op;
    size_t nt;
    const starfold_tensor_desc_t *tensors;  /* [nt]: dtypes and counts, the same on every rank */
    int lowering;                           /* SF_LOWER_* */
    int64_t payload;                        /* may differ: shared, not compared */
    uint64_t batch;                         /* the batch this collective is one call of (0: none) */
} starfold__agree_what_t;

/* group_agree.c: round 1 of the agreement (this rank's verdict @st against every other's); every
 * rank's payload into @payloads[size] (NULL: not wanted). */
starfold_status_t starfold__group_agree(const char *fn, starfold_group_t g, const starfold__agree_what_t *w,
                                        starfold_status_t st, int64_t *payloads);
/* group_agree.c: round 2, after the local submission @st: every rank submitted, or every rank fails. */
starfold_status_t starfold__group_agree_submitted(const char *fn, starfold_group_t g, int lowering, starfold_status_t st);

/* group_mpi_task.c: submits one MPI task per dtype of @d, from its inputs into its outputs (in place
 * where they are one handle), making the calls @cuts[dtype] (group_cuts.c); @args[STARFOLD_DTYPE_COUNT],
 * the cuts and @status outlive the tasks. A refused submission breaks the group. */
starfold_status_t starfold__group_mpi_submit(starfold_group_t g, starfold_op_t op, const starfold__runs_t *d,
                                             size_t *const *cuts, const size_t *ncuts, starfold__mpi_task_arg_t *args,
                                             int *status);
/* The argument of the all-gather's MPI task (group_mpi_task.c), with its [size] counts and
 * displacements in elements (MPI's ints); on the heap, so that a task abandoned by a timeout can
 * still read it. */
typedef struct starfold__mpi_gather_arg {
    MPI_Comm comm;
    double timeout_seconds;
    starfold_dtype_t dtype;
    int rank, has_input;
    size_t in_offset;   /* this rank's part starts there in its vector */
    size_t total;       /* elements of the whole */
    int divisor;        /* > 1: divide the whole (MEAN) */
    int status;         /* the task's failure (atomic) */
    int *counts, *displs;
} starfold__mpi_gather_arg_t;

/* group_mpi_task.c: submits the all-gather's task (writes @all, reads @mine unless NULL, in the
 * group's MPI order); a refused submission breaks the group. */
starfold_status_t starfold__group_mpi_gather_submit(starfold_group_t g, starpu_data_handle_t all, starpu_data_handle_t mine,
                                                    starfold__mpi_gather_arg_t *a);
/* The argument of a broadcast's MPI task (group_mpi_task.c): its @n tensors (those with elements),
 * each with its dtype, count and whether the root copies it from an input first; on the heap with
 * its arrays, so that a task abandoned by a timeout can still read it. */
typedef struct starfold__mpi_bcast_arg {
    MPI_Comm comm;
    double timeout_seconds;
    int root;               /* the group rank whose inputs are sent */
    size_t n;
    starfold_dtype_t *dtype; /* [n] */
    size_t *count;          /* [n] elements */
    int *from_input;        /* [n] the root's input is another handle than its output (buffer n + 1 + k, in order) */
    int status;             /* the task's failure (atomic) */
} starfold__mpi_bcast_arg_t;

/* group_mpi_task.c: submits a broadcast's one task: MPI_Ibcast into each of @out[n] (W; RW on the
 * root when in place), the root first copying @in[k] (R) where a->from_input[k], every call in
 * flight at once, in the group's MPI order; a refused submission breaks the group. */
starfold_status_t starfold__group_mpi_bcast_submit(starfold_group_t g, const starpu_data_handle_t *out,
                                                   const starpu_data_handle_t *in, starfold__mpi_bcast_arg_t *a);
/* group_mpi_task.c: waits for an MPI task's handles @h within timeout_seconds (*@abandoned on a
 * timeout), then its @status; either failure breaks the group (@call names the MPI call). */
starfold_status_t starfold__group_mpi_done(const char *fn, starfold_group_t g, const starpu_data_handle_t *h, size_t n,
                                           const int *status, const char *call, int *abandoned);
/* MEAN's division, as the kernels do it: floats divide, integers truncate toward zero. */
void starfold__group_divide(void *p, starfold_dtype_t t, size_t count, int divisor);
/* group_mpi_task.c, inside a task: MPI's all-reduce of @a (its dtype, op, count, communicator,
 * timeout) from @in into @out (MPI_IN_PLACE when they are one), polled against the timeout, MEAN's
 * division after; 0 when done, else the failure recorded in *a->status. */
int starfold__group_mpi_allreduce(const starfold__mpi_task_arg_t *a, const void *in, void *out);
/* group_mpi_task.c, inside a task, the steps of starfold__group_mpi_allreduce() for a task that
 * makes its calls itself (group_pack.c): how many requests @a's calls may need at most; one call of
 * @count elements posted from @in into @out (in place when they are one), its requests appended at
 * @rq[*@n]; all @n completed, polled against the timeout. 0, or -1 with the failure in *a->status. */
size_t starfold__group_mpi_requests(const starfold__mpi_task_arg_t *a);
int starfold__group_mpi_post(const starfold__mpi_task_arg_t *a, const void *in, void *out, size_t count, MPI_Request *rq,
                             size_t *n);
int starfold__group_mpi_wait(const starfold__mpi_task_arg_t *a, MPI_Request *rq, size_t n);
/* group_mpi_task.c: submits an MPI task of @fn's collective (@which names it in the message);
 * refused, it breaks the group. */
starfold_status_t starfold__group_mpi_task_submit(starfold_group_t g, struct starpu_task *task, const char *fn,
                                                  const char *which);

/* group_layout.c: how the MPI step of @p reaches its views: sets p->direct (and p->runs), or
 * *@packed, or p->relay (and p->runs' outputs), or none of them (the leaders); checks the views an
 * MPI task will touch itself. */
starfold_status_t starfold__group_layout(const char *fn, starfold_group_t g, starfold__plan_t *p, int *packed);
/* group_cuts.c: the MPI calls of each dtype of @p (p->cuts, p->ncuts), the same on every rank. */
starfold_status_t starfold__group_cuts(starfold_group_t g, starfold__plan_t *p);
/* group_cuts.c: the piece the calls are cut at, in bytes (0: one call per dtype). */
size_t starfold__group_piece_bytes(starfold_group_t g);
/* group_pack.c: the packed plan's layout (every input and output handle of each dtype, listed once)
 * into p->pack, and the group's staging buffer grown to its largest dtype; @p has one device. */
starfold_status_t starfold__group_pack_make(starfold_group_t g, starfold__plan_t *p);
/* group_pack.c: one task per dtype: pack, MPI's all-reduce, unpack (@status: the run's shared one). */
starfold_status_t starfold__group_pack_submit(starfold_group_t g, starfold__plan_t *p, int *status);
/* group_pack.c: frees p->pack (left to StarPU when the plan was abandoned). */
void starfold__group_pack_free(starfold__plan_t *p);

/* group_allreduce.c: a group that can take part (not NULL, not broken). */
starfold_status_t starfold__group_usable(const char *fn, starfold_group_t group);
/* group_allreduce.c: the all-reduce over views, without the usable check (the progress thread's). */
starfold_status_t starfold__group_all_reduce_run(const char *fn, starfold_group_t group, starfold_op_t op,
                                                 size_t num_tensors, const starfold_tensor_desc_t *tensors,
                                                 const starfold_view_t *inputs, const starfold_view_t *outputs,
                                                 starfold_status_t st);
/* group_allreduce.c: handles as whole views (NULL for NULL handles); NULL when out of memory. */
starfold_view_t *starfold__group_whole_views(size_t n, const starpu_data_handle_t *handles);
/* group_allreduce.c: what this rank prepares alone; the result is its verdict (@st: so far). */
starfold_status_t starfold__group_plan_make(const char *fn, starfold_group_t g, starfold_op_t op, size_t nt,
                                            const starfold_tensor_desc_t *tensors, const starfold_view_t *inputs,
                                            const starfold_view_t *outputs, starfold_status_t st, starfold__plan_t *p);
/* group_allreduce.c: one run of @p (both rounds of the agreement, then steps 2-4); @st: this rank's
 * verdict (plan_make()'s). */
starfold_status_t starfold__group_plan_run(const char *fn, starfold_group_t group, starfold__plan_t *p, starfold_status_t st);
/* group_allreduce.c: frees what plan_make made (not what a timeout left to StarPU). */
void starfold__group_plan_free(starfold_group_t g, starfold__plan_t *p);

#endif /* STARFOLD_SRC_MPI_GROUP_PLAN_H */
