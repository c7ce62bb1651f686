/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Graphviz output shared by topology and graph exports. cgraph writes DOT in node-creation order,
 * so an exporter that creates nodes deterministically gets byte-identical files (golden tests rely on
 * it). Rendering lays out with "dot" through one gvc context for the process, created on first use
 * and never freed: Graphviz 2.4x's gvFreeContext() frees the font-name cache while the pango plugin
 * keeps a pointer into it, so every context after the first reads freed memory (valgrind, ASan).
 * gvc keeps global state, so calls are serialised by a mutex.
 */
#include "config.h"

#include "base/common.h"
#include "base/gv.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <graphviz/gvc.h>

static pthread_mutex_t gvc_lock = PTHREAD_MUTEX_INITIALIZER;
static GVC_t *gvc_shared; /* guarded by gvc_lock; lives until exit */

static const char *extension(const char *path)
{
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    return dot && (!slash || dot > slash) ? dot + 1 : "";
}

starfold_status_t starfold__format_from_path(const char *path, starfold__format_t *format)
{
    if (!path || !*path) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "empty output path");
    const char *ext = extension(path);
    if (!strcmp(path, "-") || starfold__streq_nocase(ext, "dot") || starfold__streq_nocase(ext, "gv")) *format = SF_FORMAT_DOT;
    else if (starfold__streq_nocase(ext, "svg")) *format = SF_FORMAT_SVG;
    else if (starfold__streq_nocase(ext, "png")) *format = SF_FORMAT_PNG;
    else
        return starfold__error(STARFOLD_ERR_NOT_SUPPORTED, "%s: unknown output format '.%s' (use .dot, .svg or .png)", path,
                        ext);
    return STARFOLD_OK;
}

void starfold__agset(void *obj, const char *name, const char *fmt, ...)
{
    char buf[1024]; /* a picture's title is the longest value */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    agsafeset(obj, (char *)name, buf, "");
}

/* The shared context, created on first use; NULL (error recorded) when Graphviz cannot make one. */
static GVC_t *shared_context(void)
{
    if (!gvc_shared) gvc_shared = gvContext();
    if (!gvc_shared) starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "Graphviz: cannot create a rendering context");
    return gvc_shared;
}

/* Renders a laid-out @g into @path and frees the layout; the caller holds gvc_lock. */
static starfold_status_t render_laid_out(GVC_t *gvc, Agraph_t *g, const char *path, starfold__format_t format)
{
    starfold_status_t st = STARFOLD_OK;
    if (gvRenderFilename(gvc, g, format == SF_FORMAT_SVG ? "svg" : "png", path) != 0)
        st = starfold__error(STARFOLD_ERR_IO, "%s: Graphviz could not render (is the %s plugin installed?)", path,
                             format == SF_FORMAT_SVG ? "svg" : "png");
    gvFreeLayout(gvc, g);
    return st;
}

/* The format of a picture (DOT is not one), with the file opened once to report a bad path. */
static starfold_status_t picture_format(const char *path, starfold__format_t *format)
{
    starfold_status_t st = starfold__format_from_path(path, format);
    if (st != STARFOLD_OK) return st;
    if (*format == SF_FORMAT_DOT) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: not a picture format", path);
    /* gvRenderFilename() reports "Could not open" on stderr yet returns 0: open it here first. */
    FILE *probe = fopen(path, "wb");
    if (!probe) return starfold__error(STARFOLD_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
    fclose(probe);
    return STARFOLD_OK;
}

starfold_status_t starfold__agraph_save(Agraph_t *g, const char *path)
{
    starfold__format_t format;
    starfold_status_t st = starfold__format_from_path(path, &format);
    if (st != STARFOLD_OK) return st;

    if (format == SF_FORMAT_DOT) {
        FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
        if (!f) return starfold__error(STARFOLD_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
        int rc = agwrite(g, f);
        int rc2 = f == stdout ? fflush(f) : fclose(f);
        if (rc != 0 || rc2 != 0) return starfold__error(STARFOLD_ERR_IO, "%s: write failed", path);
        return STARFOLD_OK;
    }
    if ((st = picture_format(path, &format)) != STARFOLD_OK) return st;

    pthread_mutex_lock(&gvc_lock);
    GVC_t *gvc = shared_context();
    if (!gvc) {
        pthread_mutex_unlock(&gvc_lock);
        return STARFOLD_ERR_OUT_OF_MEMORY;
    }
    /* A picture with its own positions asks for neato (layout=neato on the graph); dot otherwise. */
    const char *engine = agget(g, "layout");
    if (gvLayout(gvc, g, engine && *engine ? engine : "dot") != 0)
        st = starfold__error(STARFOLD_ERR_RUNTIME, "Graphviz: dot layout failed for %s", path);
    else
        st = render_laid_out(gvc, g, path, format);
    pthread_mutex_unlock(&gvc_lock);
    return st;
}

starfold_status_t starfold__agraph_save_late(Agraph_t *g, const char *path, starfold_status_t (*late)(void *), void *arg)
{
    starfold__format_t format;
    starfold_status_t st = picture_format(path, &format);
    if (st != STARFOLD_OK) return st;
    pthread_mutex_lock(&gvc_lock);
    GVC_t *gvc = shared_context();
    if (!gvc) {
        pthread_mutex_unlock(&gvc_lock);
        return STARFOLD_ERR_OUT_OF_MEMORY;
    }
    char *laid = NULL;
    unsigned int len = 0;
    if (gvLayout(gvc, g, "dot") != 0) {
        st = starfold__error(STARFOLD_ERR_RUNTIME, "Graphviz: dot layout failed for %s", path);
        goto out;
    }
    /* Rendering as DOT writes the layout into the graph's attributes (pos, bb, lp): what nop2 reads. */
    const int rc = gvRenderData(gvc, g, "dot", &laid, &len);
    gvFreeRenderData(laid);
    gvFreeLayout(gvc, g);
    if (rc != 0) {
        st = starfold__error(STARFOLD_ERR_RUNTIME, "Graphviz: cannot keep the layout of %s", path);
        goto out;
    }
    if ((st = late(arg)) != STARFOLD_OK) goto out;
    /* Edges routed around the nodes ("true") unless the picture asked for less: that takes seconds past
     * a hundred nodes and minutes past a few hundred; "curved" is instant and crosses nodes. */
    const char *splines = agget(g, "splines");
    if (!splines || !*splines) agsafeset(g, "splines", agnnodes(g) <= 80 ? "true" : "curved", "");
    if (gvLayout(gvc, g, "nop2") != 0) {
        st = starfold__error(STARFOLD_ERR_RUNTIME, "Graphviz: cannot route the edges of %s", path);
        goto out;
    }
    st = render_laid_out(gvc, g, path, format);
out:
    pthread_mutex_unlock(&gvc_lock);
    return st;
}

void starfold__add_legend(Agraph_t *g, const char *html)
{
    Agraph_t *c = agsubg(g, "cluster_legend", 1);
    if (!c) return; /* out of memory: the picture goes without */
    agsafeset(c, "label", "", "");
    agsafeset(c, "color", "white", "");
    Agnode_t *n = agnode(c, "legend", 1);
    if (!n) return;
    /* Defaults as Graphviz's own: declaring an attribute gives every other node its default. */
    agsafeset(n, "shape", "plaintext", agget(n, "shape") ? agget(n, "shape") : "ellipse");
    char *label = agstrdup_html(g, (char *)html);
    if (label) {
        agsafeset(n, "label", label, "\\N");
        agstrfree(g, label);
    }
}
