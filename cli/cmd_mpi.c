/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * starfold run --mpi and starfold bench --mpi: the same commands across the ranks of mpirun, over a
 * process group (<starfold/mpi.h>).
 *
 *     mpirun -np N starfold run --mpi [--ranks-per-node K] [--lowering L] [run's options]
 *     mpirun -np N starfold bench --mpi [--ranks-per-node K] [--lowering L] [-b -e -f -i -n -w -c --json]
 *     mpirun -np N starfold bench --mpi --collective all-gather [-b -e -f -i -n -w -c --json]
 *
 * Every rank initialises MPI (MPI_THREAD_MULTIPLE, as StarPU-MPI needs), opens its devices as `run`
 * does (cli_machine_open()), and the ranks make one group over MPI_COMM_WORLD. Replica r of rank k is
 * global replica offset(k) + r (offset: the devices of the ranks before k); its values are those of
 * that global replica (tools/verify.h), and every rank checks its outputs against the reduction over
 * every replica of every rank, computed locally from the same generator.
 *
 * No rank gives up alone: what may fail on one rank only (opening the devices, allocating, reading
 * back) is agreed on with an MPI_Allreduce before the next collective, so every rank stops together;
 * the group's own calls fail on every rank alike. Rank 0 prints the results; every rank prints its
 * own errors on stderr, prefixed with its rank.
 *
 * Without MPI in the build (configure found no StarPU-MPI or MPI), --mpi is refused with that reason;
 * so it is when no MPI launcher started the process (a singleton MPI_Init would make a group of one).
 */
#include "config.h"

#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#ifdef STARFOLD_HAVE_MPI
#include <starfold/mpi.h>

#include "mpi/mpi_types.h" /* the group's own MPI types and ops, float16 and bfloat16 included */
#endif

#ifdef STARFOLD_HAVE_MPI
/* What --mpi works with; any other option given with it is refused by name. */
static const uint64_t mpi_run_options = CLI_OPT(OPT_TOPOLOGY) | CLI_OPT(OPT_OP) | CLI_OPT(OPT_DTYPE) |
                                        CLI_OPT(OPT_TENSORS) | CLI_OPT(OPT_MINBYTES) | CLI_OPT(OPT_DEVICES) |
                                        CLI_OPT(OPT_ITERS) | CLI_OPT(OPT_WARMUP) | CLI_OPT(OPT_EMULATED) |
                                        CLI_OPT(OPT_MPI) | CLI_OPT(OPT_RANKS_PER_NODE) | CLI_OPT(OPT_LOWERING) |
                                        CLI_OPT(OPT_COLLECTIVE) | CLI_OPT(OPT_TIMEOUT) | CLI_OPT(OPT_ROOT);
static const uint64_t mpi_bench_options = CLI_OPT(OPT_TOPOLOGY) | CLI_OPT(OPT_OP) | CLI_OPT(OPT_DTYPE) |
                                          CLI_OPT(OPT_MINBYTES) | CLI_OPT(OPT_MAXBYTES) | CLI_OPT(OPT_STEPFACTOR) |
                                          CLI_OPT(OPT_STEPBYTES) | CLI_OPT(OPT_DEVICES) | CLI_OPT(OPT_ITERS) |
                                          CLI_OPT(OPT_WARMUP) | CLI_OPT(OPT_CHECK) | CLI_OPT(OPT_JSON) |
                                          CLI_OPT(OPT_EMULATED) | CLI_OPT(OPT_MPI) | CLI_OPT(OPT_RANKS_PER_NODE) |
                                          CLI_OPT(OPT_LOWERING) | CLI_OPT(OPT_PERSISTENT) | CLI_OPT(OPT_TENSORS) |
                                          CLI_OPT(OPT_COLLECTIVE) | CLI_OPT(OPT_VIEWS) | CLI_OPT(OPT_TIMEOUT) |
                                          CLI_OPT(OPT_ROOT);
/* What bench --mpi --collective all-gather works with: no op, no lowering (MPI's own), one tensor. */
static const uint64_t mpi_gather_excluded = CLI_OPT(OPT_OP) | CLI_OPT(OPT_LOWERING) | CLI_OPT(OPT_PERSISTENT) |
                                            CLI_OPT(OPT_TENSORS) | CLI_OPT(OPT_VIEWS);

/* Whether an MPI launcher (mpirun, mpiexec, srun) started this process. */
static int under_launcher(void)
{
    static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]) && *getenv(vars[i])) return 1;
    return 0;
}
#endif

int cli_mpi_check(const cli_command_t *cmd, const cli_opts_t *o)
{
    if (!o->mpi) {
        if (o->given & CLI_OPT(OPT_RANKS_PER_NODE))
            return cli_usage_error(cmd, "--ranks-per-node applies across MPI ranks: add --mpi (under mpirun)");
        if (o->given & CLI_OPT(OPT_LOWERING))
            return cli_usage_error(cmd, "--lowering applies across MPI ranks: add --mpi (under mpirun)");
        if (o->given & CLI_OPT(OPT_TIMEOUT))
            return cli_usage_error(cmd, "--timeout bounds the waits across MPI ranks: add --mpi (under mpirun)");
        return CLI_OK;
    }
#ifndef STARFOLD_HAVE_MPI
    return cli_usage_error(cmd, "--mpi: this starfold was built without MPI (configure found no StarPU-MPI or no MPI "
                                "library; install them and configure --with-mpi)");
#else
    const int bench = strcmp(cmd->name, "bench") == 0;
    const uint64_t allowed = bench ? mpi_bench_options : mpi_run_options;
    for (int id = 0; id < OPT_COUNT; id++)
        if ((o->given & CLI_OPT(id)) && !(allowed & CLI_OPT(id)))
            return cli_usage_error(cmd, "--%s does not apply to %s --mpi (it all-reduces with the process group; "
                                        "see starfold %s --help)",
                                   cli_option_name((cli_opt_id_t)id), cmd->name, cmd->name);
    if (o->all_ops || o->all_dtypes)
        return cli_usage_error(cmd, "--mpi measures one op and one dtype per run (no 'all')");
    if (o->views && o->persistent)
        return cli_usage_error(cmd, "--views with --persistent: the persistent all-reduce binds whole handles "
                                    "(starfold_group_all_reduce_init()); drop one");
    if (o->collective != CLI_COLL_ALL_REDUCE && o->collective != CLI_COLL_ALL_GATHER && o->collective != CLI_COLL_BROADCAST)
        return cli_usage_error(cmd, "--collective: across ranks, %s --mpi runs all-reduce, all-gather or broadcast",
                               cmd->name);
    if ((o->given & CLI_OPT(OPT_ROOT)) && o->collective != CLI_COLL_BROADCAST)
        return cli_usage_error(cmd, "--root: across ranks, the root rank of --collective broadcast");
    if (o->collective == CLI_COLL_BROADCAST && (o->given & (CLI_OPT(OPT_OP) | CLI_OPT(OPT_LOWERING))))
        return cli_usage_error(cmd, "--collective broadcast copies the root rank's tensors (MPI_Ibcast): no --op, "
                                    "no --lowering");
    /* run gathers its --tensors spec; bench sweeps sizes. */
    const uint64_t excluded = bench ? mpi_gather_excluded : CLI_OPT(OPT_OP) | CLI_OPT(OPT_LOWERING);
    for (int id = 0; (o->collective == CLI_COLL_ALL_GATHER || (bench && o->collective == CLI_COLL_BROADCAST)) && id < OPT_COUNT;
         id++)
        if ((o->given & CLI_OPT(id)) && (excluded & CLI_OPT(id)))
            return cli_usage_error(cmd, "--%s does not apply to the all-gather (--collective all-gather gathers one "
                                        "vector per rank with starfold_group_all_gather())",
                                   cli_option_name((cli_opt_id_t)id));
    const int all_lowerings = o->lowering && strcmp(o->lowering, "all") == 0;
    if (all_lowerings && !bench)
        return cli_usage_error(cmd, "--lowering all: bench --mpi measures every lowering side by side; run takes one");
    if (o->lowering && !all_lowerings && starfold_group_lowering_find(o->lowering) < 0) {
        char known[256] = "";
        for (int k = 0; starfold_group_lowering_name(k); k++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", k ? ", " : "",
                     starfold_group_lowering_name(k));
        return cli_usage_error(cmd, "--lowering: unknown lowering '%s' (known: %s%s)", o->lowering, known,
                               bench ? ", and all: each of them, side by side" : "");
    }
    if (!under_launcher())
        return cli_usage_error(cmd, "--mpi: not started by an MPI launcher (no OMPI_COMM_WORLD_SIZE, PMI_SIZE or "
                                    "PMIX_RANK in the environment): run it as 'mpirun -np N starfold %s --mpi ...'",
                               cmd->name);
    return CLI_OK;
#endif
}

#ifndef STARFOLD_HAVE_MPI

int cli_run_mpi(const cli_command_t *cmd, const cli_opts_t *o, const starfold_tensor_desc_t *tensors, size_t nt,
                const char *spec)
{
    (void)tensors, (void)nt, (void)spec;
    return cli_mpi_check(cmd, o);
}

int cli_bench_mpi(const cli_command_t *cmd, const cli_opts_t *o, const uint64_t *sizes, int nsizes)
{
    (void)sizes, (void)nsizes;
    return cli_mpi_check(cmd, o);
}

#else

/* One rank's part of the job. */
typedef struct mpi_job {
    const cli_command_t *cmd;
    int rank, size;
    cli_machine_t m;
    int machine_open;
    starfold_group_t group;
    int nodes, offset, total, dev_min, dev_max;
    FILE *info;     /* rank 0: stdout (stderr under --json); the others: /dev/null */
    FILE *devnull;
    MPI_Comm comm;  /* the command's own meetings of the ranks (job_sync()) */
    int64_t seq;    /* job_sync() calls made */
    double timeout; /* --timeout, 0 = none */
} mpi_job_t;

/*
 * The command's own meetings of the ranks (beside the group's collectives): whether a rank failed, the
 * slowest rank's time, the wrong elements summed, the start of a timed call. Each is an exchange of
 * one small message between every pair of ranks on the job's own communicator, polled, as the group's
 * agreement is: a rank that does not come is named on stderr after SF_CLI_STALL_S seconds, and after
 * --timeout the job ends (MPI offers nothing else: MPI_Finalize would wait for the missing rank). A
 * blocking MPI_Allreduce here waited for ever without a word (a rank stopped by SIGSTOP mid-run).
 */
#define SF_CLI_STALL_S 60.0

/* bench --mpi --lowering all: rows beside auto's, at most this many. */
#define SF_CLI_MAX_LOWERINGS 8

typedef struct sync_msg {
    int64_t seq;
    int32_t flag;  /* in: this rank's; out: how many ranks set it */
    int32_t code;  /* out: the largest */
    double dmax;   /* out: the largest */
    uint64_t usum; /* out: the sum */
} sync_msg_t;

static void cli_sleep_us(long us)
{
    struct timespec ts = { 0, us * 1000 };
    nanosleep(&ts, NULL);
}

/* Ends the whole job from this rank, the others too (a rank is missing: nothing else can end it). */
static void job_abort(mpi_job_t *job)
{
    fflush(NULL);
    starfold_group_abort(job->group, CLI_FAIL);
}

/* Whether the @n requests @rq are done; MPI failing ends the job. */
static int job_test(mpi_job_t *job, int n, MPI_Request *rq, const char *where)
{
    int done = 0;
    if (MPI_Testall(n, rq, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS) {
        fprintf(stderr, "starfold %s: rank %d: MPI failed at %s: ending the job\n", job->cmd->name, job->rank, where);
        job_abort(job);
    }
    return done;
}

/*
 * Waits for the @n requests @rq of a collective on the job's communicator at @where (the job's start:
 * its duplicate, the agreement on the command), napping between polls: after SF_CLI_STALL_S a word on
 * stderr, after --timeout the job ends (a collective cannot name who is missing).
 */
static void job_wait(mpi_job_t *job, int n, MPI_Request *rq, const char *where)
{
    const double t0 = cli_now();
    int warned = 0;
    for (long nap_us = 1; !job_test(job, n, rq, where); nap_us = nap_us < 1000 ? 2 * nap_us : nap_us) {
        const double waited = cli_now() - t0;
        if (job->timeout > 0 && waited >= job->timeout) {
            fprintf(stderr, "starfold %s: rank %d: not every rank reached %s within --timeout %g s (one did not start, "
                            "stopped, or its link is down?): ending the job\n", job->cmd->name, job->rank, where,
                    job->timeout);
            job_abort(job);
        }
        if (!warned && waited >= SF_CLI_STALL_S) {
            fprintf(stderr, "starfold %s: rank %d: has waited %.1f s at %s for the other ranks (one did not start, or "
                            "stopped? --timeout S bounds the wait)\n", job->cmd->name, job->rank, waited, where);
            warned = 1;
        }
        cli_sleep_us(nap_us);
    }
}

/* Names the ranks whose message has not come (@pending: a request per other rank, in rank order),
 * or, when every message to this rank has come, the ranks that this rank's own message has not
 * reached yet (@sent, in the same order: a link that carries nothing, one way only). *@outbound says
 * which of the two the list is. */
static void list_missing(const mpi_job_t *job, MPI_Request *pending, MPI_Request *sent, char *who, size_t len,
                         int *count, int *outbound)
{
    *outbound = 0;
    for (int pass = 0; pass < 2 && *count == 0; pass++) {
        MPI_Request *reqs = pass == 0 ? pending : sent;
        size_t at = 0;
        *count = 0;
        *outbound = pass;
        who[0] = '\0';
        for (int r = 0, k = 0; r < job->size; r++) {
            if (r == job->rank) continue;
            int flag = 0;
            MPI_Request_get_status(reqs[k++], &flag, MPI_STATUS_IGNORE);
            if (flag) continue;
            if (at + 16 < len) at += (size_t)snprintf(who + at, len - at, "%s%d", *count ? ", " : "", r);
            (*count)++;
        }
    }
}

/* The meeting itself; @busy polls without napping (the barrier before a timed call). */
static void job_sync_polled(mpi_job_t *job, const char *where, sync_msg_t *v, int busy)
{
    const int n = job->size;
    v->seq = job->seq++;
    if (n == 1) {
        v->flag = v->flag != 0;
        return;
    }
    sync_msg_t *all = calloc((size_t)n, sizeof *all);
    MPI_Request *req = calloc(2 * (size_t)n, sizeof *req);
    if (!all || !req) {
        fprintf(stderr, "starfold %s: rank %d: out of memory at %s: ending the job\n", job->cmd->name, job->rank, where);
        job_abort(job);
    }
    const int tag = (int)(v->seq % 30000);
    int nreq = 0;
    for (int r = 0; r < n; r++)
        if (r != job->rank) MPI_Irecv(&all[r], (int)sizeof *all, MPI_BYTE, r, tag, job->comm, &req[nreq++]);
    for (int r = 0; r < n; r++)
        if (r != job->rank) MPI_Isend(v, (int)sizeof *v, MPI_BYTE, r, tag, job->comm, &req[nreq++]);
    const double t0 = cli_now();
    int done = 0, warned = 0;
    long nap_us = 1;
    for (unsigned polls = 0; !done; polls++) {
        if ((done = job_test(job, nreq, req, where))) break;
        if (busy && polls % 256 != 0) continue; /* the clock read every 256th poll only */
        const double waited = cli_now() - t0;
        const int out_of_time = job->timeout > 0 && waited >= job->timeout;
        if (out_of_time || (!warned && waited >= SF_CLI_STALL_S)) {
            char who[256];
            int count = 0, outbound = 0;
            list_missing(job, req, req + (n - 1), who, sizeof who, &count, &outbound);
            if (count == 0) continue; /* the last message came after MPI_Testall: done */
            if (out_of_time && !outbound)
                fprintf(stderr, "starfold %s: rank %d: rank%s %s did not reach %s within --timeout %g s (stopped, or "
                                "stuck?): ending the job\n", job->cmd->name, job->rank, count > 1 ? "s" : "", who, where,
                        job->timeout);
            /* Every word from the others came, but this rank's own has not left: the link does not carry it. */
            else if (out_of_time)
                fprintf(stderr, "starfold %s: rank %d: rank%s %s got no word from this rank at %s within --timeout %g s "
                                "(the link to them carries nothing: down?): ending the job\n", job->cmd->name, job->rank,
                        count > 1 ? "s" : "", who, where, job->timeout);
            if (out_of_time) job_abort(job);
            if (outbound)
                fprintf(stderr, "starfold %s: rank %d: has waited %.1f s at %s for its word to reach rank%s %s (is the "
                                "link to them down?)\n", job->cmd->name, job->rank, waited, where, count > 1 ? "s" : "", who);
            else
                fprintf(stderr, "starfold %s: rank %d: has waited %.1f s at %s for rank%s %s (stopped, or still busy?)\n",
                        job->cmd->name, job->rank, waited, where, count > 1 ? "s" : "", who);
            warned = 1;
        }
        if (busy) continue;
        cli_sleep_us(nap_us);
        if (nap_us < 1000) nap_us *= 2;
    }
    const sync_msg_t mine = *v;
    v->flag = mine.flag != 0;
    for (int r = 0; r < n; r++) {
        if (r == job->rank) continue;
        v->flag += all[r].flag != 0;
        if (all[r].code > v->code) v->code = all[r].code;
        if (all[r].dmax > v->dmax) v->dmax = all[r].dmax;
        v->usum += all[r].usum;
    }
    free(all);
    free(req);
}

static void job_sync(mpi_job_t *job, const char *where, sync_msg_t *v)
{
    job_sync_polled(job, where, v, 0);
}

/* The number of ranks where @failed is set (every rank calls it). */
static int ranks_failing(mpi_job_t *job, int failed)
{
    sync_msg_t v = { .flag = failed != 0 };
    job_sync(job, "a check that every rank is fine", &v);
    return v.flag;
}

static int worst(mpi_job_t *job, int code)
{
    sync_msg_t v = { .code = code };
    job_sync(job, "a check that every rank is fine", &v);
    return v.code;
}

static double max_over_ranks(mpi_job_t *job, double x)
{
    sync_msg_t v = { .dmax = x };
    job_sync(job, "the end of a timed call", &v);
    return v.dmax;
}

static uint64_t sum_over_ranks(mpi_job_t *job, uint64_t x)
{
    sync_msg_t v = { .usum = x };
    job_sync(job, "the count of wrong elements", &v);
    return v.usum;
}

/*
 * The ranks lined up before a timed call: the napping exchange first (every rank is there, or the
 * missing one is named), then the same exchange polled busily, which lets every rank go within
 * microseconds of the others (the exchange's naps alone let one start up to a millisecond late, which
 * the others' times then include: 4 KiB on 2 ranks read 65 us for MPI's own 5 us call). Both are
 * bounded by --timeout and name the missing ranks: a blocking MPI_Barrier there waited on every rank
 * for ever when a link went down between the two (2 jobs in 10 of make check-netns's link case).
 */
static void job_barrier(mpi_job_t *job)
{
    sync_msg_t v = { 0 };
    job_sync(job, "the start of a timed call", &v);
    sync_msg_t go = { 0 };
    job_sync_polled(job, "the barrier before a timed call", &go, 1);
}

/*
 * What every rank must run alike: the command, its collective and what shapes the sequence of calls
 * across ranks (op, dtype, the tensors or sizes, iterations, lowering, ranks per node, ...). Only the
 * devices (-g, --topology, --emulated) and where rank 0 writes may differ. @text is what rank 0 names
 * in the refusal; @hash covers the whole tensor list or size sweep, which the text may abbreviate.
 */
typedef struct job_key {
    uint64_t hash;
    char text[248];
} job_key_t;

static uint64_t key_mix(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t key_mix_text(uint64_t h, const char *t)
{
    for (; t && *t; t++) h = key_mix(h, (unsigned char)*t);
    return key_mix(h, 0);
}

static const char *collective_word(int c)
{
    return c == CLI_COLL_ALL_GATHER ? "all-gather" : c == CLI_COLL_BROADCAST ? "broadcast" : "all-reduce";
}

/* run: the parsed tensor list; bench: the size sweep (or its --tensors list, parsed later). */
static void job_key_make(const cli_command_t *cmd, const cli_opts_t *o, const starfold_tensor_desc_t *tensors, size_t nt,
                         const char *spec, const uint64_t *sizes, int nsizes, job_key_t *k)
{
    uint64_t h = 1469598103934665603ull;
    h = key_mix_text(h, cmd->name);
    h = key_mix(h, (uint64_t)o->collective);
    h = key_mix(h, (uint64_t)o->op);
    h = key_mix(h, (uint64_t)o->dtype);
    h = key_mix(h, (uint64_t)o->iters);
    h = key_mix(h, (uint64_t)o->warmup);
    h = key_mix(h, (uint64_t)o->check);
    h = key_mix(h, (uint64_t)o->persistent);
    h = key_mix(h, (uint64_t)o->views);
    h = key_mix(h, (uint64_t)o->ranks_per_node);
    h = key_mix_text(h, o->lowering);
    h = key_mix_text(h, o->tensors);
    h = key_mix(h, (uint64_t)(o->timeout_s * 1e3));
    h = key_mix(h, nt);
    for (size_t i = 0; tensors && i < nt; i++) h = key_mix(key_mix(h, (uint64_t)tensors[i].dtype), tensors[i].count);
    h = key_mix(h, (uint64_t)nsizes);
    for (int i = 0; sizes && i < nsizes; i++) h = key_mix(h, sizes[i]);
    k->hash = h;
    char what[96];
    if (spec || o->tensors) {
        snprintf(what, sizeof what, "--tensors %s", spec ? spec : o->tensors);
    } else if (sizes && nsizes > 0) {
        char b[32], e[32];
        cli_format_bytes(b, sizeof b, sizes[0]);
        cli_format_bytes(e, sizeof e, sizes[nsizes - 1]);
        snprintf(what, sizeof what, "sizes %s to %s (%d)", b, e, nsizes);
    } else {
        snprintf(what, sizeof what, "no tensors");
    }
    snprintf(k->text, sizeof k->text, "%s --mpi --collective %s --op %s --dtype %s %s -n %d -w %d%s%s%s --lowering %s "
             "--ranks-per-node %d", cmd->name, collective_word(o->collective), starfold_op_name(o->op),
             starfold_dtype_name(o->dtype), what, o->iters, o->warmup, o->persistent ? " --persistent" : "",
             o->views ? " --views" : "", o->check ? "" : " -c 0", o->lowering ? o->lowering : "auto", o->ranks_per_node);
}

/*
 * Every rank's key against rank 0's, before anything else across ranks: ranks started with
 * different commands would otherwise meet different collectives and wait for each other forever
 * (an all-reduce against an all-gather, run against bench). CLI_OK everywhere, or a usage error on
 * every rank, rank 0 naming the first rank that differs and both commands.
 */
static int agree_on_command(mpi_job_t *job, const job_key_t *mine)
{
    const cli_command_t *cmd = job->cmd;
    const int rank = job->rank, size = job->size;
    job_key_t *all = rank == 0 ? calloc((size_t)size, sizeof *all) : NULL;
    int bad = rank == 0 && !all;
    MPI_Request rq = MPI_REQUEST_NULL;
    if (MPI_Igather(mine, (int)sizeof *mine, MPI_BYTE, all, (int)sizeof *mine, MPI_BYTE, 0, job->comm, &rq) != MPI_SUCCESS)
        bad = 1;
    else
        job_wait(job, 1, &rq, "the check that every rank runs the same command");
    int first = -1;
    for (int r = 1; all && r < size && first < 0; r++)
        if (all[r].hash != all[0].hash) first = r;
    int verdict[2] = { first, bad };
    if (MPI_Ibcast(verdict, 2, MPI_INT, 0, job->comm, &rq) == MPI_SUCCESS)
        job_wait(job, 1, &rq, "the check that every rank runs the same command");
    if (rank == 0 && first >= 0) {
        all[first].text[sizeof all[first].text - 1] = '\0';
        cli_usage_error(cmd, "the ranks were started with different commands: rank %d runs '%s' where rank 0 runs '%s'; "
                             "every rank must run the same command (only -g/--devices, --topology and --emulated may "
                             "differ): nothing ran", first, all[first].text, all[0].text);
    } else if (rank != 0 && verdict[0] >= 0) {
        cli_usage_error(cmd, "rank %d: the ranks were started with different commands (rank 0 names them): nothing ran",
                        rank);
    }
    free(all);
    return verdict[0] >= 0 || verdict[1] ? CLI_USAGE : CLI_OK;
}

/* "starfold CMD: rank R: <what>: <reason>" on stderr; CLI_FAIL. */
#define RANK_FAIL(job, st, fmt, ...) cli_fail((job)->cmd, (st), "rank %d: " fmt, (job)->rank, __VA_ARGS__)

static void job_close(mpi_job_t *job)
{
    /* A broken group: a rank is missing, and MPI_Finalize would wait for it. */
    if (job->group && starfold_group_is_broken(job->group)) {
        fprintf(stderr, "starfold %s: rank %d: the process group is broken (a rank did not join or finish a collective "
                        "in time): ending the job\n", job->cmd->name, job->rank);
        job_abort(job);
    }
    starfold_group_destroy(job->group);
    job->group = NULL;
    if (job->machine_open) cli_machine_close(&job->m);
    job->machine_open = 0;
    if (job->devnull) fclose(job->devnull);
    job->devnull = NULL;
    if (job->comm != MPI_COMM_NULL) MPI_Comm_free(&job->comm);
    job->comm = MPI_COMM_NULL;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

/* MPI, the same command everywhere, the devices, the group: CLI_OK on every rank, or the same failure
 * code on every rank. */
static int job_open(const cli_command_t *cmd, const cli_opts_t *o, const job_key_t *key, FILE *rank0_info, mpi_job_t *job)
{
    memset(job, 0, sizeof *job);
    job->cmd = cmd;
    job->comm = MPI_COMM_NULL;
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        fflush(stdout);
        fprintf(stderr, "starfold %s: --mpi: MPI_Init_thread failed\n", cmd->name);
        return CLI_FAIL;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &job->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &job->size);
    job->timeout = o->timeout_s;
    MPI_Request rq = MPI_REQUEST_NULL;
    if (MPI_Comm_idup(MPI_COMM_WORLD, &job->comm, &rq) != MPI_SUCCESS) {
        fflush(stdout);
        fprintf(stderr, "starfold %s: rank %d: MPI_Comm_idup failed\n", cmd->name, job->rank);
        job->comm = MPI_COMM_NULL;
        job_abort(job);
    }
    job_wait(job, 1, &rq, "the start of the job");
    if (ranks_failing(job, provided < MPI_THREAD_MULTIPLE)) {
        if (provided < MPI_THREAD_MULTIPLE)
            cli_usage_error(cmd, "rank %d: this MPI gives no MPI_THREAD_MULTIPLE (it gives level %d), which StarPU-MPI "
                                 "needs", job->rank, provided);
        job_close(job);
        return CLI_FAIL;
    }
    const int agreed = agree_on_command(job, key);
    if (agreed != CLI_OK) {
        job_close(job);
        return agreed;
    }
    if (job->rank == 0) job->info = rank0_info;
    else job->info = job->devnull = fopen("/dev/null", "w");
    if (!job->info) job->info = stderr;

    int r = cli_machine_open(cmd, o, job->info, &job->m);
    job->machine_open = r == CLI_OK;
    int failing = ranks_failing(job, r != CLI_OK);
    if (failing) {
        const int code = worst(job, r);
        if (job->rank == 0)
            cli_usage_error(cmd, "%d of %d ranks could not open their devices (their reasons above): nothing ran",
                            failing, job->size);
        job_close(job);
        return code;
    }
    starfold_group_options_t gopt;
    starfold_group_options_init(&gopt);
    gopt.ranks_per_node = o->ranks_per_node;
    gopt.timeout_seconds = o->timeout_s;
    starfold_status_t st = starfold_group_create(job->m.ctx, MPI_COMM_WORLD, &gopt, &job->group);
    if (st != STARFOLD_OK) { /* collective: the same failure on every rank */
        r = RANK_FAIL(job, st, "%s", "cannot create the process group");
        job->group = NULL;
        /* A rank missing: MPI keeps the group's abandoned requests, and MPI_Finalize would wait for it. */
        if (st == STARFOLD_ERR_TIMEOUT) {
            fprintf(stderr, "starfold %s: rank %d: not every rank came to the process group within --timeout %g s: "
                            "ending the job\n", cmd->name, job->rank, job->timeout);
            job_abort(job);
        }
        job_close(job);
        return r;
    }
    st = starfold_group_set_lowering(job->group, o->lowering && !strcmp(o->lowering, "all") ? "auto" : o->lowering);
    if (st != STARFOLD_OK) RANK_FAIL(job, st, "--lowering %s", o->lowering);
    if (ranks_failing(job, st != STARFOLD_OK)) {
        job_close(job);
        return CLI_FAIL;
    }
    job->nodes = starfold_group_num_nodes(job->group);
    job->dev_min = INT32_MAX;
    for (int k = 0; k < job->size; k++) {
        const int d = starfold_group_num_devices(job->group, k);
        if (k < job->rank) job->offset += d;
        job->total += d;
        if (d < job->dev_min) job->dev_min = d;
        if (d > job->dev_max) job->dev_max = d;
    }
    return CLI_OK;
}

/* "Links: between nodes 0.112 GB/s, 61.3 us; within a node 4.86 GB/s, 1.2 us (measured)": the group's
 * links as its lowerings are priced, from rank 0 to the first rank of another node and of its own. */
static void print_links(const mpi_job_t *job, FILE *f, const char *prefix)
{
    starfold_topology_t t = NULL;
    if (job->size < 2 || starfold_group_rank_topology(job->group, &t) != STARFOLD_OK) return;
    int peer[2] = { -1, -1 }; /* [0] another node, [1] rank 0's node */
    for (int r = 1; r < job->size; r++) {
        const int same = starfold_group_node(job->group, r) == starfold_group_node(job->group, 0);
        if (peer[same] < 0) peer[same] = r;
    }
    static const char *const where[2] = { "between nodes", "within a node" };
    char text[2][96] = { "", "" };
    for (int k = 0; k < 2; k++) {
        starfold_link_t l;
        if (peer[k] >= 0 && starfold_topology_best_link(t, 0, peer[k], &l) == STARFOLD_OK)
            snprintf(text[k], sizeof text[k], "%s %.3g GB/s, %.3g us", where[k], l.bandwidth_GBps, l.latency_us);
    }
    starfold_topology_destroy(t);
    if (text[0][0] || text[1][0])
        fprintf(f, "%sLinks: %s%s%s\n", prefix, text[0], text[0][0] && text[1][0] ? "; " : "", text[1]);
}

/* "2 ranks on 1 node (the ranks sharing memory), 2 devices per rank: 4 replicas" */
static void print_ranks(const mpi_job_t *job, const cli_opts_t *o, FILE *f, const char *prefix)
{
    char per[64];
    if (job->dev_min == job->dev_max) snprintf(per, sizeof per, "%d device%s per rank", job->dev_min, job->dev_min == 1 ? "" : "s");
    else snprintf(per, sizeof per, "%d to %d devices per rank", job->dev_min, job->dev_max);
    char how[64];
    if (o->ranks_per_node > 0) snprintf(how, sizeof how, "%d rank%s per node", o->ranks_per_node, o->ranks_per_node == 1 ? "" : "s");
    else snprintf(how, sizeof how, "the ranks sharing memory and a network");
    fprintf(f, "%sRanks: %d on %d node%s (%s), %s: %d replicas\n", prefix, job->size, job->nodes, job->nodes == 1 ? "" : "s",
            how, per, job->total);
    print_links(job, f, prefix);
}

/* ------------------------------------------------------------------------------------------------
 * run --mpi
 */

static int run_gather(mpi_job_t *job, const cli_opts_t *o, const starfold_tensor_desc_t *tensors, size_t nt,
                      const char *spec);
static int run_broadcast(mpi_job_t *job, const cli_opts_t *o, const starfold_tensor_desc_t *tensors, size_t nt,
                         const char *spec);

int cli_run_mpi(const cli_command_t *cmd, const cli_opts_t *o, const starfold_tensor_desc_t *tensors, size_t nt,
                const char *spec)
{
    mpi_job_t job;
    job_key_t key;
    job_key_make(cmd, o, tensors, nt, spec, NULL, 0, &key);
    int r = job_open(cmd, o, &key, stdout, &job);
    if (r != CLI_OK) return r;
    if (o->collective == CLI_COLL_ALL_GATHER || o->collective == CLI_COLL_BROADCAST) {
        if (job.rank == 0) {
            printf("Devices: %s (rank 0; each rank opens its own)\n", job.m.description);
            print_ranks(&job, o, stdout, "");
        }
        r = o->collective == CLI_COLL_ALL_GATHER ? run_gather(&job, o, tensors, nt, spec)
                                                 : run_broadcast(&job, o, tensors, nt, spec);
        job_close(&job);
        return r;
    }
    const int me0 = job.rank == 0;
    if (me0) {
        printf("Devices: %s (rank 0; each rank opens its own)\n", job.m.description);
        print_ranks(&job, o, stdout, "");
    }
    const int n = job.m.num_devices;
    cli_replicas_t rep;
    memset(&rep, 0, sizeof rep);
    starfold_status_t st = cli_replicas_create_global(job.m.ctx, n, job.offset, job.total, tensors, nt, o->op, &rep);
    if (st != STARFOLD_OK) RANK_FAIL(&job, st, "%s", "cannot create the replicas");
    if (ranks_failing(&job, st != STARFOLD_OK)) {
        cli_replicas_destroy(&rep);
        job_close(&job);
        return CLI_FAIL;
    }
    const uint64_t bytes = cli_tensors_bytes(tensors, nt);
    char b1[32];
    if (me0) {
        printf("All-reduce (%s) of %zu %s tensor%s (%s), %s per replica, over the %d replicas of %d ranks, lowering "
               "asked: %s\n", starfold_op_name(o->op), nt, starfold_dtype_name(o->dtype), nt == 1 ? "" : "s", spec,
               cli_format_bytes(b1, sizeof b1, bytes), job.total, job.size, o->lowering);
        fflush(stdout);
    }
    double total_time = 0.0, best = INFINITY;
    uint64_t wrong = 0, checked = 0;
    int failed = 0;
    for (int it = -o->warmup; it < o->iters && !failed; it++) { /* it < 0: warm-up, verified, not timed */
        int local_bad = 0;
        if ((st = cli_replicas_clear(&rep)) != STARFOLD_OK) local_bad = RANK_FAIL(&job, st, "%s", "cannot clear the outputs");
        if (ranks_failing(&job, local_bad)) {
            failed = 1;
            break;
        }
        job_barrier(&job);
        const double t0 = cli_now();
        st = starfold_group_all_reduce(job.group, o->op, nt, tensors, rep.in, rep.out);
        const double dt = max_over_ranks(&job, cli_now() - t0);
        if (st != STARFOLD_OK) { /* the same status on every rank */
            if (it < 0) RANK_FAIL(&job, st, "warm-up iteration %d failed", it + o->warmup + 1);
            else RANK_FAIL(&job, st, "iteration %d failed", it + 1);
            failed = 1;
            break;
        }
        if (it >= 0) {
            total_time += dt;
            if (dt < best) best = dt;
        }
        uint64_t w = 0, c = 0;
        if ((st = cli_replicas_verify(&rep, &w, &c)) != STARFOLD_OK) local_bad = RANK_FAIL(&job, st, "%s", "cannot read the outputs back");
        if (ranks_failing(&job, local_bad)) failed = 1;
        wrong += w;
        checked += c;
    }
    const char *lowering = starfold_group_last_lowering(job.group);
    if (wrong) {
        fflush(stdout);
        fprintf(stderr, "starfold run: rank %d: %llu wrong elements on its replicas %d..%d\n", job.rank,
                (unsigned long long)wrong, job.offset, job.offset + n - 1);
    }
    const uint64_t all_wrong = sum_over_ranks(&job, wrong), all_checked = sum_over_ranks(&job, checked);
    if (!failed && me0) {
        const double mean = total_time / o->iters, algbw = mean > 0 ? (double)bytes / mean / 1e9 : 0.0;
        const int N = job.total;
        const double factor = N > 1 ? 2.0 * (N - 1) / N : 0.0;
        const char *plan = starfold_group_last_plan(job.group);
        printf("Lowering: %s (rank 0's views: %s)\n", lowering ? lowering : "?", plan ? plan : "?");
        printf("Time: %.3f ms per all-reduce (the slowest rank; mean of %d after %d warm-up, best %.3f ms), algbw %.3f "
               "GB/s, busbw %.3f GB/s (2(n-1)/n, n = %d replicas)%s\n", mean * 1e3, o->iters, o->warmup, best * 1e3,
               algbw, algbw * factor, N, job.m.emulated ? " (emulated devices: CPU contention, not interconnect speed)" : "");
        printf("Verified: %llu of %llu elements right on all %d replicas of %d ranks%s\n",
               (unsigned long long)(all_checked - all_wrong), (unsigned long long)all_checked, N, job.size,
               o->iters + o->warmup > 1 ? " over every iteration" : "");
        if (all_wrong) {
            fflush(stdout);
            fprintf(stderr, "starfold run: %llu wrong elements over all ranks\n", (unsigned long long)all_wrong);
        }
    }
    r = failed ? CLI_FAIL : all_wrong ? CLI_FAIL : CLI_OK;
    cli_replicas_destroy(&rep);
    job_close(&job);
    return r;
}

/* ------------------------------------------------------------------------------------------------
 * bench --mpi
 */

/* MPI has no mean: the baseline sums (the same traffic and arithmetic; the division is local). */
static starfold_op_t mpi_equivalent(starfold_op_t op)
{
    return op == STARFOLD_OP_MEAN ? STARFOLD_OP_SUM : op;
}

static const char *type_name(starfold_dtype_t d)
{
    switch (d) {
    case STARFOLD_FLOAT32: return "float";
    case STARFOLD_FLOAT64: return "double";
    case STARFOLD_FLOAT16: return "half";
    default: return starfold_dtype_name(d);
    }
}

typedef struct mpi_row {
    const char *impl, *lowering;
    const char *plan;                   /* starfold_group_last_plan() on rank 0; NULL: none (MPI's row) */
    uint64_t size, count;
    double time_s, algbw, busbw, ratio; /* ratio: starfold / MPI, 0 on the MPI row */
    double model_us;                    /* the cost model's price of the lowering that ran; 0: none */
    uint64_t wrong;
    int n;                              /* what busbw's n counted */
} mpi_row_t;

/* A timed row's figures: algbw = size / time, busbw = algbw x 2(n-1)/n (an all-reduce over n). */
static void row_finish(mpi_row_t *row, const char *impl, const char *lowering, double time_s, int n, uint64_t wrong)
{
    row->impl = impl;
    row->lowering = lowering;
    row->time_s = time_s;
    row->algbw = time_s > 0 ? (double)row->size / time_s / 1e9 : 0.0;
    row->n = n;
    row->busbw = row->algbw * (n > 1 ? 2.0 * (n - 1) / n : 0.0);
    row->wrong = wrong;
}

static void print_row(const cli_opts_t *o, const mpi_row_t *r)
{
    const char *redop = o->collective == CLI_COLL_ALL_GATHER || o->collective == CLI_COLL_BROADCAST
                            ? "none" /* nccl-tests' word */
                        : o->op == STARFOLD_OP_MEAN          ? "avg"
                                                             : starfold_op_name(o->op);
    if (o->json) {
        printf("{\"implementation\": ");
        cli_json_string(stdout, r->impl);
        printf(", \"lowering\": ");
        cli_json_string(stdout, r->lowering);
        printf(", \"size\": %llu, \"count\": %llu, \"type\": \"%s\", \"redop\": \"%s\", \"time_us\": %.3f, "
               "\"algbw\": %.4f, \"busbw\": %.4f, \"busbw_n\": %d, \"wrong\": %llu",
               (unsigned long long)r->size, (unsigned long long)r->count, type_name(o->dtype), redop, r->time_s * 1e6, r->algbw, r->busbw, r->n,
               (unsigned long long)r->wrong);
        if (r->ratio > 0) printf(", \"vs_mpi\": %.3f", r->ratio);
        if (r->model_us > 0) printf(", \"model_us\": %.3f", r->model_us);
        if (r->plan) {
            printf(", \"plan\": ");
            cli_json_string(stdout, r->plan);
        }
        printf("}\n");
        return;
    }
    char ratio[16] = "-", model[24] = "-";
    if (r->ratio > 0) snprintf(ratio, sizeof ratio, "%.2fx", r->ratio);
    if (r->model_us > 0) snprintf(model, sizeof model, "%.1f", r->model_us);
    printf("%12llu  %12llu  %6s  %5s  %-14s  %-16s  %10.1f  %7.2f  %7.2f  %6llu  %7s  %10s  %s\n", (unsigned long long)r->size,
           (unsigned long long)r->count, type_name(o->dtype), redop, r->impl, r->lowering, r->time_s * 1e6, r->algbw,
           r->busbw, (unsigned long long)r->wrong, ratio, model, r->plan ? r->plan : "-");
}

/* The table's two header lines (none under --json). */
static void print_head(const cli_opts_t *o)
{
    if (o->json) return;
    printf("#\n# %10s  %12s  %6s  %5s  %-14s  %-16s  %10s  %7s  %7s  %6s  %7s  %10s  %s\n", "size(B)", "count", "type",
           "redop", "implementation", "lowering", "time(us)", "algbw", "busbw", "#wrong", "vs MPI", "model(us)", "plan");
    printf("# %10s  %12s  %6s  %5s  %-14s  %-16s  %10s  %7s  %7s  %6s  %7s  %10s\n", "", "(elements)", "", "", "", "", "",
           "(GB/s)", "(GB/s)", "", "", "");
}

/* The footer: the geometric mean of the ratios to @baseline, nccl-tests' out-of-bounds line, and the
 * wrong elements on stderr. */
static void print_foot(FILE *info0, int r, const char *baseline, int rows, double log_ratio, uint64_t wrong_total)
{
    if (r == CLI_OK) {
        if (rows) fprintf(info0, "# starfold-group / %s time: geometric mean %.2fx over %d sizes\n", baseline,
                          exp(log_ratio / rows), rows);
        fprintf(info0, "# Out of bounds values : %llu %s\n", (unsigned long long)wrong_total, wrong_total ? "FAILED" : "OK");
    }
    if (wrong_total) fprintf(stderr, "starfold bench: %llu wrong elements over all ranks\n", (unsigned long long)wrong_total);
}

/* The group's all-reduce at one size: -w warm-up, -n timed (each the slowest rank's), then checked;
 * @persistent: bound once (starfold_group_all_reduce_init(), untimed) and started every iteration. */
static int bench_group(mpi_job_t *job, const cli_opts_t *o, const starfold_tensor_desc_t *t, size_t nt, int persistent,
                       mpi_row_t *row)
{
    cli_replicas_t rep;
    memset(&rep, 0, sizeof rep);
    starfold_status_t st =
        o->views ? cli_replicas_create_global_bucketed(job->m.ctx, job->m.num_devices, job->offset, job->total, t, nt, o->op, &rep)
                 : cli_replicas_create_global(job->m.ctx, job->m.num_devices, job->offset, job->total, t, nt, o->op, &rep);
    int bad = 0;
    if (st != STARFOLD_OK) bad = RANK_FAIL(job, st, "%s", "cannot create the replicas");
    if (!bad && o->check && (st = cli_replicas_clear(&rep)) != STARFOLD_OK) bad = RANK_FAIL(job, st, "%s", "cannot clear the outputs");
    starfold_group_persistent_t p = NULL;
    if (!bad && persistent && (st = starfold_group_all_reduce_init(job->group, o->op, nt, t, rep.in, rep.out, &p)) != STARFOLD_OK)
        bad = RANK_FAIL(job, st, "%s", "cannot bind the persistent all-reduce"); /* the same status on every rank */
    if (ranks_failing(job, bad)) {
        cli_replicas_destroy(&rep);
        return CLI_FAIL;
    }
    double total = 0.0;
    for (int it = -o->warmup; it < o->iters; it++) {
        job_barrier(job);
        const double t0 = cli_now();
        st = p         ? starfold_group_persistent_start(p)
             : o->views ? starfold_group_all_reduce_views(job->group, o->op, nt, t, rep.vin, rep.vout)
                        : starfold_group_all_reduce(job->group, o->op, nt, t, rep.in, rep.out);
        const double dt = max_over_ranks(job, cli_now() - t0);
        if (st != STARFOLD_OK) { /* the same status on every rank */
            RANK_FAIL(job, st, "all-reduce of %llu bytes failed", (unsigned long long)row->size);
            starfold_group_persistent_destroy(p);
            cli_replicas_destroy(&rep);
            return CLI_FAIL;
        }
        if (it >= 0) total += dt;
    }
    starfold_group_persistent_destroy(p);
    uint64_t wrong = 0, checked = 0;
    if (o->check && (st = cli_replicas_verify(&rep, &wrong, &checked)) != STARFOLD_OK)
        bad = RANK_FAIL(job, st, "%s", "cannot read the outputs back");
    cli_replicas_destroy(&rep);
    if (ranks_failing(job, bad)) return CLI_FAIL;
    if (wrong)
        fprintf(stderr, "starfold bench: rank %d: %llu wrong elements at %llu bytes\n", job->rank,
                (unsigned long long)wrong, (unsigned long long)row->size);
    const char *lowering = starfold_group_last_lowering(job->group);
    /* The model's price of what ran (local: the same on every rank); none when it cannot say. */
    if (starfold_group_predict(job->group, o->op, nt, t, lowering, NULL, &row->model_us) != STARFOLD_OK) row->model_us = 0;
    row_finish(row, persistent ? "group-persist" : "starfold-group", lowering ? lowering : "?", total / o->iters, job->total,
               sum_over_ranks(job, wrong));
    row->plan = starfold_group_last_plan(job->group);
    return CLI_OK;
}

/*
 * Open MPI's own all-reduce on the same bytes: one input and one output host buffer per rank (out of
 * place, as the group's row); the last result checked against the reduction over the ranks. Two
 * calls, each its own row, and starfold's rows are compared with the faster: the blocking
 * MPI_Allreduce, and MPI_Iallreduce then MPI_Wait, which Open MPI 4.1 serves with another algorithm
 * (libnbc's) that can be several times faster on large buffers (64 MiB on 2 ranks here: 244-277 ms
 * blocking, 15-27 ms non-blocking). A user of MPI takes the faster; so does the comparison.
 */
static int bench_mpi_baseline(mpi_job_t *job, const cli_opts_t *o, int nonblocking, mpi_row_t *row)
{
    const starfold_dtype_t dt = o->dtype;
    const starfold_op_t op = mpi_equivalent(o->op);
    const size_t count = (size_t)row->count;
    void *buf = starfold_tools_alloc(dt, count), *pristine = starfold_tools_alloc(dt, count);
    if (ranks_failing(job, !buf || !pristine)) {
        if (!buf || !pristine) RANK_FAIL(job, STARFOLD_ERR_OUT_OF_MEMORY, "%s", "the MPI baseline's buffer");
        free(buf);
        free(pristine);
        return CLI_FAIL;
    }
    for (size_t i = 0; i < count; i++) starfold_tools_set(pristine, dt, i, starfold_tools_value(op, dt, job->rank, 0, i));
    double total = 0.0;
    int rc = MPI_SUCCESS;
    starfold_context_pause(job->m.ctx); /* StarPU's idle workers would spin beside MPI (see the header) */
    for (int it = -o->warmup; it < o->iters && rc == MPI_SUCCESS; it++) {
        job_barrier(job);
        const double t0 = cli_now();
        /* Out of place, as the group's row (its inputs and outputs are separate vectors). */
        if (nonblocking) {
            MPI_Request rq;
            rc = MPI_Iallreduce(pristine, buf, (int)count, starfold__mpi_datatype(dt), starfold__mpi_reduce_op(dt, op), MPI_COMM_WORLD, &rq);
            if (rc == MPI_SUCCESS) rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
        } else {
            rc = MPI_Allreduce(pristine, buf, (int)count, starfold__mpi_datatype(dt), starfold__mpi_reduce_op(dt, op), MPI_COMM_WORLD);
        }
        const double d = max_over_ranks(job, cli_now() - t0);
        if (it >= 0) total += d;
    }
    starfold_context_resume(job->m.ctx);
    uint64_t wrong = 0;
    if (o->check && rc == MPI_SUCCESS)
        for (size_t i = 0; i < count; i++)
            if (!starfold_tools_close_enough(dt, starfold_tools_get(buf, dt, i),
                                             starfold_tools_reference_at(op, dt, job->size, 0, i)))
                wrong++;
    free(buf);
    free(pristine);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "starfold bench: rank %d: %s failed (error %d)\n", job->rank,
                nonblocking ? "MPI_Iallreduce" : "MPI_Allreduce", rc);
        return CLI_FAIL;
    }
    row_finish(row, nonblocking ? "MPI_Iallreduce" : "MPI_Allreduce", "-", total / o->iters, job->size,
               sum_over_ranks(job, wrong));
    return CLI_OK;
}

/* ------------------------------------------------------------------------------------------------
 * bench --mpi --collective all-gather: nccl-tests' all_gather_perf. A row's size is the whole gathered
 * vector; each rank gives size / ranks bytes, element i of rank r's part starfold_tools_value(SUM, r,
 * 0, i), so every rank can check the whole. busbw = algbw x (n-1)/n over the n ranks.
 */

static void gather_fill(void *part, starfold_dtype_t dt, int rank, size_t count)
{
    for (size_t i = 0; i < count; i++)
        starfold_tools_set(part, dt, i, starfold_tools_value(STARFOLD_OP_SUM, dt, rank, 0, i));
}

/* One timed all-gather of @in: the last call's whole *@out destroyed first (untimed), the ranks lined
 * up, *@seconds the slowest rank's time. */
static starfold_status_t timed_gather(mpi_job_t *job, starfold_dtype_t dt, starpu_data_handle_t in,
                                      starpu_data_handle_t *out, double *seconds)
{
    starfold_vector_destroy(job->m.ctx, *out);
    *out = NULL;
    job_barrier(job);
    const double t0 = cli_now();
    const starfold_status_t st = starfold_group_all_gather(job->group, dt, in, out, NULL);
    *seconds = max_over_ranks(job, cli_now() - t0);
    return st;
}

/* Elements of @whole (@ranks parts of @count) that are not the parts gather_fill() makes. */
static uint64_t gather_wrong(const void *whole, starfold_dtype_t dt, int ranks, size_t count)
{
    uint64_t wrong = 0;
    for (int r = 0; r < ranks; r++)
        for (size_t i = 0; i < count; i++)
            wrong += !starfold_tools_close_enough(dt, starfold_tools_get(whole, dt, (size_t)r * count + i),
                                                  starfold_tools_value(STARFOLD_OP_SUM, dt, r, 0, i));
    return wrong;
}

static void gather_row_finish(mpi_row_t *row, const char *impl, const char *lowering, double time_s, int ranks,
                              uint64_t wrong)
{
    row_finish(row, impl, lowering, time_s, ranks, wrong);
    row->busbw = row->algbw * (ranks > 1 ? (double)(ranks - 1) / ranks : 0.0);
}

/*
 * run --mpi --collective all-gather: every rank gives the spec's elements (one dtype) as one vector
 * on its device 0, starfold_group_all_gather() puts every rank's part in rank order on every rank,
 * and every rank checks the whole; rank 0 prints. The warm-up iterations are checked too.
 */
static int run_gather(mpi_job_t *job, const cli_opts_t *o, const starfold_tensor_desc_t *tensors, size_t nt,
                      const char *spec)
{
    const starfold_dtype_t dt = o->dtype;
    size_t count = 0;
    for (size_t t = 0; t < nt; t++) {
        if (tensors[t].dtype != dt) {
            if (job->rank == 0) cli_usage_error(job->cmd, "--collective all-gather gathers one dtype (--dtype): the spec mixes them");
            return CLI_USAGE;
        }
        count += tensors[t].count;
    }
    const size_t es = starfold_dtype_size(dt), whole_count = count * (size_t)job->size;
    void *part = starfold_tools_alloc(dt, count), *whole = starfold_tools_alloc(dt, whole_count);
    starpu_data_handle_t in = NULL, out = NULL;
    starfold_status_t st = part && whole ? STARFOLD_OK : STARFOLD_ERR_OUT_OF_MEMORY;
    if (st == STARFOLD_OK && count) st = starfold_vector_create(job->m.ctx, 0, dt, count, &in);
    if (st == STARFOLD_OK && count) {
        gather_fill(part, dt, job->rank, count);
        st = starfold_vector_write(in, part, count * es);
    }
    int failed = ranks_failing(job, st != STARFOLD_OK ? RANK_FAIL(job, st, "%s", "cannot make this rank's part") : 0);
    char b1[32];
    if (job->rank == 0 && !failed) {
        printf("All-gather of %zu %s elements per rank (%s), %s per rank, over %d ranks\n", count, starfold_dtype_name(dt),
               spec, cli_format_bytes(b1, sizeof b1, (uint64_t)(count * es)), job->size);
        fflush(stdout);
    }
    double total_time = 0.0, best = INFINITY;
    uint64_t wrong = 0;
    for (int it = -o->warmup; it < o->iters && !failed; it++) {
        double d;
        st = timed_gather(job, dt, in, &out, &d);
        if (st != STARFOLD_OK) { /* the same status on every rank */
            RANK_FAIL(job, st, "%s iteration %d failed", it < 0 ? "warm-up" : "timed", it < 0 ? it + o->warmup + 1 : it + 1);
            failed = 1;
            break;
        }
        if (it >= 0) {
            total_time += d;
            if (d < best) best = d;
        }
        int bad = 0;
        if (out && (st = starfold_vector_read(out, whole, whole_count * es)) != STARFOLD_OK)
            bad = RANK_FAIL(job, st, "%s", "cannot read the gathered vector back");
        else if (out)
            wrong += gather_wrong(whole, dt, job->size, count);
        failed = ranks_failing(job, bad) > 0;
    }
    starfold_vector_destroy(job->m.ctx, out);
    starfold_vector_destroy(job->m.ctx, in);
    free(part);
    free(whole);
    if (wrong) fprintf(stderr, "starfold run: rank %d: %llu wrong elements in the gathered vector\n", job->rank,
                       (unsigned long long)wrong);
    const uint64_t all_wrong = sum_over_ranks(job, wrong);
    if (!failed && job->rank == 0) {
        const int runs = o->iters + o->warmup;
        const double mean = total_time / o->iters, algbw = mean > 0 ? (double)(whole_count * es) / mean / 1e9 : 0.0;
        printf("Time: %.3f ms per all-gather (the slowest rank; mean of %d after %d warm-up, best %.3f ms), algbw %.3f "
               "GB/s, busbw %.3f GB/s ((n-1)/n, n = %d ranks)\n", mean * 1e3, o->iters, o->warmup, best * 1e3, algbw,
               job->size > 1 ? algbw * (job->size - 1) / job->size : 0.0, job->size);
        printf("Verified: %llu of %llu elements right on all %d ranks%s\n",
               (unsigned long long)((uint64_t)whole_count * (uint64_t)job->size * (uint64_t)runs - all_wrong),
               (unsigned long long)((uint64_t)whole_count * (uint64_t)job->size * (uint64_t)runs), job->size,
               runs > 1 ? " over every iteration" : "");
        if (all_wrong) fprintf(stderr, "starfold run: %llu wrong elements over all ranks\n", (unsigned long long)all_wrong);
    }
    return failed || all_wrong ? CLI_FAIL : CLI_OK;
}

/*
 * run --mpi --collective broadcast [--root R]: rank R's tensors (element i of tensor t
 * starfold_tools_value(SUM, R, t, i), one vector each on its device 0) into every device of every
 * rank with starfold_group_broadcast(); every rank clears its outputs before each call and checks them
 * after it, warm-up included; rank 0 prints. busbw = algbw, as broadcast_perf counts it.
 */
static int run_broadcast(mpi_job_t *job, const cli_opts_t *o, const starfold_tensor_desc_t *tensors, size_t nt,
                         const char *spec)
{
    const int root = o->root, n = job->m.num_devices, me_root = job->rank == root;
    if (root >= job->size) {
        if (job->rank == 0) cli_usage_error(job->cmd, "--root %d: the broadcast's root is a rank, 0..%d", root, job->size - 1);
        return CLI_USAGE;
    }
    starpu_data_handle_t *in = calloc(nt, sizeof *in), *out = calloc((size_t)n * nt, sizeof *out);
    size_t most = 1, bytes = 0;
    for (size_t t = 0; t < nt; t++) {
        const size_t b = tensors[t].count * starfold_dtype_size(tensors[t].dtype);
        bytes += b;
        if (b > most) most = b;
    }
    unsigned char *host = malloc(most);
    starfold_status_t st = in && out && host ? STARFOLD_OK : STARFOLD_ERR_OUT_OF_MEMORY;
    for (size_t t = 0; st == STARFOLD_OK && t < nt; t++) {
        const starfold_dtype_t dt = tensors[t].dtype;
        const size_t c = tensors[t].count;
        for (int d = 0; st == STARFOLD_OK && d < n; d++) st = starfold_vector_create(job->m.ctx, d, dt, c, &out[(size_t)d * nt + t]);
        if (st == STARFOLD_OK && me_root) st = starfold_vector_create(job->m.ctx, 0, dt, c, &in[t]);
        for (size_t i = 0; st == STARFOLD_OK && me_root && i < c; i++)
            starfold_tools_set(host, dt, i, starfold_tools_value(STARFOLD_OP_SUM, dt, root, t, i));
        if (st == STARFOLD_OK && me_root && c) st = starfold_vector_write(in[t], host, c * starfold_dtype_size(dt));
    }
    int failed = ranks_failing(job, st != STARFOLD_OK ? RANK_FAIL(job, st, "%s", "cannot make the vectors") : 0);
    char b1[32];
    if (job->rank == 0 && !failed) {
        printf("Broadcast of %zu tensor%s (%s), %s, from rank %d to the %d replicas of %d ranks\n", nt, nt == 1 ? "" : "s",
               spec, cli_format_bytes(b1, sizeof b1, (uint64_t)bytes), root, job->total, job->size);
        fflush(stdout);
    }
    double total_time = 0.0, best = INFINITY;
    uint64_t wrong = 0, checked = 0;
    for (int it = -o->warmup; it < o->iters && !failed; it++) {
        int bad = 0;
        for (size_t k = 0; st == STARFOLD_OK && k < (size_t)n * nt; k++) { /* cleared: a missed write shows */
            const starfold_dtype_t dt = tensors[k % nt].dtype;
            const size_t c = tensors[k % nt].count;
            for (size_t i = 0; i < c; i++) starfold_tools_set(host, dt, i, starfold_tools_sentinel(dt));
            if (c) st = starfold_vector_write(out[k], host, c * starfold_dtype_size(dt));
        }
        if (st != STARFOLD_OK) bad = RANK_FAIL(job, st, "%s", "cannot clear the outputs");
        if ((failed = ranks_failing(job, bad) > 0)) break;
        job_barrier(job);
        const double t0 = cli_now();
        st = starfold_group_broadcast(job->group, root, nt, tensors, me_root ? in : NULL, out);
        const double d = max_over_ranks(job, cli_now() - t0);
        if (st != STARFOLD_OK) { /* the same status on every rank */
            RANK_FAIL(job, st, "%s iteration %d failed", it < 0 ? "warm-up" : "timed", it < 0 ? it + o->warmup + 1 : it + 1);
            failed = 1;
            break;
        }
        if (it >= 0) {
            total_time += d;
            if (d < best) best = d;
        }
        for (size_t k = 0; k < (size_t)n * nt && !bad; k++) {
            const size_t t = k % nt;
            const starfold_dtype_t dt = tensors[t].dtype;
            const size_t c = tensors[t].count;
            if (c && (st = starfold_vector_read(out[k], host, c * starfold_dtype_size(dt))) != STARFOLD_OK)
                bad = RANK_FAIL(job, st, "%s", "cannot read an output back");
            for (size_t i = 0; !bad && i < c; i++)
                wrong += !starfold_tools_close_enough(dt, starfold_tools_get(host, dt, i),
                                                      starfold_tools_value(STARFOLD_OP_SUM, dt, root, t, i));
            checked += c;
        }
        failed = ranks_failing(job, bad) > 0;
    }
    for (size_t k = 0; out && k < (size_t)n * nt; k++) starfold_vector_destroy(job->m.ctx, out[k]);
    for (size_t t = 0; in && t < nt; t++) starfold_vector_destroy(job->m.ctx, in[t]);
    free(in);
    free(out);
    free(host);
    if (wrong) fprintf(stderr, "starfold run: rank %d: %llu wrong elements in its outputs\n", job->rank,
                       (unsigned long long)wrong);
    const uint64_t all_wrong = sum_over_ranks(job, wrong), all_checked = sum_over_ranks(job, checked);
    if (!failed && job->rank == 0) {
        const double mean = total_time / o->iters, algbw = mean > 0 ? (double)bytes / mean / 1e9 : 0.0;
        printf("Time: %.3f ms per broadcast (the slowest rank; mean of %d after %d warm-up, best %.3f ms), algbw %.3f "
               "GB/s, busbw %.3f GB/s (= algbw, as broadcast_perf)\n", mean * 1e3, o->iters, o->warmup, best * 1e3, algbw,
               algbw);
        printf("Verified: %llu of %llu elements right on all %d replicas of %d ranks over every iteration\n",
               (unsigned long long)(all_checked - all_wrong), (unsigned long long)all_checked, job->total, job->size);
        if (all_wrong) fprintf(stderr, "starfold run: %llu wrong elements over all ranks\n", (unsigned long long)all_wrong);
    }
    return failed || all_wrong ? CLI_FAIL : CLI_OK;
}

/* The group's all-gather of @count elements per rank: the part on device 0, the whole made by each call
 * (as the API gives it) and destroyed after it; the last one checked. */
static int bench_group_gather(mpi_job_t *job, const cli_opts_t *o, size_t count, mpi_row_t *row)
{
    const starfold_dtype_t dt = o->dtype;
    const size_t es = starfold_dtype_size(dt);
    void *part = starfold_tools_alloc(dt, count), *whole = starfold_tools_alloc(dt, count * (size_t)job->size);
    starpu_data_handle_t in = NULL, out = NULL;
    starfold_status_t st = part && whole ? STARFOLD_OK : STARFOLD_ERR_OUT_OF_MEMORY;
    if (st == STARFOLD_OK) st = starfold_vector_create(job->m.ctx, 0, dt, count, &in);
    if (st == STARFOLD_OK) {
        gather_fill(part, dt, job->rank, count);
        st = starfold_vector_write(in, part, count * es);
    }
    int bad = st != STARFOLD_OK ? RANK_FAIL(job, st, "%s", "cannot make this rank's part") : 0;
    double total = 0.0;
    for (int it = -o->warmup; !ranks_failing(job, bad) && it < o->iters; it++) {
        double dt_s;
        st = timed_gather(job, dt, in, &out, &dt_s);
        if (st != STARFOLD_OK) { /* the same status on every rank */
            bad = RANK_FAIL(job, st, "all-gather of %llu bytes failed", (unsigned long long)row->size);
            break;
        }
        if (it >= 0) total += dt_s;
    }
    uint64_t wrong = 0;
    if (!bad && o->check) {
        st = out ? starfold_vector_read(out, whole, count * es * (size_t)job->size) : STARFOLD_ERR_INTERNAL;
        if (st != STARFOLD_OK) bad = RANK_FAIL(job, st, "%s", "cannot read the gathered vector back");
        else wrong = gather_wrong(whole, dt, job->size, count);
    }
    starfold_vector_destroy(job->m.ctx, out);
    starfold_vector_destroy(job->m.ctx, in);
    free(part);
    free(whole);
    if (ranks_failing(job, bad)) return CLI_FAIL;
    if (wrong)
        fprintf(stderr, "starfold bench: rank %d: %llu wrong elements at %llu bytes\n", job->rank,
                (unsigned long long)wrong, (unsigned long long)row->size);
    gather_row_finish(row, "starfold-group", "mpi", total / o->iters, job->size, sum_over_ranks(job, wrong));
    return CLI_OK;
}

/* Open MPI's own MPI_Allgather of the same parts into a host buffer per rank. */
static int bench_mpi_gather_baseline(mpi_job_t *job, const cli_opts_t *o, size_t count, mpi_row_t *row)
{
    const starfold_dtype_t dt = o->dtype;
    void *part = starfold_tools_alloc(dt, count), *whole = starfold_tools_alloc(dt, count * (size_t)job->size);
    if (ranks_failing(job, !part || !whole)) {
        if (!part || !whole) RANK_FAIL(job, STARFOLD_ERR_OUT_OF_MEMORY, "%s", "the MPI baseline's buffers");
        free(part);
        free(whole);
        return CLI_FAIL;
    }
    gather_fill(part, dt, job->rank, count);
    double total = 0.0;
    int rc = MPI_SUCCESS;
    starfold_context_pause(job->m.ctx); /* as for the all-reduce's baseline */
    for (int it = -o->warmup; it < o->iters && rc == MPI_SUCCESS; it++) {
        job_barrier(job);
        const double t0 = cli_now();
        rc = MPI_Allgather(part, (int)count, starfold__mpi_datatype(dt), whole, (int)count, starfold__mpi_datatype(dt), MPI_COMM_WORLD);
        const double d = max_over_ranks(job, cli_now() - t0);
        if (it >= 0) total += d;
    }
    starfold_context_resume(job->m.ctx);
    const uint64_t wrong = o->check && rc == MPI_SUCCESS ? gather_wrong(whole, dt, job->size, count) : 0;
    free(part);
    free(whole);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "starfold bench: rank %d: MPI_Allgather failed (error %d)\n", job->rank, rc);
        return CLI_FAIL;
    }
    gather_row_finish(row, "MPI_Allgather", "-", total / o->iters, job->size, sum_over_ranks(job, wrong));
    return CLI_OK;
}

static int bench_gather(mpi_job_t *job, const cli_opts_t *o, const uint64_t *sizes, int nsizes, FILE *info0)
{
    const int me0 = job->rank == 0;
    const size_t es = starfold_dtype_size(o->dtype);
    if (me0) {
        fprintf(info0, "# starfold-group: starfold_group_all_gather() of one vector per rank on its device 0 (MPI_Iallgatherv "
                       "in a StarPU task); the whole is a new vector each call, as the API gives it\n");
        fprintf(info0, "# MPI_Allgather: the MPI baseline, MPI's own all-gather of the same parts into a host buffer per rank; "
                       "StarPU's workers paused meanwhile (starfold_context_pause())\n");
        fprintf(info0, "# size: the whole gathered vector, size / %d bytes from each rank; time: the slowest rank's, mean of "
                       "-n %d after -w %d; busbw = algbw x (n-1)/n with n = %d ranks; vs MPI = starfold time / MPI time\n",
                job->size, o->iters, o->warmup, job->size);
        print_head(o);
        fflush(NULL);
    }
    uint64_t wrong_total = 0;
    double log_ratio = 0.0;
    int rows = 0, r = CLI_OK;
    for (int s = 0; s < nsizes && r == CLI_OK; s++) {
        const size_t count = (size_t)(sizes[s] / es / (uint64_t)job->size);
        if (count == 0 || count * (size_t)job->size > INT32_MAX) {
            if (me0) fprintf(info0, "# %llu bytes: skipped (%s)\n", (unsigned long long)sizes[s],
                             count == 0 ? "less than one element per rank" : "beyond MPI's int count");
            continue;
        }
        mpi_row_t g, m;
        memset(&g, 0, sizeof g);
        memset(&m, 0, sizeof m);
        g.size = m.size = count * es * (size_t)job->size;
        g.count = m.count = count * (size_t)job->size;
        if ((r = bench_group_gather(job, o, count, &g)) != CLI_OK) break;
        if ((r = bench_mpi_gather_baseline(job, o, count, &m)) != CLI_OK) break;
        g.ratio = m.time_s > 0 ? g.time_s / m.time_s : 0.0;
        wrong_total += g.wrong + m.wrong;
        if (g.ratio > 0) {
            log_ratio += log(g.ratio);
            rows++;
        }
        if (me0) {
            print_row(o, &g);
            print_row(o, &m);
            fflush(stdout);
        }
    }
    if (me0) print_foot(info0, r, "MPI_Allgather", rows, log_ratio, wrong_total);
    return r == CLI_OK && wrong_total ? CLI_FAIL : r;
}

/* ------------------------------------------------------------------------------------------------
 * bench --mpi --collective broadcast: nccl-tests' broadcast_perf. A row's size is the tensor; rank
 * --root's element i is starfold_tools_value(SUM, root, 0, i); every rank checks its device 0 copy
 * and its last device's after the last call. busbw = algbw, as broadcast_perf counts it.
 */

/* Elements of @got (@count of @dt) that are not the root's. */
static uint64_t bcast_wrong(const void *got, starfold_dtype_t dt, int root, size_t count)
{
    uint64_t wrong = 0;
    for (size_t i = 0; i < count; i++)
        wrong += !starfold_tools_close_enough(dt, starfold_tools_get(got, dt, i),
                                              starfold_tools_value(STARFOLD_OP_SUM, dt, root, 0, i));
    return wrong;
}

static int bench_group_bcast(mpi_job_t *job, const cli_opts_t *o, size_t count, mpi_row_t *row)
{
    const starfold_dtype_t dt = o->dtype;
    const size_t es = starfold_dtype_size(dt);
    const int n = job->m.num_devices, me_root = job->rank == o->root;
    const starfold_tensor_desc_t t = { dt, count };
    void *host = starfold_tools_alloc(dt, count);
    starpu_data_handle_t in = NULL, *out = calloc((size_t)n, sizeof *out);
    starfold_status_t st = host && out ? STARFOLD_OK : STARFOLD_ERR_OUT_OF_MEMORY;
    for (int d = 0; st == STARFOLD_OK && d < n; d++) st = starfold_vector_create(job->m.ctx, d, dt, count, &out[d]);
    /* In place on the root, as Horovod's broadcast and MPI_Bcast are: its device 0 output is its input. */
    if (st == STARFOLD_OK && me_root) in = out[0];
    if (st == STARFOLD_OK && me_root) {
        for (size_t i = 0; i < count; i++) starfold_tools_set(host, dt, i, starfold_tools_value(STARFOLD_OP_SUM, dt, o->root, 0, i));
        st = starfold_vector_write(in, host, count * es);
    }
    int bad = st != STARFOLD_OK ? RANK_FAIL(job, st, "%s", "cannot make the vectors") : 0;
    double total = 0.0;
    for (int it = -o->warmup; !ranks_failing(job, bad) && it < o->iters; it++) {
        job_barrier(job);
        const double t0 = cli_now();
        st = starfold_group_broadcast(job->group, o->root, 1, &t, me_root ? &in : NULL, out);
        const double d = max_over_ranks(job, cli_now() - t0);
        if (st != STARFOLD_OK) { /* the same status on every rank */
            bad = RANK_FAIL(job, st, "broadcast of %llu bytes failed", (unsigned long long)row->size);
            break;
        }
        if (it >= 0) total += d;
    }
    uint64_t wrong = 0;
    for (int d = 0; !bad && o->check && d < n; d += n > 1 ? n - 1 : 1) {
        if ((st = starfold_vector_read(out[d], host, count * es)) != STARFOLD_OK) bad = RANK_FAIL(job, st, "%s", "cannot read an output back");
        else wrong += bcast_wrong(host, dt, o->root, count);
    }
    for (int d = 0; out && d < n; d++) starfold_vector_destroy(job->m.ctx, out[d]);
    free(out);
    free(host);
    if (ranks_failing(job, bad)) return CLI_FAIL;
    if (wrong)
        fprintf(stderr, "starfold bench: rank %d: %llu wrong elements at %llu bytes\n", job->rank,
                (unsigned long long)wrong, (unsigned long long)row->size);
    row_finish(row, "starfold-group", "mpi", total / o->iters, job->size, sum_over_ranks(job, wrong));
    row->busbw = row->algbw;
    return CLI_OK;
}

static int bench_mpi_bcast_baseline(mpi_job_t *job, const cli_opts_t *o, size_t count, mpi_row_t *row)
{
    const starfold_dtype_t dt = o->dtype;
    void *buf = starfold_tools_alloc(dt, count);
    if (ranks_failing(job, !buf)) {
        if (!buf) RANK_FAIL(job, STARFOLD_ERR_OUT_OF_MEMORY, "%s", "the MPI baseline's buffer");
        free(buf);
        return CLI_FAIL;
    }
    double total = 0.0;
    int rc = MPI_SUCCESS;
    starfold_context_pause(job->m.ctx); /* as for the all-reduce's baseline */
    for (int it = -o->warmup; it < o->iters && rc == MPI_SUCCESS; it++) {
        for (size_t i = 0; i < count; i++)
            starfold_tools_set(buf, dt, i, job->rank == o->root ? starfold_tools_value(STARFOLD_OP_SUM, dt, o->root, 0, i)
                                                                : starfold_tools_sentinel(dt));
        job_barrier(job);
        const double t0 = cli_now();
        rc = MPI_Bcast(buf, (int)count, starfold__mpi_datatype(dt), o->root, MPI_COMM_WORLD);
        const double d = max_over_ranks(job, cli_now() - t0);
        if (it >= 0) total += d;
    }
    starfold_context_resume(job->m.ctx);
    const uint64_t wrong = o->check && rc == MPI_SUCCESS ? bcast_wrong(buf, dt, o->root, count) : 0;
    free(buf);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "starfold bench: rank %d: MPI_Bcast failed (error %d)\n", job->rank, rc);
        return CLI_FAIL;
    }
    row_finish(row, "MPI_Bcast", "-", total / o->iters, job->size, sum_over_ranks(job, wrong));
    row->busbw = row->algbw;
    return CLI_OK;
}

static int bench_bcast(mpi_job_t *job, const cli_opts_t *o, const uint64_t *sizes, int nsizes, FILE *info0)
{
    const int me0 = job->rank == 0;
    const size_t es = starfold_dtype_size(o->dtype);
    if (o->root >= job->size) {
        if (me0) cli_usage_error(job->cmd, "--root %d: the broadcast's root is a rank, 0..%d", o->root, job->size - 1);
        return CLI_USAGE;
    }
    if (me0) {
        fprintf(info0, "# starfold-group: starfold_group_broadcast() from rank %d into every device of every rank "
                       "(MPI_Ibcast in a StarPU task, then StarPU's copies to devices 1..)\n", o->root);
        fprintf(info0, "# MPI_Bcast: the MPI baseline, MPI's own broadcast of the same bytes into a host buffer per rank; "
                       "StarPU's workers paused meanwhile (starfold_context_pause())\n");
        fprintf(info0, "# time: the slowest rank's, mean of -n %d after -w %d; busbw = algbw (broadcast_perf); vs MPI = "
                       "starfold time / MPI time\n", o->iters, o->warmup);
        print_head(o);
        fflush(NULL);
    }
    uint64_t wrong_total = 0;
    double log_ratio = 0.0;
    int rows = 0, r = CLI_OK;
    for (int s = 0; s < nsizes && r == CLI_OK; s++) {
        const size_t count = (size_t)(sizes[s] / es);
        if (count == 0 || count > INT32_MAX) {
            if (me0) fprintf(info0, "# %llu bytes: skipped (%s)\n", (unsigned long long)sizes[s],
                             count == 0 ? "less than one element" : "beyond MPI's int count");
            continue;
        }
        mpi_row_t g, m;
        memset(&g, 0, sizeof g);
        memset(&m, 0, sizeof m);
        g.size = m.size = count * es;
        g.count = m.count = count;
        if ((r = bench_group_bcast(job, o, count, &g)) != CLI_OK) break;
        if ((r = bench_mpi_bcast_baseline(job, o, count, &m)) != CLI_OK) break;
        g.ratio = m.time_s > 0 ? g.time_s / m.time_s : 0.0;
        wrong_total += g.wrong + m.wrong;
        if (g.ratio > 0) {
            log_ratio += log(g.ratio);
            rows++;
        }
        if (me0) {
            print_row(o, &g);
            print_row(o, &m);
            fflush(stdout);
        }
    }
    if (me0) print_foot(info0, r, "MPI_Bcast", rows, log_ratio, wrong_total);
    return r == CLI_OK && wrong_total ? CLI_FAIL : r;
}

int cli_bench_mpi(const cli_command_t *cmd, const cli_opts_t *o, const uint64_t *sizes, int nsizes)
{
    mpi_job_t job;
    FILE *info0 = o->json ? stderr : stdout;
    job_key_t key;
    job_key_make(cmd, o, NULL, 0, NULL, sizes, nsizes, &key);
    int r = job_open(cmd, o, &key, info0, &job);
    if (r != CLI_OK) return r;
    const int me0 = job.rank == 0;
    const size_t es = starfold_dtype_size(o->dtype);
    if (me0) {
        fprintf(info0, "# starfold bench --mpi: devices %s (rank 0; each rank opens its own)\n", job.m.description);
        print_ranks(&job, o, info0, "# ");
    }
    if (o->collective == CLI_COLL_ALL_GATHER || o->collective == CLI_COLL_BROADCAST) {
        r = o->collective == CLI_COLL_ALL_GATHER ? bench_gather(&job, o, sizes, nsizes, info0)
                                                 : bench_bcast(&job, o, sizes, nsizes, info0);
        job_close(&job);
        return r;
    }
    if (me0) {
        fprintf(info0, "# starfold-group: starfold_group_all_reduce() over every replica, lowering asked: %s (the one used "
                       "on each row)\n", o->lowering);
        if (o->persistent)
            fprintf(info0, "# group-persist: the same, bound once with starfold_group_all_reduce_init() (untimed), "
                           "started every iteration (starfold_group_persistent_start())\n");
        fprintf(info0, "# MPI_Allreduce: the MPI baseline, MPI's own all-reduce of the same bytes, an input and an output "
                       "host buffer per rank (out of place, as the group's row)%s; StarPU's workers paused meanwhile (starfold_context_pause(): idle, they would "
                       "spin beside MPI)\n", o->op == STARFOLD_OP_MEAN ? ", MPI_SUM (MPI has no mean)" : "");
        fprintf(info0, "# MPI_Iallreduce: the same with MPI_Iallreduce then MPI_Wait (Open MPI serves it with other "
                       "algorithms, often faster on large buffers)\n");
        fprintf(info0, "# model(us): the cost model's price of the lowering that ran across ranks "
                       "(starfold_group_predict(); the local reduce and broadcast left out)\n");
        fprintf(info0, "# plan: how rank 0's views were reached (starfold_group_last_plan()): direct, packed (one task per "
                       "dtype over every handle), relay or leaders\n");
        fprintf(info0, "# time: the slowest rank's, mean of -n %d after -w %d; busbw = algbw x 2(n-1)/n with n = %d "
                       "replicas (starfold-group) or %d ranks (MPI's rows); vs MPI = starfold time / the faster MPI "
                       "row's time\n",
                o->iters, o->warmup, job.total, job.size);
        print_head(o);
        fflush(NULL);
    }
    const int all_lowerings = o->lowering && strcmp(o->lowering, "all") == 0;
    uint64_t wrong_total = 0;
    double log_ratio = 0.0;
    int rows = 0;
    r = CLI_OK;
    /* --tensors: one batch (every rank's replicas hold the list) against one MPI_Allreduce of its bytes. */
    starfold_tensor_desc_t *list = NULL;
    size_t nlist = 0;
    uint64_t list_bytes_holder = 0;
    if (o->tensors && (r = cli_parse_tensors(cmd, o->tensors, o->dtype, &list, &nlist)) != CLI_OK) {
        job_close(&job);
        return r;
    }
    if (list) {
        list_bytes_holder = cli_tensors_bytes(list, nlist);
        sizes = &list_bytes_holder;
        nsizes = 1;
        if (me0)
            fprintf(info0, "# --tensors %s: %zu tensors per replica in each starfold row%s; MPI_Allreduce: one call on "
                           "their bytes (one fused buffer)\n", o->tensors, nlist,
                    o->views ? ", as views of one vector per replica (--views: starfold_group_all_reduce_views())"
                             : ", each its own StarPU vector");
    }
    for (int s = 0; s < nsizes && r == CLI_OK; s++) {
        const starfold_tensor_desc_t t = { o->dtype, (size_t)(sizes[s] / es) };
        const starfold_tensor_desc_t *batch = list ? list : &t;
        const size_t nbatch = list ? nlist : 1;
        if (t.count == 0 || t.count > INT32_MAX) {
            if (me0) fprintf(info0, "# %llu bytes: skipped (%s)\n", (unsigned long long)sizes[s],
                             t.count == 0 ? "no whole element" : "beyond MPI's int count");
            continue;
        }
        mpi_row_t g, gp, m, mi;
        memset(&g, 0, sizeof g);
        memset(&gp, 0, sizeof gp);
        memset(&m, 0, sizeof m);
        memset(&mi, 0, sizeof mi);
        g.size = gp.size = m.size = mi.size = t.count * es;
        g.count = gp.count = m.count = mi.count = t.count;
        /* --lowering all: one starfold-group row per lowering, auto's first (the one the foot sums up),
         * in one run beside the same MPI rows: the same ranks, links and moment for every lowering. */
        mpi_row_t each[SF_CLI_MAX_LOWERINGS];
        int neach = 0;
        if (all_lowerings) {
            for (int k = 0; starfold_group_lowering_name(k) && neach < SF_CLI_MAX_LOWERINGS && r == CLI_OK; k++) {
                if (k == 0) continue; /* auto: the row g below */
                memset(&each[neach], 0, sizeof each[neach]);
                each[neach].size = g.size;
                each[neach].count = g.count;
                if (starfold_group_set_lowering(job.group, starfold_group_lowering_name(k)) != STARFOLD_OK ||
                    (r = bench_group(&job, o, batch, nbatch, 0, &each[neach])) != CLI_OK)
                    break;
                neach++;
            }
            if (r == CLI_OK && starfold_group_set_lowering(job.group, "auto") != STARFOLD_OK) r = CLI_FAIL;
            if (r != CLI_OK) break;
        }
        if ((r = bench_group(&job, o, batch, nbatch, 0, &g)) != CLI_OK) break;
        if (o->persistent && (r = bench_group(&job, o, batch, nbatch, 1, &gp)) != CLI_OK) break;
        if ((r = bench_mpi_baseline(&job, o, 0, &m)) != CLI_OK) break;
        if ((r = bench_mpi_baseline(&job, o, 1, &mi)) != CLI_OK) break;
        /* vs MPI: against the faster of MPI's two calls. */
        const double best_mpi = mi.time_s > 0 && (mi.time_s < m.time_s || !(m.time_s > 0)) ? mi.time_s : m.time_s;
        g.ratio = best_mpi > 0 ? g.time_s / best_mpi : 0.0;
        gp.ratio = best_mpi > 0 ? gp.time_s / best_mpi : 0.0;
        wrong_total += g.wrong + gp.wrong + m.wrong + mi.wrong;
        for (int k = 0; k < neach; k++) {
            each[k].ratio = best_mpi > 0 ? each[k].time_s / best_mpi : 0.0;
            wrong_total += each[k].wrong;
        }
        if (g.ratio > 0) {
            log_ratio += log(g.ratio);
            rows++;
        }
        if (me0) {
            print_row(o, &g);
            for (int k = 0; k < neach; k++) print_row(o, &each[k]);
            if (o->persistent) print_row(o, &gp);
            print_row(o, &m);
            print_row(o, &mi);
            fflush(stdout);
        }
    }
    if (me0) print_foot(info0, r, "the faster of MPI_Allreduce and MPI_Iallreduce", rows, log_ratio, wrong_total);
    if (r == CLI_OK && wrong_total) r = CLI_FAIL;
    free(list);
    job_close(&job);
    return r;
}

#endif /* STARFOLD_HAVE_MPI */
