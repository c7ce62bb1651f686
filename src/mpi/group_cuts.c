/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * How the mpi lowering cuts a dtype's fusion buffer into MPI calls (the plan's cuts). Every rank, and
 * every plan of a rank (direct, packed, relay, leaders), makes the same calls in the same order: the
 * cuts follow from the tensor list and the group's measured links only, which are the same bits on
 * every rank. A call ends at a tensor's edge, never inside one:
 *
 *     tensors   s s s S s s s s s S S s        s: smaller than a piece   S: a piece or more
 *     calls     [s s s][S][s s s s s][S][S][s] (small runs cut when they reach a piece)
 *
 * Why cut: the packed plan copies every byte into a staging buffer before MPI, and out after. With
 * calls per piece it packs piece k + 1 while MPI reduces piece k, and a tensor of a piece or more goes
 * to MPI straight from its own input into its own output, as Horovod sends large tensors unfused:
 * copying it twice costs more than the call it saves. The other plans read one run already, and make
 * the same calls on it, all in flight at once.
 *
 * The piece, from the group's measurements: a call costs about 2 log2(n) latencies of the slowest
 * link it crosses (call_us); a byte copied twice costs 2 / B, B the shared-memory bandwidth the group
 * measured (a copy between two ranks' memories, what a pack is). A tensor saves more by its own call
 * than the call costs once 2 bytes / B > call_us, and a piece should carry at least ten calls' worth
 * of the link's time so that the calls' own cost stays under a tenth: piece = the larger of the two,
 * and at least PIECE_MIN_BYTES (fewer calls than tensors where latencies are microseconds).
 * STARFOLD_MPI_PIECE_BYTES overrides it (agreed at creation: every rank the same); 0 makes one call
 * per dtype, as before the cuts.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "base/common.h"
#include "mpi/group.h"
#include "mpi/group_plan.h"

#define PIECE_MIN_BYTES ((size_t)256 << 10)

size_t starfold__group_piece_bytes(starfold_group_t g)
{
    if (g->piece_bytes >= 0) return (size_t)g->piece_bytes; /* STARFOLD_MPI_PIECE_BYTES */
    const starfold_link_t *slow = g->num_nodes > 1 ? &g->network_link : &g->shm_link;
    const double steps = g->size > 1 ? 2 * ceil(log2((double)g->size)) : 1;
    const double call_us = steps * fmax(slow->latency_us, 1.0);
    const double unfused = call_us * g->shm_link.bandwidth_GBps * 1e3 / 2;   /* GB/s = 1e3 bytes per us */
    const double amortised = 10 * call_us * slow->bandwidth_GBps * 1e3;
    const double piece = fmax(fmax(unfused, amortised), (double)PIECE_MIN_BYTES);
    return piece < 1e15 ? (size_t)piece : (size_t)1e15;
}

starfold_status_t starfold__group_cuts(starfold_group_t g, starfold__plan_t *p)
{
    const size_t piece = starfold__group_piece_bytes(g);
    for (int dt = 0; dt < STARFOLD_DTYPE_COUNT; dt++) {
        const size_t es = starfold_dtype_size((starfold_dtype_t)dt);
        size_t tensors = 0;
        for (size_t t = 0; t < p->nt; t++) tensors += (int)p->tensors[t].dtype == dt && p->tensors[t].count;
        if (!tensors) continue;
        /* Every cut ends a distinct tensor: at most one per tensor. */
        size_t *cuts = malloc(sizeof *cuts * tensors), n = 0, at = 0, start = 0;
        if (!cuts) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_group_all_reduce: out of memory");
        for (size_t t = 0; t < p->nt; t++) {
            const size_t count = p->tensors[t].count;
            if ((int)p->tensors[t].dtype != dt || !count) continue;
            const int large = piece > 0 && count * es >= piece;
            if (large && start < at) cuts[n++] = start = at; /* the small run before it ends */
            at += count;
            if (large || (piece > 0 && (at - start) * es >= piece)) cuts[n++] = start = at;
        }
        if (!n || cuts[n - 1] != at) cuts[n++] = at;
        p->cuts[dt] = cuts;
        p->ncuts[dt] = n;
    }
    return STARFOLD_OK;
}
