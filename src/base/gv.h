/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Saving a cgraph graph: DOT through agwrite(), SVG and PNG through gvc's dot layout. Shared by the
 * topology and graph exporters; the format comes from the path's extension.
 */
#ifndef STARFOLD_SRC_EXPORT_H
#define STARFOLD_SRC_EXPORT_H

#include <graphviz/cgraph.h>
#include <starfold/common.h>

typedef enum starfold__format { SF_FORMAT_DOT = 0, SF_FORMAT_SVG, SF_FORMAT_PNG } starfold__format_t;

/* Format from the extension (.dot/.gv, .svg, .png; "-" is DOT on stdout). NOT_SUPPORTED otherwise. */
starfold_status_t starfold__format_from_path(const char *path, starfold__format_t *format);

/* Writes @g to @path in the format its extension names. Does not close @g. */
starfold_status_t starfold__agraph_save(Agraph_t *g, const char *path);

/*
 * A picture (SVG, PNG) in two passes: dot lays out @g, then @late(@arg) adds edges to it, which
 * Graphviz routes around the nodes where dot put them ("nop2", neato -n2). Edges that dot would use to
 * reorder clusters (every edge between two device boxes) come late, so the boxes keep their order.
 */
starfold_status_t starfold__agraph_save_late(Agraph_t *g, const char *path, starfold_status_t (*late)(void *), void *arg);

/*
 * A legend for a rendered picture: a cluster "legend" holding one plain node whose label is @html
 * (a Graphviz HTML-like label, a <table>). Never in a .dot file: that stays the data.
 */
void starfold__add_legend(Agraph_t *g, const char *html);

/* agsafeset with a formatted value. */
void starfold__agset(void *obj, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* STARFOLD_SRC_EXPORT_H */
