/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Process groups over MPI (starfold/mpi.h): who is in the group, which node each rank is on, how
 * many devices each brings, and StarPU-MPI's lifetime.
 *
 * Creation is collective and every failure is agreed on before anyone returns, so no rank leaves
 * while another waits:
 *
 *   1. local checks that every rank makes alike (MPI initialised, MPI_THREAD_MULTIPLE, a communicator);
 *   2. one MPI_Allgather on a duplicate of the caller's communicator (errors returned, not fatal) of
 *      {options, device count}: a rank whose options differ from rank 0's fails every rank, named;
 *   3. nodes: forced (rank / ranks_per_node), or the ranks sharing memory (MPI_Comm_split_type) and
 *      a network namespace (a node of tests/netns/cluster.sh shares the machine's memory with the
 *      others but reaches them only over its own link), numbered by their lowest rank: an
 *      MPI_Allgather of each rank's node leader;
 *   4. the links between ranks (group_links.c): a short ping-pong from rank 0, broadcast, unless the
 *      options give them;
 *   5. StarPU-MPI: started with the process's first group over a second duplicate (StarPU-MPI keeps
 *      the communicator it was started with for the life of the process), counted, stopped with the
 *      last group unless the application started it.
 *
 * Every exchange of steps 2 to 4, and the duplicates, is posted non-blocking and waited for at most
 * the options' timeout_seconds (group_bounded.c), so that a rank that never comes, stops or loses
 * its link ends creation in ::STARFOLD_ERR_TIMEOUT on every other rank instead of a wait without end.
 * Two calls stay blocking, each once every rank has passed the agreement of step 2: MPI has no
 * non-blocking MPI_Comm_split_type (step 3), and StarPU-MPI's start (step 5) duplicates a
 * communicator under a process-wide lock.
 *
 *     ranks   0  1  2  3          ranks_per_node = 2        node of rank: 0 0 1 1
 *     comm    |--caller's--|      dups: agreement (g->comm), StarPU-MPI (process-wide)
 *
 * Ownership: the group owns its duplicates and its tables; the process-wide StarPU-MPI duplicate is
 * owned by the count of live groups (spmpi_lock guards both). StarPU-MPI 1.3 keeps every
 * communicator it has carried a message on, with a receive posted on it, until it shuts down (it has
 * no way to forget one): a group's data communicator is therefore freed only when StarPU-MPI stops
 * (the last group that started it goes), never under it (its progress thread would repost on a freed
 * communicator and crash in MPI_Irecv); with StarPU-MPI started by the application, it is left to
 * MPI_Finalize.
 */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <starpu_mpi.h>

#include "base/common.h"
#include "mpi/group.h"
#include "topology/topology.h"

static pthread_mutex_t spmpi_lock = PTHREAD_MUTEX_INITIALIZER;
static int spmpi_groups;               /* live groups that started StarPU-MPI or share it */
static MPI_Comm spmpi_comm = MPI_COMM_NULL;
static MPI_Comm *spmpi_retired;        /* data communicators of destroyed groups, freed after StarPU-MPI */
static size_t spmpi_nretired, spmpi_retired_cap;

STARFOLD_API void starfold_group_options_init(starfold_group_options_t *options)
{
    if (!options) return;
    memset(options, 0, sizeof *options);
    options->stall_warning_seconds = 60.0; /* Horovod's */
}

/* The text of an MPI error code. */
static const char *mpi_text(int err, char *buf, int size)
{
    int len = 0;
    if (MPI_Error_string(err, buf, &len) != MPI_SUCCESS) snprintf(buf, (size_t)size, "MPI error %d", err);
    return buf;
}

static starfold_status_t mpi_fail(const char *fn, const char *what, int err)
{
    char buf[MPI_MAX_ERROR_STRING];
    return starfold__error(STARFOLD_ERR_RUNTIME, "%s: %s failed: %s", fn, what, mpi_text(err, buf, sizeof buf));
}

/* Whether this process can talk to the others at all: MPI running, a communicator. Every rank of a
 * launch sees the same, so a refusal here needs no agreement. */
static starfold_status_t check_mpi(const char *fn, MPI_Comm comm)
{
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: MPI is %s: call MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) before, and "
                               "MPI_Finalize() after, every group",
                               fn, finalized ? "already finalised" : "not initialised");
    if (comm == MPI_COMM_NULL) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: MPI_COMM_NULL", fn);
    return STARFOLD_OK;
}

/* Step 1: this rank's own arguments; its verdict is shared with the others before anyone returns. */
static starfold_status_t check_local(const char *fn, starfold_context_t context, const starfold_group_options_t *o,
                                     const starfold_group_t *group)
{
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_MULTIPLE)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: MPI was initialised below MPI_THREAD_MULTIPLE (level %d); StarPU-MPI's thread and "
                               "starfold's both call MPI: use MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...)",
                               fn, level);
    if (!context) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL context", fn);
    if (!group) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL group", fn);
    if (o->ranks_per_node < 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: ranks_per_node must be >= 0, got %d", fn,
                               o->ranks_per_node);
    const double bw[2] = { o->network_bandwidth_GBps, o->shm_bandwidth_GBps }, lat[2] = { o->network_latency_us,
                                                                                       o->shm_latency_us };
    for (int k = 0; k < 2; k++) {
        const char *which = k ? "shm" : "network";
        if (!(bw[k] == 0 || (bw[k] >= STARFOLD_LINK_BANDWIDTH_MIN_GBPS && bw[k] <= STARFOLD_LINK_BANDWIDTH_MAX_GBPS)))
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s_bandwidth_GBps must be 0 (measure) or in "
                                   "[%g, %g], got %g", fn, which, STARFOLD_LINK_BANDWIDTH_MIN_GBPS,
                                   STARFOLD_LINK_BANDWIDTH_MAX_GBPS, bw[k]);
        if (!(lat[k] >= 0 && lat[k] <= STARFOLD_LINK_LATENCY_MAX_US))
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %s_latency_us must be 0 (measure) or in (0, %g], "
                                   "got %g", fn, which, STARFOLD_LINK_LATENCY_MAX_US, lat[k]);
    }
    if (!(o->timeout_seconds >= 0) || !(o->stall_warning_seconds >= 0))
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "%s: timeout_seconds and stall_warning_seconds must be >= 0 (0 or infinity: none), got "
                               "%g and %g",
                               fn, o->timeout_seconds, o->stall_warning_seconds);
    return STARFOLD_OK;
}

/* One rank's contribution to the agreement of step 2. */
typedef struct hello {
    int status;          /* this rank's local verdict (a starfold_status_t) */
    int ranks_per_node;
    int started_by_caller;
    int num_devices;
} hello_t;

/* The link options, in the order the agreement compares them, and STARFOLD_MPI_PIECE_BYTES (-1: unset). */
#define NUM_LINK_OPTIONS 5
static const char *const link_option_names[NUM_LINK_OPTIONS] = { "network_bandwidth_GBps", "network_latency_us",
                                                                  "shm_bandwidth_GBps", "shm_latency_us",
                                                                  "STARFOLD_MPI_PIECE_BYTES" };

/* STARFOLD_MPI_PIECE_BYTES (group_cuts.c): bytes >= 0, or -1 when unset or not a number. */
static double piece_from_env(void)
{
    const char *v = getenv("STARFOLD_MPI_PIECE_BYTES");
    char *end = NULL;
    const double b = v && *v ? strtod(v, &end) : -1;
    return end && *end == '\0' && b >= 0 && b < 1e15 ? floor(b) : -1;
}

/* Step 2: everyone's verdict, options and device count; the first rank whose differ fails all. */
static starfold_status_t agree(const char *fn, starfold_group_t g, const hello_t *mine, hello_t *all,
                               const double *my_links, double *all_links, double limit, int *abandoned)
{
    MPI_Request rq[2] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL };
    int err = MPI_Iallgather(mine, 4, MPI_INT, all, 4, MPI_INT, g->comm, &rq[0]);
    if (err == MPI_SUCCESS)
        err = MPI_Iallgather(my_links, NUM_LINK_OPTIONS, MPI_DOUBLE, all_links, NUM_LINK_OPTIONS, MPI_DOUBLE, g->comm,
                             &rq[1]);
    if (err == MPI_SUCCESS) err = starfold__mpi_wait_bounded(2, rq, limit, 0);
    *abandoned = err != MPI_SUCCESS; /* @all and @all_links may still be written */
    if (err == STARFOLD__WAIT_EXPIRED) return starfold__creation_expired(fn, "the agreement on its options", limit);
    if (err != MPI_SUCCESS) return mpi_fail(fn, "MPI_Iallgather", err);
    for (int r = 0; r < g->size; r++)
        if (all[r].status != STARFOLD_OK)
            return starfold__error((starfold_status_t)all[r].status, "%s: rank %d refused its arguments%s", fn, r,
                                   r == g->rank ? " (this rank)" : "; see its message");
    for (int r = 1; r < g->size; r++)
        if (all[r].ranks_per_node != all[0].ranks_per_node || all[r].started_by_caller != all[0].started_by_caller)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                   "%s: rank %d gives other options than rank 0 (ranks_per_node %d vs %d, "
                                   "starpu_mpi_started_by_caller %d vs %d): every rank must give the same",
                                   fn, r, all[r].ranks_per_node, all[0].ranks_per_node, all[r].started_by_caller,
                                   all[0].started_by_caller);
    for (int r = 1; r < g->size; r++)
        for (int k = 0; k < NUM_LINK_OPTIONS; k++)
            if (memcmp(&all_links[r * NUM_LINK_OPTIONS + k], &all_links[k], sizeof(double)) != 0)
                return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                       "%s: rank %d gives other options than rank 0 (%s %g vs %g): every rank must "
                                       "give the same", fn, r, link_option_names[k], all_links[r * NUM_LINK_OPTIONS + k],
                                       all_links[k]);
    for (int r = 0; r < g->size; r++) g->devices_of[r] = all[r].num_devices;
    return STARFOLD_OK;
}

/* Nodes numbered from their leaders (@stride-th of each rank's leaders in @leaders): a node's number
 * is the count of distinct leaders below its own. */
static int number_nodes(int size, const int *leaders, int stride, int *node_of)
{
    int count = 0;
    for (int r = 0; r < size; r++) {
        int below = 0;
        for (int q = 0; q < size; q++) {
            int first = 1; /* count each leader once: at its first appearance */
            for (int p = 0; p < q; p++) first &= leaders[p * stride] != leaders[q * stride];
            below += first && leaders[q * stride] < leaders[r * stride];
        }
        node_of[r] = below;
        if (below + 1 > count) count = below + 1;
    }
    return count;
}

/* This process's network namespace (Linux: the inode of /proc/self/ns/net); 0 where there is none to
 * tell, which puts every rank of a machine in one. */
static unsigned long long net_namespace(void)
{
    struct stat st;
    return stat("/proc/self/ns/net", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

/*
 * Step 3: the node of every rank, forced (rank / ranks_per_node) or the ranks sharing memory and a
 * network namespace, and the ranks sharing memory and a namespace in any case (the cost model's
 * ports: faked nodes on one machine share one memory, whatever the node numbers say; namespaces that
 * share the machine's memory still send each other their bytes over the network, as MPI is told to
 * when it runs them). Each numbered by its lowest rank.
 */
static starfold_status_t find_nodes(const char *fn, starfold_group_t g, int ranks_per_node, double limit)
{
    int *leaders = malloc(sizeof *leaders * 2 * (size_t)g->size); /* [r * 2] node, [r * 2 + 1] memory */
    if (!leaders) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    int mine[2] = { g->rank, g->rank }, err;
    MPI_Comm node = MPI_COMM_NULL;
    err = MPI_Comm_split_type(g->comm, MPI_COMM_TYPE_SHARED, g->rank, MPI_INFO_NULL, &node);
    if (err == MPI_SUCCESS) { /* within the memory, the lowest rank of this rank's namespace */
        int nsize = 0;
        err = MPI_Comm_size(node, &nsize);
        unsigned long long *ns = err == MPI_SUCCESS ? malloc(sizeof *ns * (size_t)nsize) : NULL;
        int *ranks = ns ? malloc(sizeof *ranks * (size_t)nsize) : NULL;
        const unsigned long long me = net_namespace();
        MPI_Request rq[2] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL };
        if (err == MPI_SUCCESS && !ranks) err = MPI_ERR_NO_MEM;
        if (err == MPI_SUCCESS)
            err = MPI_Iallgather(&me, 1, MPI_UNSIGNED_LONG_LONG, ns, 1, MPI_UNSIGNED_LONG_LONG, node, &rq[0]);
        if (err == MPI_SUCCESS) err = MPI_Iallgather(&g->rank, 1, MPI_INT, ranks, 1, MPI_INT, node, &rq[1]);
        if (err == MPI_SUCCESS) err = starfold__mpi_wait_bounded(2, rq, limit, 0);
        for (int i = 0; err == MPI_SUCCESS && i < nsize; i++)
            if (ns[i] == me && ranks[i] < mine[1]) mine[1] = ranks[i];
        if (err != STARFOLD__WAIT_EXPIRED) { /* else abandoned: MPI may still write them */
            free(ns);
            free(ranks);
        }
    }
    if (node != MPI_COMM_NULL) MPI_Comm_free(&node); /* an abandoned exchange on it completes or not: MPI's */
    if (err == STARFOLD__WAIT_EXPIRED) {
        free(leaders);
        return starfold__creation_expired(fn, "the exchange of the namespaces of a node's ranks", limit);
    }
    if (err != MPI_SUCCESS) {
        free(leaders);
        return mpi_fail(fn, "finding the ranks that share memory", err);
    }
    mine[0] = ranks_per_node > 0 ? g->rank - g->rank % ranks_per_node : mine[1];
    MPI_Request rq = MPI_REQUEST_NULL;
    err = MPI_Iallgather(mine, 2, MPI_INT, leaders, 2, MPI_INT, g->comm, &rq);
    if (err == MPI_SUCCESS) err = starfold__mpi_wait_bounded(1, &rq, limit, 0);
    if (err == STARFOLD__WAIT_EXPIRED) /* @leaders abandoned */
        return starfold__creation_expired(fn, "the exchange of the nodes", limit);
    if (err != MPI_SUCCESS) {
        free(leaders);
        return mpi_fail(fn, "MPI_Iallgather of the nodes", err);
    }
    g->num_nodes = number_nodes(g->size, leaders, 2, g->node_of);
    number_nodes(g->size, leaders + 1, 2, g->memory_of);
    free(leaders);
    return STARFOLD_OK;
}

/* Step 5: StarPU-MPI, started once per process (unless the application did). */
static starfold_status_t start_starpu_mpi(const char *fn, starfold_group_t g, MPI_Comm comm, int by_caller)
{
    if (by_caller) return STARFOLD_OK;
    starfold_status_t st = STARFOLD_OK;
    pthread_mutex_lock(&spmpi_lock);
    if (spmpi_groups == 0) {
        int err = MPI_Comm_dup(comm, &spmpi_comm);
        if (err == MPI_SUCCESS) MPI_Comm_set_errhandler(spmpi_comm, MPI_ERRORS_RETURN);
        if (err != MPI_SUCCESS) {
            st = mpi_fail(fn, "MPI_Comm_dup for StarPU-MPI", err);
        } else if ((err = starpu_mpi_init_comm(NULL, NULL, 0, spmpi_comm)) != 0) {
            MPI_Comm_free(&spmpi_comm);
            st = starfold__error(STARFOLD_ERR_RUNTIME, "%s: starpu_mpi_init_comm failed (%d)", fn, err);
        }
    }
    if (st == STARFOLD_OK) {
        spmpi_groups++;
        g->started_spmpi = 1;
    }
    pthread_mutex_unlock(&spmpi_lock);
    return st;
}

/* The group's data communicator kept until StarPU-MPI stops (see the top); 0, or -1 out of memory. */
static int retire_data_comm(starfold_group_t g)
{
    if (g->data_comm == MPI_COMM_NULL) return 0;
    if (SF_GROW(spmpi_retired, spmpi_nretired + 1, spmpi_retired_cap) != 0) return -1;
    spmpi_retired[spmpi_nretired++] = g->data_comm;
    g->data_comm = MPI_COMM_NULL;
    return 0;
}

static void stop_starpu_mpi(starfold_group_t g)
{
    if (!g->started_spmpi) return;
    pthread_mutex_lock(&spmpi_lock);
    /* Out of memory: freed now, as before (safe unless another group keeps StarPU-MPI running). */
    if (retire_data_comm(g) != 0 && g->data_comm != MPI_COMM_NULL) MPI_Comm_free(&g->data_comm);
    if (--spmpi_groups == 0) {
        starpu_mpi_shutdown();
        MPI_Comm_free(&spmpi_comm);
        for (size_t i = 0; i < spmpi_nretired; i++) MPI_Comm_free(&spmpi_retired[i]);
        free(spmpi_retired);
        spmpi_retired = NULL;
        spmpi_nretired = spmpi_retired_cap = 0;
    }
    pthread_mutex_unlock(&spmpi_lock);
    g->started_spmpi = 0;
}

static void group_free(starfold_group_t g)
{
    if (!g) return;
    starfold__group_collectives_release(g);
    if (g->comm != MPI_COMM_NULL) MPI_Comm_free(&g->comm);
    /* Still here: a broken group's, which may have abandoned requests on it (an MPI_Iallreduce, or
     * StarPU-MPI receives its progress thread posts later), or one StarPU-MPI started by the
     * application may still use (see the top): left to MPI_Finalize or the abort. A group whose
     * creation failed before StarPU-MPI carried anything frees it. */
    if (g->data_comm != MPI_COMM_NULL && !g->broken && !g->spmpi_seen) MPI_Comm_free(&g->data_comm);
    free(g->node_of);
    free(g->memory_of);
    free(g->devices_of);
    free(g->heard);
    pthread_mutex_destroy(&g->async_lock);
    pthread_cond_destroy(&g->async_work);
    pthread_cond_destroy(&g->async_done);
    free(g);
}

/* The group's two duplicates of @comm (g->comm, g->data_comm), errors returned on both. On an expired
 * or failed wait the block MPI writes them into is abandoned (group_bounded.c). */
static starfold_status_t duplicate(const char *fn, starfold_group_t g, MPI_Comm comm, double limit)
{
    MPI_Comm *dups = malloc(2 * sizeof *dups);
    if (!dups) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    MPI_Request rq[2] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL };
    int err = MPI_Comm_idup(comm, &dups[0], &rq[0]);
    if (err == MPI_SUCCESS) err = MPI_Comm_idup(comm, &dups[1], &rq[1]);
    if (err == MPI_SUCCESS) err = starfold__mpi_wait_bounded(2, rq, limit, 0);
    if (err == STARFOLD__WAIT_EXPIRED) return starfold__creation_expired(fn, "its start (MPI_Comm_idup)", limit);
    if (err != MPI_SUCCESS) return mpi_fail(fn, "MPI_Comm_idup", err);
    g->comm = dups[0];
    g->data_comm = dups[1];
    free(dups);
    MPI_Comm_set_errhandler(g->comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(g->data_comm, MPI_ERRORS_RETURN);
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_group_create(starfold_context_t context, MPI_Comm comm,
                                                     const starfold_group_options_t *options, starfold_group_t *group)
{
    static const char fn[] = "starfold_group_create";
    starfold_group_options_t o;
    if (options) o = *options;
    else starfold_group_options_init(&o);
    starfold_status_t st = check_mpi(fn, comm);
    if (st != STARFOLD_OK) return st;
    st = check_local(fn, context, &o, group);
    char mine_msg[512];
    snprintf(mine_msg, sizeof mine_msg, "%s", st != STARFOLD_OK ? starfold_last_error() : "");

    starfold_group_t g = calloc(1, sizeof *g);
    if (!g) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    pthread_mutex_init(&g->async_lock, NULL);
    pthread_cond_init(&g->async_work, NULL);
    pthread_cond_init(&g->async_done, NULL);
    g->comm = MPI_COMM_NULL;
    g->data_comm = MPI_COMM_NULL;
    g->ctx = context;
    const double limit = starfold__creation_limit(&o);
    starfold_status_t duped = duplicate(fn, g, comm, limit);
    if (duped != STARFOLD_OK) {
        group_free(g);
        return duped;
    }
    MPI_Comm_rank(g->comm, &g->rank);
    MPI_Comm_size(g->comm, &g->size);
    g->node_of = calloc((size_t)g->size, sizeof *g->node_of);
    g->memory_of = calloc((size_t)g->size, sizeof *g->memory_of);
    g->devices_of = calloc((size_t)g->size, sizeof *g->devices_of);
    g->heard = malloc(sizeof *g->heard * (size_t)g->size);
    for (int r = 0; g->heard && r < g->size; r++) g->heard[r] = -1;
    g->beacon = -1;
    hello_t *all = calloc((size_t)g->size, sizeof *all);
    double *all_links = calloc((size_t)g->size * NUM_LINK_OPTIONS, sizeof *all_links);
    const double my_links[NUM_LINK_OPTIONS] = { o.network_bandwidth_GBps, o.network_latency_us, o.shm_bandwidth_GBps,
                                                o.shm_latency_us, piece_from_env() };
    g->piece_bytes = (long long)my_links[4]; /* the same on every rank once agreed */
    const hello_t hello = { (int)st, o.ranks_per_node, o.starpu_mpi_started_by_caller,
                            context ? starfold_context_num_devices(context) : 0 };
    int abandoned = 0;
    starfold_status_t agreed = !g->node_of || !g->memory_of || !g->devices_of || !g->heard || !all || !all_links
                                   ? starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn)
                                   : agree(fn, g, &hello, all, my_links, all_links, limit, &abandoned);
    if (!abandoned) {
        free(all);
        free(all_links);
    }
    /* This rank's own refusal keeps its own words. */
    if (st != STARFOLD_OK && agreed != STARFOLD_ERR_TIMEOUT) agreed = starfold__error(st, "%s", mine_msg);
    if (agreed == STARFOLD_OK) agreed = find_nodes(fn, g, o.ranks_per_node, limit);
    /* The links between ranks: starfold_topology_ranks()'s defaults, then the options' or measured
     * values (before StarPU-MPI's thread competes for the cores). */
    starfold__ranks_default_links(&g->shm_link, &g->network_link);
    if (agreed == STARFOLD_OK) agreed = starfold__group_links(g, &o);
    if (agreed == STARFOLD_OK) agreed = start_starpu_mpi(fn, g, comm, o.starpu_mpi_started_by_caller);
    if (agreed == STARFOLD_OK) g->spmpi_seen = 1; /* from the hops on: StarPU-MPI may hold data_comm */
    /* A hop that timed out leaves a StarPU-MPI request pending: StarPU-MPI cannot be stopped under it. */
    if (agreed == STARFOLD_OK && (agreed = starfold__group_hops(g, &o)) != STARFOLD_OK && agreed != STARFOLD_ERR_TIMEOUT)
        stop_starpu_mpi(g);
    if (agreed == STARFOLD_OK) {
        g->timeout_seconds = o.timeout_seconds;
        g->stall_warning_seconds = o.stall_warning_seconds;
        for (int r = 0; r < g->size; r++) g->total_devices += g->devices_of[r];
        /* STARFOLD_MPI_LOWERING picks the lowering of a whole job (as starfold_group_set_lowering()). */
        const char *lowering = getenv("STARFOLD_MPI_LOWERING");
        if (lowering && *lowering && starfold_group_set_lowering(g, lowering) != STARFOLD_OK)
            fprintf(stderr, "starfold: STARFOLD_MPI_LOWERING: %s; using auto\n", starfold_last_error());
    }
    if (agreed != STARFOLD_OK) {
        group_free(g);
        return agreed;
    }
    *group = g;
    return STARFOLD_OK;
}

STARFOLD_API void starfold_group_destroy(starfold_group_t group)
{
    if (!group) return;
    starfold__group_async_stop(group); /* the queued collectives run first, in order */
    /* Collective: no rank stops StarPU-MPI while another may still send to it. A broken group
     * (a rank never joined) cannot meet: it is freed without waiting, StarPU-MPI left running. */
    if (!group->broken) starfold__group_notice(group);
    if (!group->broken) starfold__group_collectives_wait(group);
    if (group->broken) {
        group_free(group);
        return;
    }
    /* Bounded as the collectives are: a rank lost now breaks the group, freed as above. */
    MPI_Request rq = MPI_REQUEST_NULL;
    const int err = MPI_Ibarrier(group->comm, &rq);
    if (err != MPI_SUCCESS || starfold__mpi_wait_bounded(1, &rq, group->timeout_seconds, 0) != MPI_SUCCESS) {
        group->broken = 1;
        group_free(group);
        return;
    }
    starfold__group_stall_end(group); /* beacons sent to this rank, received */
    stop_starpu_mpi(group);
    group_free(group);
}

STARFOLD_API int starfold_group_rank(starfold_group_t group) { return group ? group->rank : -1; }
STARFOLD_API int starfold_group_size(starfold_group_t group) { return group ? group->size : 0; }
STARFOLD_API int starfold_group_num_nodes(starfold_group_t group) { return group ? group->num_nodes : 0; }
STARFOLD_API starfold_context_t starfold_group_context(starfold_group_t group) { return group ? group->ctx : NULL; }

STARFOLD_API int starfold_group_node(starfold_group_t group, int rank)
{
    return group && rank >= 0 && rank < group->size ? group->node_of[rank] : -1;
}

STARFOLD_API int starfold_group_num_devices(starfold_group_t group, int rank)
{
    return group && rank >= 0 && rank < group->size ? group->devices_of[rank] : -1;
}
