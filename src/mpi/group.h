/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The process layer (src/mpi): a process group's state (group.c), shared with its collectives
 * (group_allreduce.c and the rest of this folder). Private; the executor never includes it.
 */
#ifndef STARFOLD_SRC_MPI_GROUP_H
#define STARFOLD_SRC_MPI_GROUP_H

#include <pthread.h>

#include <starpu.h>
#include <starfold/mpi.h>

struct starfold_group {
    starfold_context_t ctx;
    MPI_Comm comm;          /* starfold's own duplicate: agreement between ranks (point to point) */
    MPI_Comm data_comm;     /* another duplicate: the collectives' data (MPI_Allreduce in tasks) */
    int rank, size;
    int num_nodes;
    int *node_of;           /* [size] */
    int *memory_of;         /* [size] the ranks sharing memory (MPI_Comm_split_type), numbered as nodes: the
                             * nodes themselves unless ranks_per_node fakes them on one machine */
    int *devices_of;        /* [size] */
    int total_devices;      /* replicas of all ranks */
    /* The links between ranks (starfold_topology_ranks()): inside a node (kind SHM) and between nodes
     * (kind NETWORK). Defaults until measured at creation or given in the options. */
    starfold_link_t shm_link, network_link;
    /* One message through StarPU-MPI inside a node [0] and between nodes [1], one way, in us, measured
     * at creation (0: not measured, or the latency was given): what a graph lowering's edge costs. */
    double hop_us[2];
    long long piece_bytes;  /* STARFOLD_MPI_PIECE_BYTES, agreed at creation; -1: from the links (group_cuts.c) */
    int started_spmpi;      /* this group counted in the process's StarPU-MPI users */
    int spmpi_seen;         /* StarPU-MPI may have carried messages on data_comm (group.c: never freed under it) */
    double timeout_seconds;       /* agreement: 0 or infinity = wait forever */
    double stall_warning_seconds; /* agreement: warn once after this long (0 = never) */
    /* collectives (group_allreduce.c) */
    int lowering;           /* SF_LOWER_* the caller chose (starfold_group_set_lowering()) */
    int last_lowering;      /* the one the last all-reduce ran */
    const char *last_plan;  /* how it reached this rank's views (starfold_group_last_plan()); NULL before */
    uint64_t call_batch;    /* the batch the current all-reduce is one call of (0: none), compared by the
                               agreement (starfold__group_all_reduce_views_with()) */
    /* auto's last decisions (group_lowering.c), so that a loop's every step does not compile and
     * simulate every graph lowering again: the same sizes and op always decide alike. */
#define SF_AUTO_CHOICES 8
    struct starfold__auto_choice {
        int used;
        starfold_op_t op;
        size_t totals[STARFOLD_DTYPE_COUNT];
        int lowering;
        double us;
    } auto_choice[SF_AUTO_CHOICES];
    int auto_next;
    long sequence;          /* collectives this rank entered */
    int broken;             /* a collective timed out: every later call fails at once */
    long notice;            /* the buffer of the "broken" notices this rank sent */
    long beacon;            /* the buffer of the stall beacons this rank sent (group_stall.c); -1: none */
    long *heard;            /* [size] the highest collective each rank's beacon named; -1: none */
    starfold_topology_t ranks;    /* one device per rank (starfold_topology_ranks()), lazily made */
    starfold_topology_t local;    /* this rank's devices as the context sees them (lazily made) */
    starpu_data_handle_t token;   /* orders the MPI tasks as submitted (STARPU_RW), lazily registered */
    int token_value;
    void *stage;            /* the packed plan's staging buffer (group_pack.c): input then result, */
    size_t stage_bytes;     /* stage_bytes each; one serves every MPI task, which the token orders */
    /* Asynchronous collectives (group_async.c): queued in call order, run one after the other by one
     * progress thread of the group (started by the first); the group's other calls wait until the
     * queue is empty. The lock and conditions are made with the group. */
    pthread_mutex_t async_lock;
    pthread_cond_t async_work, async_done;
    pthread_t progress;
    int progress_started, progress_stop;
    struct starfold_group_request *queue_head, *queue_tail;
    int async_pending;      /* queued or running */
    int test_no_pack;       /* testing hook (tests/mpi/test_group.c): several devices never pack, so that
                             * buckets relay and a vector per tensor goes through the leaders (MPI in
                             * place there) on one worker too, as on devices with workers or memory
                             * of their own */
};

/* How an all-reduce crosses ranks (starfold_group_set_lowering()). */
/* The names of the SF_LOWER_* in order, for messages. */
#define STARFOLD__LOWERING_NAMES "auto, mpi, ring, halving-doubling, hierarchical, leader"
enum { SF_LOWER_AUTO = 0, SF_LOWER_MPI, SF_LOWER_RING, SF_LOWER_HALVING_DOUBLING, SF_LOWER_HIERARCHICAL,
       SF_LOWER_LEADER, SF_LOWER_COUNT };

/*
 * Runs @graph, compiled on the group's rank topology (device r = rank r), on this rank: its INPUT
 * and OUTPUT buffers of tensor t are inputs[t] and outputs[t] (distinct handles), its cross-rank
 * edges StarPU-MPI sends and receives on the data communicator with tags from @tag_base up, its
 * tasks StarPU CPU tasks (rank_graph.c). Every rank calls it with the same graph; blocks until this
 * rank's part is done, or fails with STARFOLD_ERR_TIMEOUT after the group's timeout_seconds: then the
 * handles are left partitioned and in use, and must never be unregistered (the group is broken).
 */
starfold_status_t starfold__rank_graph_run(starfold_group_t g, starfold_graph_t graph, const starpu_data_handle_t *inputs,
                                           const starpu_data_handle_t *outputs, int64_t tag_base);

/*
 * group_lowering.c: how an all-reduce of these per-dtype fusion sizes crosses ranks. *@lowering gets
 * SF_LOWER_MPI or a graph lowering (the group's choice, or the model's for auto; MPI for one
 * rank) and, for a graph lowering, *@graph its graph across ranks (an all-reduce with @op, MEAN given
 * as SUM and divided after, of one tensor per dtype with elements, in dtype order), owned by the
 * caller; NULL for MPI.
 */
starfold_status_t starfold__group_lower(starfold_group_t g, starfold_op_t op, const size_t *totals, int *lowering,
                                        starfold_graph_t *graph);
const char *starfold__lowering_name(int lowering);

/* Measures the links between ranks at creation unless @o gives them (group_links.c): collective, on
 * every rank, after the nodes are known; every rank ends with rank 0's values. */
starfold_status_t starfold__group_links(starfold_group_t g, const starfold_group_options_t *o);
/*
 * rank_graph.c: polls until no task, send or receive holds any of the @n handles @h (NULLs skipped),
 * without blocking the caller in StarPU: 0, or -1 once @limit seconds have passed since @t0 (0 or
 * infinity: no limit), @t0 read from starfold__now_s().
 */
int starfold__handles_free_by(const starpu_data_handle_t *h, size_t n, double t0, double limit,
                              starfold_group_t g, const char *what);

/*
 * group_stall.c: the stall warning of a wait after the agreement, which names the ranks that sent no
 * word of waiting too. begin() when the wait starts (@what: what it waits for, in the message),
 * poll() while it lasts (the caller's thread), end() when the group is destroyed (beacons left).
 */
typedef struct starfold__stall {
    double t0;
    double beacon_at; /* seconds into the wait: this rank's beacon goes out */
    int warn;         /* a stall warning is due at stall_warning_seconds */
    int state;        /* 0 waiting, 1 beacon sent, 2 warned or nothing to do */
    const char *what;
} starfold__stall_t;
void starfold__group_stall_begin(starfold_group_t g, starfold__stall_t *s, const char *what);
void starfold__group_stall_poll(starfold_group_t g, starfold__stall_t *s);
/* The ranks that sent no beacon for the current collective, listed in @who; their number. */
int starfold__group_stall_silent(starfold_group_t g, char *who, size_t len);
/* For a timeout's message: "; rank 2 sent no word of waiting for it (...)" (or that all did). */
const char *starfold__group_stall_suffix(starfold_group_t g, char *buf, size_t len);
void starfold__group_stall_end(starfold_group_t g);
/*
 * group_bounded.c: the waits of starfold_group_create(). Waits for the @n requests @rq, napping
 * between polls (or polling busily, @busy, for a timed ping-pong), at most @limit seconds (0 or
 * infinity: no limit): MPI_SUCCESS, MPI's error, or STARFOLD__WAIT_EXPIRED with the requests left
 * pending, and what they read or write must then never be freed.
 */
#define STARFOLD__WAIT_EXPIRED (-1)
int starfold__mpi_wait_bounded(int n, MPI_Request *rq, double limit, int busy);
/* How long each wait of creation may last: the options' timeout_seconds if it is one (> 0, finite), else 0. */
double starfold__creation_limit(const starfold_group_options_t *o);
/* ::STARFOLD_ERR_TIMEOUT: not every rank reached @step of creation within @limit seconds. */
starfold_status_t starfold__creation_expired(const char *fn, const char *step, double limit);
/* group_links.c: times a StarPU-MPI message between the same ranks (g->hop_us); collective, after
 * StarPU-MPI is started. */
starfold_status_t starfold__group_hops(starfold_group_t g, const starfold_group_options_t *o);

/* The group's collectives' resources: waits for the MPI tasks, releases the token and topology. */
void starfold__group_collectives_wait(starfold_group_t g);
/* group_async.c: waits until the group's queued asynchronous collectives are done (nothing when
 * called by its progress thread, which runs them); every other call of the group does first. */
void starfold__group_async_quiesce(starfold_group_t group);
/* group_async.c: the queue drained and the progress thread ended (starfold_group_destroy()). */
void starfold__group_async_stop(starfold_group_t group);
void starfold__group_collectives_release(starfold_group_t g);
/* Receives a "broken" notice another rank sent (its rank, the group marked broken), else -1. */
int starfold__group_notice(starfold_group_t g);

#endif /* STARFOLD_SRC_MPI_GROUP_H */
