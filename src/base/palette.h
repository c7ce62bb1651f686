/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * One palette for every picture starfold draws: topologies (starfold topo), graphs (starfold graph)
 * and timelines (starfold run --trace). A link kind or a task kind has the same colour everywhere, and
 * each picture's legend says what the colours mean.
 */
#ifndef STARFOLD_SRC_BASE_PALETTE_H
#define STARFOLD_SRC_BASE_PALETTE_H

#include <starfold/graph.h>
#include <starfold/topology.h>

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

/* Colour of a link of kind @kind, and of the graph edges that cross it. */
static inline const char *starfold__link_colour(starfold_link_kind_t kind)
{
    switch (kind) {
    case STARFOLD_LINK_NVLINK: return "#2ca02c";       /* green */
    case STARFOLD_LINK_PCIE: return "#1f77b4";         /* blue */
    case STARFOLD_LINK_INTER_SOCKET: return "#ff7f0e"; /* orange */
    case STARFOLD_LINK_HOST: return "#9467bd";         /* purple */
    case STARFOLD_LINK_SHM: return "#8c564b";          /* brown */
    case STARFOLD_LINK_NETWORK: return "#e377c2";      /* pink */
    }
    return "#7f7f7f";
}

/* An edge between devices with no direct link. */
#define SF_NO_LINK_COLOUR "#d62728" /* red */

#endif /* STARFOLD_SRC_BASE_PALETTE_H */
