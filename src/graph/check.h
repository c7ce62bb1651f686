/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * What the checker's files share (check.c: the ancestry checks; check_nodes.c: the structure).
 * Private to the graph layer.
 */
#ifndef STARFOLD_SRC_GRAPH_CHECK_H
#define STARFOLD_SRC_GRAPH_CHECK_H

#include "graph/graph.h"

typedef struct { char s[96]; } ck_text_t;

/* "node 3 (reduce on device 1)", "input buffer 2 (slot 0, tensor 1 on device 0)" for messages. */
ck_text_t starfold__check_node_text(const struct starfold_graph *g, size_t i);
ck_text_t starfold__check_buf_text(const struct starfold_graph *g, size_t b);

/* Whether node @n reads src span @s and writes dst span @d element by element at the same positions
 * (a node may then write over what it reads there). */
int starfold__check_maps_elementwise(const starfold__node_t *n, size_t s, size_t d);

/* Check 1: every buffer's device and dtype, and every node on its own (check_nodes.c). */
starfold_status_t starfold__check_structure(const struct starfold_graph *g);

#endif /* STARFOLD_SRC_GRAPH_CHECK_H */
