/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Step 1 of a collective across ranks: the agreement. Before anything is submitted, every rank tells
 * every other one (point to point, on the group's own communicator, tag from the collective's
 * sequence number) its verdict on its own arguments, the sequence number, a fingerprint of (op,
 * tensors) and the lowering it will take, and waits for theirs within the group's timeout_seconds:
 *
 *   rank 0 --hello--> rank 1, 2, ...      every pair, both ways (MPI_Isend / MPI_Irecv, polled)
 *   all[0..size)                          the same array on every rank
 *   verdict(all)                          the same status and message on every rank
 *
 * A refusal or a difference fails every rank alike; a rank that does not answer fails every rank
 * that waits (STARFOLD_ERR_TIMEOUT, the missing ranks named) and breaks the group, and the rank that
 * gave up tells the others with a "broken" notice so that late ranks fail at once. A stall warning
 * names the missing ranks after stall_warning_seconds. A second, shorter round
 * (starfold__group_agree_submitted()) confirms that every rank submitted its local part before any
 * rank crosses ranks; a collective with no local part (the direct plan) skips it.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "mpi/group.h"
#include "mpi/group_plan.h"

typedef struct hello {
    int64_t sequence;
    uint64_t fingerprint;
    int32_t status;   /* this rank's verdict on its own arguments */
    int32_t op;
    int64_t num_tensors;
    int32_t lowering;  /* SF_LOWER_* this rank will take */
    int32_t collective; /* SF_GROUP_* */
    int64_t payload;   /* may differ between ranks: an all-gather's element count */
    uint64_t batch;    /* the fingerprint of the batch this collective is one call of (0: none) */
} hello_t;

static const char *collective_name(int c)
{
    return c == SF_GROUP_ALL_GATHER  ? "an all-gather"
           : c == SF_GROUP_BROADCAST ? "a broadcast"
           : c == SF_GROUP_BARRIER   ? "a barrier"
                                     : "an all-reduce";
}

/* FNV-1a over what must be the same on every rank. */
static uint64_t fingerprint(int collective, starfold_op_t op, size_t nt, const starfold_tensor_desc_t *tensors)
{
    uint64_t h = STARFOLD__FNV_OFFSET;
#define MIX(v) (h = starfold__fnv1a(h, (uint64_t)(v)))
    MIX(collective);
    MIX(op);
    MIX(nt);
    for (size_t t = 0; tensors && t < nt; t++) {
        MIX(tensors[t].dtype);
        MIX(tensors[t].count);
    }
#undef MIX
    return h;
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
    const double t0 = starfold__now_s();
    const int limited = g->timeout_seconds > 0 && isfinite(g->timeout_seconds);
    int warned = 0, done = 0;
    long nap = 10000; /* ns */
    while (err == MPI_SUCCESS && !done) {
        err = MPI_Testall(nreq, req, &done, MPI_STATUSES_IGNORE);
        if (err != MPI_SUCCESS || done) break;
        const double waited = starfold__now_s() - t0;
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
        starfold__nap(&nap, 200000); /* the others are usually a few microseconds behind */
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
        if (all[r].collective != all[0].collective)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                   "%s: collective #%lld: rank %d calls %s, rank 0 %s; nothing was submitted", fn,
                                   (long long)all[0].sequence, r, collective_name(all[r].collective),
                                   collective_name(all[0].collective));
        /* Before the call's own tensors: a batch cut into several calls may agree on its first calls
         * and differ only in a later one, which one rank would then wait for alone. */
        if (all[r].batch != all[0].batch)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                   "%s: collective #%lld: rank %d reduces another batch than rank 0 (the whole "
                                   "reduction this call is part of: its values' dtypes, sizes or order, the op, "
                                   "bytes_per_pack or promote_integer_mean differ); nothing was submitted",
                                   fn, (long long)all[0].sequence, r);
        if (all[r].fingerprint != all[0].fingerprint && all[0].collective == SF_GROUP_ALL_GATHER)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                                   "%s: collective #%lld: rank %d gathers another dtype or row width than rank 0; "
                                   "nothing was submitted", fn, (long long)all[0].sequence, r);
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

/*
 * Round 1: this rank's verdict @st and what it is about to do (@w), against every other rank's. The
 * sequence number is consumed when this fails. @payloads: NULL, or [size] filled with every rank's
 * w->payload once they agree.
 */
starfold_status_t starfold__group_agree(const char *fn, starfold_group_t g, const starfold__agree_what_t *w,
                                        starfold_status_t st, int64_t *payloads)
{
    hello_t *all = calloc((size_t)g->size, sizeof *all);
    if (!all) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    char mine_msg[512];
    snprintf(mine_msg, sizeof mine_msg, "%s", st != STARFOLD_OK ? starfold_last_error() : "");
    const int ok = st == STARFOLD_OK;
    const hello_t mine = { g->sequence, fingerprint(w->collective, w->op, ok ? w->nt : 0, ok ? w->tensors : NULL),
                           (int32_t)st, (int32_t)w->op, (int64_t)(ok ? w->nt : 0), w->lowering, w->collective,
                           ok ? w->payload : 0, ok ? w->batch : 0 };
    starfold_status_t agreed = exchange(fn, g, 0, &mine, all);
    if (agreed == STARFOLD_OK) agreed = verdict(fn, g, all, mine_msg);
    if (agreed != STARFOLD_OK) g->sequence++;
    for (int r = 0; agreed == STARFOLD_OK && payloads && r < g->size; r++) payloads[r] = all[r].payload;
    free(all);
    return agreed;
}

/*
 * Round 2: everyone's local part was accepted, or nobody crosses ranks. The same time-limited
 * exchange (a rank that gave up in the first round never answers this one); @st is this rank's
 * submission, and this rank's own failure keeps its message.
 */
starfold_status_t starfold__group_agree_submitted(const char *fn, starfold_group_t g, int lowering, starfold_status_t st)
{
    hello_t *all = calloc((size_t)g->size, sizeof *all);
    if (!all) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    char mine_msg[512];
    snprintf(mine_msg, sizeof mine_msg, "%s", st != STARFOLD_OK ? starfold_last_error() : "");
    const hello_t go = { g->sequence, 0, (int32_t)st, 0, 0, lowering, 0, 0 };
    starfold_status_t both = exchange(fn, g, 1, &go, all);
    for (int r = 0; both == STARFOLD_OK && r < g->size; r++)
        if (all[r].status != STARFOLD_OK && r != g->rank)
            both = starfold__error(STARFOLD_ERR_RUNTIME, "%s: rank %d could not submit its local part (%s); nothing "
                                   "crossed ranks", fn, r, starfold_status_string((starfold_status_t)all[r].status));
    free(all);
    if (st != STARFOLD_OK) return starfold__error(st, "%s", mine_msg);
    return both;
}
