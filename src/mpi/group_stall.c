/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Stall warnings for the waits that come after the agreement: a collective every rank joined, whose
 * MPI task, graph of sends and receives or local tasks have not finished. The agreement names the
 * ranks that never joined (group_agree.c); here every rank has joined, and MPI cannot say which one
 * stopped. So each rank that keeps waiting says so to the others (a beacon: the collective's number),
 * and the one that never does is the one named:
 *
 *   rank 0 waits in #12 past stall/4 --beacon #12--> ranks 1, 2
 *   rank 1 waits in #12 past stall/4 --beacon #12--> ranks 0, 2
 *   rank 2: stopped (SIGSTOP, a debugger, a node gone)
 *   rank 0 at stall: "collective #12 has waited 60.0 s since every rank joined it; rank 2 sent no
 *                     word of waiting for it since (stopped, or busy outside starfold?)"
 *
 * The collectives bump g->sequence once agreed, before these waits: the one waited for is number
 * g->sequence - 1 in the messages (the agreement's numbering), and the beacons carry g->sequence,
 * the same on every rank. Beacons travel on the agreement's communicator with a tag of their own, sent without waiting
 * (MPI_Isend, the request freed, as the "broken" notices) from a buffer that lives with the group;
 * they are received by matched probes (MPI_Improbe / MPI_Mrecv), so that another thread probing the
 * same communicator cannot take one from under the receive. Nothing here changes what the waits
 * return: the group's timeout_seconds still ends them.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/common.h"
#include "mpi/group.h"

#define BEACON_TAG 32001

static int limited(double seconds)
{
    return seconds > 0 && isfinite(seconds);
}

void starfold__group_stall_begin(starfold_group_t g, starfold__stall_t *s, const char *what)
{
    s->t0 = starfold__now_s();
    s->what = what;
    s->state = 2;
    if (!g || g->size < 2) return;
    /* Beacons early enough that the others have them when they warn, or give up (timeout_seconds). */
    const double warn = g->stall_warning_seconds, limit = g->timeout_seconds;
    s->beacon_at = limited(warn) && limited(limit) ? fmin(warn, limit) / 4 : limited(warn) ? warn / 4 : limit / 4;
    s->warn = limited(warn);
    if (limited(warn) || limited(limit)) s->state = 0;
}

/* Every beacon received so far: the highest collective each rank said it waits for. */
static void drain(starfold_group_t g)
{
    for (;;) {
        int flag = 0;
        MPI_Message m;
        MPI_Status status;
        if (MPI_Improbe(MPI_ANY_SOURCE, BEACON_TAG, g->comm, &flag, &m, &status) != MPI_SUCCESS || !flag) return;
        long seq = -1;
        MPI_Mrecv(&seq, 1, MPI_LONG, &m, MPI_STATUS_IGNORE);
        if (status.MPI_SOURCE >= 0 && status.MPI_SOURCE < g->size && seq > g->heard[status.MPI_SOURCE])
            g->heard[status.MPI_SOURCE] = seq;
    }
}

/* Tells every other rank that this one waits in the current collective (once per collective). */
static void send_beacons(starfold_group_t g)
{
    if (g->beacon == g->sequence) return;
    g->beacon = g->sequence;
    for (int r = 0; r < g->size; r++) {
        if (r == g->rank) continue;
        MPI_Request rq;
        if (MPI_Isend(&g->beacon, 1, MPI_LONG, r, BEACON_TAG, g->comm, &rq) == MPI_SUCCESS) MPI_Request_free(&rq);
    }
}

int starfold__group_stall_silent(starfold_group_t g, char *who, size_t len)
{
    drain(g);
    size_t at = 0;
    int silent = 0;
    who[0] = '\0';
    for (int r = 0; r < g->size; r++) {
        if (r == g->rank || g->heard[r] >= g->sequence) continue;
        if (at + 16 < len) at += (size_t)snprintf(who + at, len - at, "%s%d", silent ? ", " : "", r);
        else if (at + 4 < len) at += (size_t)snprintf(who + at, len - at, "...");
        silent++;
    }
    return silent;
}

void starfold__group_stall_poll(starfold_group_t g, starfold__stall_t *s)
{
    if (s->state == 2) return;
    const double waited = starfold__now_s() - s->t0;
    if (s->state == 0 && waited >= s->beacon_at) {
        send_beacons(g);
        s->state = 1;
    }
    if (s->state != 1 || !s->warn || waited < g->stall_warning_seconds) return;
    char who[512];
    const int silent = starfold__group_stall_silent(g, who, sizeof who);
    if (silent)
        fprintf(stderr, "starfold: rank %d: collective #%ld has waited %.1f s for %s since every rank joined it; "
                        "rank%s %s sent no word of waiting for it (stopped, or busy outside starfold?)\n",
                g->rank, g->sequence - 1, waited, s->what, silent > 1 ? "s" : "", who);
    else
        fprintf(stderr, "starfold: rank %d: collective #%ld has waited %.1f s for %s since every rank joined it; "
                        "every other rank waits for it too (a device, a worker or the network is stuck?)\n",
                g->rank, g->sequence - 1, waited, s->what);
    s->state = 2;
}

const char *starfold__group_stall_suffix(starfold_group_t g, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!g || g->size < 2) return buf;
    char who[256];
    const int silent = starfold__group_stall_silent(g, who, sizeof who);
    if (silent)
        snprintf(buf, len, "; rank%s %s sent no word of waiting for it (stopped, or busy outside starfold?)",
                 silent > 1 ? "s" : "", who);
    else
        snprintf(buf, len, "; every other rank waited for it too");
    return buf;
}

void starfold__group_stall_end(starfold_group_t g)
{
    if (g && g->heard) drain(g);
}
