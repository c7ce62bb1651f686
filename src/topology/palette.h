/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * One palette for every picture starfold draws: topologies (starfold topo), graphs (starfold graph)
 * and timelines (starfold run --trace). A link kind or a task kind has the same colour everywhere, and
 * each picture's legend says what the colours mean. The links' colours are here, with the
 * topology that has the links; the tasks' are graph/palette.h.
 */
#ifndef STARFOLD_SRC_TOPOLOGY_PALETTE_H
#define STARFOLD_SRC_TOPOLOGY_PALETTE_H

#include <starfold/topology.h>

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

#endif /* STARFOLD_SRC_TOPOLOGY_PALETTE_H */
