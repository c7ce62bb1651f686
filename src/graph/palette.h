/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The tasks' colours of the one palette (topology/palette.h has the picture and the links' colours,
 * which this header brings along for the graph pictures' edges).
 */
#ifndef STARFOLD_SRC_GRAPH_PALETTE_H
#define STARFOLD_SRC_GRAPH_PALETTE_H

#include <starfold/graph.h>

#include "topology/palette.h"

/* Fill of a task of kind @kind (a starfold_task_kind_t). */
static inline const char *starfold__kind_fill(int kind)
{
    switch (kind) {
    case STARFOLD_TASK_COPY: return "#aec7e8";   /* light blue */
    case STARFOLD_TASK_REDUCE: return "#ffbb78"; /* light orange */
    case STARFOLD_TASK_SCALE: return "#98df8a";  /* light green */
    case STARFOLD_TASK_PACK: return "#c5b0d5";   /* lavender */
    case STARFOLD_TASK_UNPACK: return "#f7b6d2"; /* pink */
    }
    return "#ffffff";
}

#endif /* STARFOLD_SRC_GRAPH_PALETTE_H */
