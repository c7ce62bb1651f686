/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The ID discipline of the exporter's cgraph graphs: subgraphs numbered in creation order, so that
 * DOT output does not depend on heap addresses (export.h).
 */
#include "config.h"

#include <stdio.h>

#include "base/common.h"
#include "graph/export.h"


/*
 * Re-entrance. During a layout Graphviz opens auxiliary graphs with the root graph's discipline, so
 * ids_open() runs again on the same ag_ids_t while the root is open. Only the first open owns the
 * exporter's state; each later open gets a small state of its own (delegate) that hands everything
 * to the default discipline and is freed by its own close. Before this, a later open overwrote the
 * root's `root` and `dflt` and its close freed the root's name table while the root was still open
 * (the name table, 64 bytes, was then reallocated and its bookkeeping depended on the order of the
 * closes: the leak per render reported against this discipline).
 */
static void *ids_open(Agraph_t *g, Agdisc_t *disc)
{
    ag_ids_t *s = (ag_ids_t *)(void *)disc->id;
    if (!s->root) {
        s->root = g;
        s->dflt = AgIdDisc.open(g, disc);
        return s;
    }
    ag_ids_t *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->delegate = 1;
    d->root = g;
    d->dflt = AgIdDisc.open(g, disc);
    return d;
}

/* Index of one of our IDs in names[], or -1 for an ID of the default discipline. */
static long ids_mine(const ag_ids_t *s, int objtype, IDTYPE id)
{
    return objtype == AGRAPH && id % 2 == 0 && id >= 2 && id / 2 <= s->n ? (long)(id / 2 - 1) : -1;
}

static long ids_map(void *state, int objtype, char *str, IDTYPE *id, int createflag)
{
    ag_ids_t *s = state;
    if (!str || objtype != AGRAPH || s->delegate) return AgIdDisc.map(s->dflt, objtype, str, id, createflag);
    for (size_t i = 0; i < s->n; i++)
        if (s->names[i] && !strcmp(s->names[i], str)) {
            *id = 2 * (IDTYPE)(i + 1);
            return 1;
        }
    /* Unknown, or out of memory: cgraph falls back to its internal map (correct, order unkept). */
    if (!createflag || SF_GROW(s->names, s->n, s->cap) || !(s->names[s->n] = agstrdup(s->root, str))) return 0;
    *id = 2 * (IDTYPE)(++s->n);
    return 1;
}

static long ids_alloc(void *state, int objtype, IDTYPE id)
{
    ag_ids_t *s = state;
    return ids_mine(s, objtype, id) >= 0 ? 0 : AgIdDisc.alloc(s->dflt, objtype, id);
}

static void ids_free(void *state, int objtype, IDTYPE id)
{
    ag_ids_t *s = state;
    const long i = ids_mine(s, objtype, id);
    if (i < 0) {
        AgIdDisc.free(s->dflt, objtype, id);
    } else if (s->names[i]) {
        agstrfree(s->root, s->names[i]);
        s->names[i] = NULL;
    }
}

static char *ids_print(void *state, int objtype, IDTYPE id)
{
    ag_ids_t *s = state;
    const long i = ids_mine(s, objtype, id);
    return i >= 0 ? s->names[i] : AgIdDisc.print(s->dflt, objtype, id);
}

/* Names still held are interned strings, released with the graph's string dictionary. */
static void ids_close(void *state)
{
    ag_ids_t *s = state;
    AgIdDisc.close(s->dflt);
    if (s->delegate) {
        free(s);
        return;
    }
    free(s->names);
    s->names = NULL;
    s->n = s->cap = 0;
    s->root = NULL;
}

static void ids_register(void *state, int objtype, void *obj)
{
    AgIdDisc.idregister(((ag_ids_t *)state)->dflt, objtype, obj);
}

void starfold__ag_ids_init(ag_ids_t *ids)
{
    memset(ids, 0, sizeof *ids);
    ids->id = (Agiddisc_t){ ids_open, ids_map, ids_alloc, ids_free, ids_print, ids_close, ids_register };
}
