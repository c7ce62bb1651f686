/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Reading a topology from Graphviz DOT (format: graphs/README.md). cgraph parses; this file only
 * checks the attributes and turns nodes into devices and edges into links.
 *
 * cgraph facts this relies on (Graphviz 2.4x):
 *  - its parser is global state: every use runs under starfold__cgraph_lock();
 *  - syntax errors go through the agseterrf() hook in pieces ("Error", ": ", "syntax error in line N
 *    near 'x'\n"), collected here into one buffer;
 *  - its lexer keeps what it read past the end of the graph and hands it to the *next* agread, even
 *    from another text: after each graph we read again from the same channel until end of input, which
 *    also rejects a second graph or trailing garbage, and we reset its line counter before each read;
 *  - its flex lexer also keeps its start condition (inside a quoted string, an HTML string, a comment)
 *    and its buffer across agread calls: text that ends inside a string leaves the next parse, of an
 *    unrelated text, starting in the middle of a string (the fuzzer found inputs after which the lexer
 *    grew its buffer to 2 GiB). flex's aaglex_destroy(), exported by libcgraph but not declared in its
 *    headers, resets all of that: it is called before and after each parse, when present (weak);
 *  - nodes and edges keep their creation order as AGSEQ, which is their order in the text;
 *  - it keeps no line numbers for nodes and edges: errors about them find their line by scanning the
 *    text for the node name or the edge's endpoints (best effort: an edge written through a subgraph,
 *    `a -- {b c}`, is reported without a line).
 */
#include "config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/common.h"
#include "topology/topology.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <graphviz/cgraph.h>

static pthread_mutex_t cgraph_mutex = PTHREAD_MUTEX_INITIALIZER;

/* cgraph's flex lexer's reset (see the top of the file); weak: absent from a libcgraph without it. */
extern int aaglex_destroy(void) __attribute__((weak));

static void reset_lexer(void)
{
    if (aaglex_destroy) aaglex_destroy();
}

void starfold__cgraph_lock(void) { pthread_mutex_lock(&cgraph_mutex); }
void starfold__cgraph_unlock(void) { pthread_mutex_unlock(&cgraph_mutex); }

/* ------------------------------------------------------------------------------------------------
 * Attributes. Presentation attributes (what write_dot adds for drawing) are accepted and ignored.
 */

static const char *const graph_attrs[] = { "name", NULL };
static const char *const node_attrs[] = { "id", "name", "label", "kind", "socket", "rank", "memory", NULL };
static const char *const edge_attrs[] = { "kind", "bandwidth", "latency", "lanes", NULL };
static const char *const graph_style[] = { "label", "rankdir", "layout", "splines", "overlap", "fontname",
                                           "fontsize", NULL };
static const char *const node_style[] = { "shape", "color", "style", "fillcolor", "fontname", "fontsize", NULL };
static const char *const edge_style[] = { "label", "color", "style", "penwidth", "fontname", "fontsize", NULL };

static int in_list(const char *const *list, const char *name)
{
    for (; *list; list++)
        if (!strcmp(*list, name)) return 1;
    return 0;
}

/* The value the text gives @obj, NULL when none (cgraph answers "" for a declared but unset attribute). */
static const char *attr(void *obj, const char *name)
{
    const char *v = agget(obj, (char *)name);
    return v && *v ? v : NULL;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    while (end != s && isspace((unsigned char)*end)) end++;
    if (end == s || *end || errno == ERANGE || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    while (end != s && isspace((unsigned char)*end)) end++;
    if (end == s || *end || errno == ERANGE || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

/* ------------------------------------------------------------------------------------------------
 * Finding the line of a node, an edge or an attribute in the text. Not a parser: a tokenizer that
 * knows DOT's comments, quoted and HTML strings and edge operators, and a three-token window.
 */

enum { TOK_END, TOK_ID, TOK_EDGEOP, TOK_EQ, TOK_OTHER };

typedef struct {
    int kind;
    int line;
    char text[256];   /* an ID's text, unquoted; truncated names simply do not match */
} starfold__token_t;

static void put_char(starfold__token_t *tok, size_t *len, char c)
{
    if (*len + 1 < sizeof tok->text) tok->text[(*len)++] = c;
}

/* Skips blanks and comments, counting lines. */
static const char *skip_space(const char *p, int *line)
{
    for (;;) {
        if (*p == '\n') (*line)++, p++;
        else if (isspace((unsigned char)*p)) p++;
        else if (*p == '#' || (p[0] == '/' && p[1] == '/')) while (*p && *p != '\n') p++;
        else if (p[0] == '/' && p[1] == '*') {
            for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++)
                if (*p == '\n') (*line)++;
            if (*p) p += 2;
        } else return p;
    }
}

static int id_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '.' || (unsigned char)c >= 0x80; }

static const char *next_token(const char *p, int *line, starfold__token_t *tok)
{
    size_t len = 0;
    p = skip_space(p, line);
    tok->line = *line;
    if (!*p) {
        tok->kind = TOK_END;
    } else if (*p == '"') {
        for (p++; *p && *p != '"'; p++) {
            if (*p == '\\' && p[1] == '\n') { (*line)++; p++; continue; }
            if (*p == '\\' && p[1] == '"') p++;
            if (*p == '\n') (*line)++;
            put_char(tok, &len, *p);
        }
        if (*p) p++;
        tok->kind = TOK_ID;
    } else if (*p == '<') {
        int depth = 0;
        do {
            if (*p == '<') depth++;
            else if (*p == '>') depth--;
            else if (*p == '\n') (*line)++;
            put_char(tok, &len, *p++);
        } while (*p && depth > 0);
        tok->kind = TOK_ID;
    } else if (p[0] == '-' && (p[1] == '-' || p[1] == '>')) {
        p += 2;
        tok->kind = TOK_EDGEOP;
    } else if (id_char(*p) || *p == '-') {
        do put_char(tok, &len, *p++); while (id_char(*p));
        tok->kind = TOK_ID;
    } else {
        tok->kind = *p++ == '=' ? TOK_EQ : TOK_OTHER;
    }
    tok->text[len] = '\0';
    return p;
}

typedef enum { FIND_NODE, FIND_EDGE, FIND_ATTR } starfold__find_t;

static int is_id(const starfold__token_t *t, const char *name) { return t->kind == TOK_ID && !strcmp(t->text, name); }

/*
 * Line of: the first mention of node @a that is no attribute name or value (FIND_NODE); the
 * @occurrence-th (from 0) edge between @a and @b, either way round (FIND_EDGE); the first `a =`
 * (FIND_ATTR). 0 when not found.
 */
static int find_line(const char *src, starfold__find_t what, const char *a, const char *b, int occurrence)
{
    starfold__token_t w[3] = { { .kind = TOK_OTHER }, { .kind = TOK_OTHER }, { .kind = TOK_OTHER } };
    int line = 1;
    const char *p = src;
    do {
        w[0] = w[1];
        w[1] = w[2];
        p = next_token(p, &line, &w[2]);
        switch (what) {
        case FIND_NODE:
            if (is_id(&w[1], a) && w[0].kind != TOK_EQ && w[2].kind != TOK_EQ) return w[1].line;
            break;
        case FIND_ATTR:
            if (is_id(&w[1], a) && w[0].kind != TOK_EQ && w[2].kind == TOK_EQ) return w[1].line;
            break;
        case FIND_EDGE:
            if (w[1].kind == TOK_EDGEOP &&
                ((is_id(&w[0], a) && is_id(&w[2], b)) || (is_id(&w[0], b) && is_id(&w[2], a))) && occurrence-- == 0)
                return w[0].line;
            break;
        }
    } while (w[2].kind != TOK_END);
    return 0;
}

/*
 * The line of every device, in one pass over the text (what find_line(FIND_NODE) answers for each,
 * without rescanning the text once per device): each name token that is no attribute name or value
 * is looked up among the graph's nodes (cgraph's own index), and the first mention of a node wins.
 */
static void device_lines(const char *src, Agraph_t *g, Agnode_t *const *node_of, int n, int *lines)
{
    starfold__token_t w[3] = { { .kind = TOK_OTHER }, { .kind = TOK_OTHER }, { .kind = TOK_OTHER } };
    int line = 1, left = n;
    const char *p = src;
    for (int i = 0; i < n; i++) lines[i] = 0;
    do {
        w[0] = w[1];
        w[1] = w[2];
        p = next_token(p, &line, &w[2]);
        if (w[1].kind != TOK_ID || w[0].kind == TOK_EQ || w[2].kind == TOK_EQ) continue;
        Agnode_t *v = agnode(g, w[1].text, 0);
        if (!v) continue;
        for (int i = 0; i < n; i++)
            if (node_of[i] == v && lines[i] == 0) {
                lines[i] = w[1].line;
                left--;
                break;
            }
    } while (w[2].kind != TOK_END && left > 0);
}

/* ------------------------------------------------------------------------------------------------
 * Errors: "ORIGIN:LINE: message", or "ORIGIN: message" when the line is unknown (0).
 */

static starfold_status_t dot_error(starfold_status_t st, const char *origin, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static starfold_status_t dot_error(starfold_status_t st, const char *origin, int line, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0) return starfold__error(st, "%s:%d: %s", origin, line, msg);
    return starfold__error(st, "%s: %s", origin, msg);
}

/* ------------------------------------------------------------------------------------------------
 * Parsing with cgraph
 */

/* What cgraph reported while the hook was installed; guarded by cgraph_mutex. */
static char cg_report[512];
static size_t cg_report_len;

static int capture_report(char *piece)
{
    size_t n = strlen(piece);
    if (n > sizeof cg_report - 1 - cg_report_len) n = sizeof cg_report - 1 - cg_report_len;
    memcpy(cg_report + cg_report_len, piece, n);
    cg_report_len += n;
    cg_report[cg_report_len] = '\0';
    return 0;
}

typedef struct {
    const char *text;
    size_t len, pos;
} starfold__reader_t;

static int read_text(void *chan, char *buf, int size)
{
    starfold__reader_t *r = chan;
    size_t n = r->len - r->pos;
    if (n > (size_t)size) n = (size_t)size;
    memcpy(buf, r->text + r->pos, n);
    r->pos += n;
    return (int)n;
}

/* The error cgraph reported, as "ORIGIN:LINE: syntax error near 'x'"; @fallback when it said none. */
static starfold_status_t syntax_error(const char *origin, const char *fallback)
{
    const char *msg = strstr(cg_report, "Error: ");
    if (!msg) return dot_error(STARFOLD_ERR_PARSE, origin, 0, "%s", fallback);
    char text[256];
    snprintf(text, sizeof text, "%s", msg + strlen("Error: "));
    text[strcspn(text, "\n")] = '\0';
    int line = 0;
    char *at = strstr(text, " in line ");
    if (at) {
        line = atoi(at + strlen(" in line "));
        char *rest = at + strlen(" in line ");
        while (isdigit((unsigned char)*rest)) rest++;
        memmove(at, rest, strlen(rest) + 1);   /* "syntax error in line 3 near ';'" -> "syntax error near ';'" */
    }
    return dot_error(STARFOLD_ERR_PARSE, origin, line, "%s", text);
}

/* Parses @src into one graph; the caller holds the cgraph lock and closes *out. */
static starfold_status_t parse_dot(const char *src, const char *origin, Agraph_t **out)
{
    starfold__reader_t r = { .text = src, .len = strlen(src), .pos = 0 };
    Agiodisc_t io = { read_text, AgIoDisc.putstr, AgIoDisc.flush };
    Agdisc_t disc = { &AgMemDisc, &AgIdDisc, &io };
    starfold_status_t st = STARFOLD_OK;

    agusererrf previous = agseterrf(capture_report);
    cg_report_len = 0;
    cg_report[0] = '\0';
    reset_lexer();
    agreadline(1);
    Agraph_t *g = agread(&r, &disc);
    if (!g) {
        st = syntax_error(origin, "no graph in the text");
    } else {
        /*
         * Drain the lexer (see the top of the file). An error here is about text after the graph; its
         * line and token are those of cgraph's look-ahead, off by one, so neither is shown.
         */
        int extra = 0;
        for (Agraph_t *h; (h = agread(&r, &disc)) != NULL; extra++) agclose(h);
        if (extra) st = dot_error(STARFOLD_ERR_PARSE, origin, 0, "more than one graph (a topology is one graph)");
        else if (strstr(cg_report, "Error: "))
            st = dot_error(STARFOLD_ERR_PARSE, origin, 0, "text after the end of the graph");
    }
    reset_lexer();
    agseterrf(previous);
    if (st != STARFOLD_OK) {
        if (g) agclose(g);
        return st;
    }
    *out = g;
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------
 * From graph to topology
 */

typedef struct {
    const char *src, *origin;
    Agraph_t *g;
    int n;
    Agnode_t *node_of[STARFOLD_MAX_DEVICES];   /* device -> node */
    Agedge_t **edges;                          /* in text order */
    int num_edges;
} starfold__dot_t;

static starfold_status_t check_attributes(const starfold__dot_t *d)
{
    static const struct {
        int kind;
        const char *what;
        const char *const *known, *const *style;
        const char *list;
    } kinds[] = {
        { AGRAPH, "graph", graph_attrs, graph_style, "name" },
        { AGNODE, "node", node_attrs, node_style, "id, name, label, kind, socket, rank, memory" },
        { AGEDGE, "edge", edge_attrs, edge_style, "kind, bandwidth, latency, lanes" },
    };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (Agsym_t *s = agnxtattr(d->g, kinds[k].kind, NULL); s; s = agnxtattr(d->g, kinds[k].kind, s))
            if (!in_list(kinds[k].known, s->name) && !in_list(kinds[k].style, s->name))
                return dot_error(STARFOLD_ERR_PARSE, d->origin, find_line(d->src, FIND_ATTR, s->name, NULL, 0),
                                 "unknown %s attribute '%s' (known: %s)", kinds[k].what, s->name, kinds[k].list);
    return STARFOLD_OK;
}

static int node_line(const starfold__dot_t *d, Agnode_t *node)
{
    return find_line(d->src, FIND_NODE, agnameof(node), NULL, 0);
}

/* Fills node_of[]: by "id" when nodes carry one (all must), else in order of appearance. */
static starfold_status_t order_devices(starfold__dot_t *d)
{
    Agnode_t *first_with = NULL, *first_without = NULL;
    for (Agnode_t *v = agfstnode(d->g); v; v = agnxtnode(d->g, v)) {
        if (attr(v, "id")) {
            if (!first_with) first_with = v;
        } else if (!first_without) {
            first_without = v;
        }
    }
    if (first_with && first_without)
        return dot_error(STARFOLD_ERR_PARSE, d->origin, node_line(d, first_without),
                         "node '%s' has no id while node '%s' has one (all nodes or none)", agnameof(first_without),
                         agnameof(first_with));

    int i = 0;
    memset(d->node_of, 0, sizeof d->node_of);
    for (Agnode_t *v = agfstnode(d->g); v; v = agnxtnode(d->g, v), i++) {
        int id = i;
        if (first_with && parse_int(attr(v, "id"), 0, d->n - 1, &id) != 0)
            return dot_error(STARFOLD_ERR_PARSE, d->origin, node_line(d, v),
                             "node '%s': id must be an integer in 0..%d (ids number the devices), got '%s'",
                             agnameof(v), d->n - 1, attr(v, "id"));
        if (d->node_of[id])
            return dot_error(STARFOLD_ERR_PARSE, d->origin, node_line(d, v), "node '%s' has id %d, like node '%s'",
                             agnameof(v), id, agnameof(d->node_of[id]));
        d->node_of[id] = v;
    }
    return STARFOLD_OK;
}

static starfold_status_t read_device(const starfold__dot_t *d, starfold_topology_t t, int dev)
{
    Agnode_t *v = d->node_of[dev];
    const char *label = attr(v, "label");
    const char *name = attr(v, "name") ? attr(v, "name") : label && strcmp(label, "\\N") ? label : agnameof(v);
    starfold_device_kind_t kind = STARFOLD_DEVICE_GPU;
    int socket = -1;
    /* DOT allows a node called "" (found by fuzzing); a device needs a name to be shown and found. */
    if (!*name)
        return dot_error(STARFOLD_ERR_PARSE, d->origin, find_line(d->src, FIND_NODE, "", NULL, 0),
                         "a node with an empty name (\"\"): give each device a name");
    if (attr(v, "kind") && starfold__device_kind_parse(attr(v, "kind"), &kind) != 0)
        return dot_error(STARFOLD_ERR_PARSE, d->origin, node_line(d, v), "node '%s': kind must be gpu or cpu, got '%s'",
                         agnameof(v), attr(v, "kind"));
    if (attr(v, "socket") && parse_int(attr(v, "socket"), -1, 1 << 20, &socket) != 0)
        return dot_error(STARFOLD_ERR_PARSE, d->origin, node_line(d, v),
                         "node '%s': socket must be an integer >= -1, got '%s'", agnameof(v), attr(v, "socket"));
    int rank = 0;
    if (attr(v, "rank") && parse_int(attr(v, "rank"), 0, 1 << 24, &rank) != 0)
        return dot_error(STARFOLD_ERR_PARSE, d->origin, node_line(d, v),
                         "node '%s': rank must be an integer >= 0, got '%s'", agnameof(v), attr(v, "rank"));
    int memory = -1;
    if (attr(v, "memory") && parse_int(attr(v, "memory"), -1, 1 << 24, &memory) != 0)
        return dot_error(STARFOLD_ERR_PARSE, d->origin, node_line(d, v),
                         "node '%s': memory must be an integer >= -1, got '%s'", agnameof(v), attr(v, "memory"));
    starfold_status_t st = starfold_topology_set_device(t, dev, name, kind, socket);
    if (st == STARFOLD_OK) starfold__topology_set_rank(t, dev, rank);
    if (st == STARFOLD_OK) st = starfold_topology_set_device_memory(t, dev, memory);
    return st;
}

static int device_of(const starfold__dot_t *d, Agnode_t *v)
{
    for (int i = 0; i < d->n; i++)
        if (d->node_of[i] == v) return i;
    return -1;
}

/* Line of edge @i: the k-th mention of its endpoints, k = earlier edges between the same pair. */
static int edge_line(const starfold__dot_t *d, int i)
{
    Agnode_t *a = agtail(d->edges[i]), *b = aghead(d->edges[i]);
    int earlier = 0;
    for (int j = 0; j < i; j++) {
        Agnode_t *x = agtail(d->edges[j]), *y = aghead(d->edges[j]);
        earlier += (x == a && y == b) || (x == b && y == a);
    }
    return find_line(d->src, FIND_EDGE, agnameof(a), agnameof(b), earlier);
}

/* One numeric edge attribute: @dflt when absent (NAN: required), else a number in [lo, hi]. A value
 * strtod cannot hold (an underflow to a denormal, an overflow) is out of range like any other. */
static int edge_number(Agedge_t *e, const char *name, double dflt, double lo, double hi, double *out)
{
    const char *v = attr(e, name);
    if (!v) {
        *out = dflt;
        return isnan(dflt) ? -1 : 0;
    }
    return parse_double(v, out) == 0 && *out >= lo && *out <= hi ? 0 : -1;
}

static starfold_status_t read_link(const starfold__dot_t *d, starfold_topology_t t, int i)
{
    Agedge_t *e = d->edges[i];
    const char *ta = agnameof(agtail(e)), *hb = agnameof(aghead(e));
    starfold_link_t l = { .a = device_of(d, agtail(e)), .b = device_of(d, aghead(e)), .kind = STARFOLD_LINK_NVLINK };
    double lanes;

    if (l.a == l.b)
        return dot_error(STARFOLD_ERR_PARSE, d->origin, edge_line(d, i),
                         "link %s -- %s joins a device to itself (self-loop)", ta, hb);
    if (attr(e, "kind") && starfold_link_kind_from_string(attr(e, "kind"), &l.kind) != STARFOLD_OK)
        return dot_error(STARFOLD_ERR_PARSE, d->origin, edge_line(d, i),
                         "link %s -- %s: unknown kind '%s' (known: nvlink, pcie, inter-socket, host, shm, network; qpi, upi, sys)",
                         ta, hb, attr(e, "kind"));
    if (edge_number(e, "bandwidth", NAN, STARFOLD_LINK_BANDWIDTH_MIN_GBPS, STARFOLD_LINK_BANDWIDTH_MAX_GBPS,
                    &l.bandwidth_GBps) != 0)
        return attr(e, "bandwidth")
                   ? dot_error(STARFOLD_ERR_PARSE, d->origin, edge_line(d, i),
                               "link %s -- %s: bandwidth must be a number in [%g, %g] (GB/s), got '%s'", ta, hb,
                               STARFOLD_LINK_BANDWIDTH_MIN_GBPS, STARFOLD_LINK_BANDWIDTH_MAX_GBPS, attr(e, "bandwidth"))
                   : dot_error(STARFOLD_ERR_PARSE, d->origin, edge_line(d, i),
                               "link %s -- %s: bandwidth (GB/s) is required", ta, hb);
    if (edge_number(e, "latency", 1.0, 0, STARFOLD_LINK_LATENCY_MAX_US, &l.latency_us) != 0)
        return dot_error(STARFOLD_ERR_PARSE, d->origin, edge_line(d, i),
                         "link %s -- %s: latency must be a number in [0, %g] (us), got '%s'", ta, hb,
                         STARFOLD_LINK_LATENCY_MAX_US, attr(e, "latency"));
    if (edge_number(e, "lanes", 1.0, 1, 1024, &lanes) != 0 || lanes != floor(lanes))
        return dot_error(STARFOLD_ERR_PARSE, d->origin, edge_line(d, i),
                         "link %s -- %s: lanes must be an integer >= 1, got '%s'", ta, hb, attr(e, "lanes"));
    l.lanes = (int)lanes;
    return starfold_topology_add_link(t, &l);
}

static int by_sequence(const void *x, const void *y)
{
    const IDTYPE a = AGSEQ(*(Agedge_t *const *)x), b = AGSEQ(*(Agedge_t *const *)y);
    return (a > b) - (a < b);
}

/* Every edge once (each is the out-edge of its tail), sorted into text order. */
static starfold_status_t collect_edges(starfold__dot_t *d)
{
    int n = agnedges(d->g);
    d->num_edges = 0;
    d->edges = malloc((size_t)(n > 0 ? n : 1) * sizeof *d->edges);
    if (!d->edges) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory for %d links", d->origin, n);
    for (Agnode_t *v = agfstnode(d->g); v; v = agnxtnode(d->g, v))
        for (Agedge_t *e = agfstout(d->g, v); e && d->num_edges < n; e = agnxtout(d->g, e))
            d->edges[d->num_edges++] = e;
    qsort(d->edges, (size_t)d->num_edges, sizeof *d->edges, by_sequence);
    return STARFOLD_OK;
}

/* The "name" attribute, else the graph's own name, else the file name without directory and extension. */
static void topology_name(const starfold__dot_t *d, char *buf, size_t size)
{
    const char *name = attr(d->g, "name");
    if (!name && agnameof(d->g) && agnameof(d->g)[0] != '%') name = agnameof(d->g);   /* '%': anonymous */
    if (name) {
        snprintf(buf, size, "%s", name);
        return;
    }
    const char *base = strrchr(d->origin, '/') ? strrchr(d->origin, '/') + 1 : d->origin;
    snprintf(buf, size, "%s", *base ? base : "topology");
    char *dot = strrchr(buf, '.');
    if (dot && dot != buf) *dot = '\0';
}

/* The caller holds the cgraph lock. */
static starfold_status_t graph_to_topology(starfold__dot_t *d, starfold_topology_t *out)
{
    starfold_topology_t t = NULL;
    starfold_status_t st;
    char name[256];

    SF_CHECK_GOTO(check_attributes(d), st, done);
    d->n = agnnodes(d->g);
    if (d->n < 1) {
        st = dot_error(STARFOLD_ERR_TOPOLOGY, d->origin, 0, "the graph has no node (a topology needs a device)");
        goto done;
    }
    if (d->n > STARFOLD_MAX_DEVICES) {
        st = dot_error(STARFOLD_ERR_PARSE, d->origin, 0, "%d nodes, more than the %d devices a topology may have", d->n,
                       STARFOLD_MAX_DEVICES);
        goto done;
    }
    SF_CHECK_GOTO(order_devices(d), st, done);
    topology_name(d, name, sizeof name);
    SF_CHECK_GOTO(starfold_topology_create(name, d->n, &t), st, done);
    for (int i = 0; i < d->n; i++) SF_CHECK_GOTO(read_device(d, t, i), st, done);
    {
        int lines[STARFOLD_MAX_DEVICES];
        device_lines(d->src, d->g, d->node_of, d->n, lines);
        for (int i = 0; i < d->n; i++) t->devices[i].line = lines[i];
    }
    SF_CHECK_GOTO(collect_edges(d), st, done);
    for (int i = 0; i < d->num_edges; i++) SF_CHECK_GOTO(read_link(d, t, i), st, done);

    int lost = starfold__topology_unreachable(t);
    if (lost >= 0) {
        st = dot_error(STARFOLD_ERR_TOPOLOGY, d->origin, node_line(d, d->node_of[lost]),
                       "disconnected: device %d (node '%s') cannot be reached from device 0 (node '%s')", lost,
                       agnameof(d->node_of[lost]), agnameof(d->node_of[0]));
        goto done;
    }
    *out = t;
    t = NULL;

done:
    starfold_topology_destroy(t);
    return st;
}

/*
 * What would make cgraph slow or deep, refused before cgraph sees the text, in one pass: its lexer
 * takes time quadratic in the length of one token (4 MB of a comment: over 20 s), its dictionaries
 * recurse once per parallel edge (600,000 of them overflow an 8 MB stack), and its parser gives up on
 * braces nested some thousands deep with no message of its own. The lexical
 * rules are those of next_token() and skip_space().
 */
static starfold_status_t check_text_limits(const char *src, const char *origin)
{
    size_t edges = 0;
    int line = 1, depth = 0;
    for (const char *p = src; *p;) {
        const char *start = p;
        const int start_line = line;
        const char *what;
        if (*p == '\n') {
            line++, p++;
            continue;
        } else if (isspace((unsigned char)*p)) {
            p++;
            continue;
        } else if (*p == '#' || (p[0] == '/' && p[1] == '/')) {
            while (*p && *p != '\n') p++;
            what = "comment";
        } else if (p[0] == '/' && p[1] == '*') {
            for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++) line += *p == '\n';
            if (*p) p += 2;
            what = "comment";
        } else if (*p == '"') {
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && p[1]) p++;
                line += *p == '\n';
            }
            if (*p) p++;
            what = "quoted string";
        } else if (*p == '<') {
            int angles = 0;
            do {
                angles += (*p == '<') - (*p == '>');
                line += *p == '\n';
                p++;
            } while (*p && angles > 0);
            what = "HTML string";
        } else if (*p == '{' || *p == '}') {
            depth += *p++ == '{' ? 1 : -1;
            if (depth > STARFOLD_TOPOLOGY_NESTING_MAX)
                return dot_error(STARFOLD_ERR_PARSE, origin, line,
                                 "braces nested more than %d deep, the most a topology file may nest",
                                 STARFOLD_TOPOLOGY_NESTING_MAX);
            continue;
        } else if (p[0] == '-' && (p[1] == '-' || p[1] == '>')) {
            p += 2;
            if (++edges > STARFOLD_TOPOLOGY_EDGES_MAX)
                return dot_error(STARFOLD_ERR_PARSE, origin, line, "more than %d edges, the most a topology file may have",
                                 STARFOLD_TOPOLOGY_EDGES_MAX);
            continue;
        } else if (id_char(*p) || *p == '-') {
            do p++; while (id_char(*p));
            what = "name";
        } else {
            p++;
            continue;
        }
        if ((size_t)(p - start) > STARFOLD_TOPOLOGY_TOKEN_MAX)
            return dot_error(STARFOLD_ERR_PARSE, origin, start_line,
                             "a %s of %zu bytes, longer than the %d bytes a topology file allows", what,
                             (size_t)(p - start), STARFOLD_TOPOLOGY_TOKEN_MAX);
    }
    return STARFOLD_OK;
}

static starfold_status_t load_text(const char *src, const char *origin, starfold_topology_t *topology)
{
    starfold__dot_t d = { .src = src, .origin = origin };
    starfold_topology_t t = NULL;

    starfold_status_t limits = check_text_limits(src, origin);
    if (limits != STARFOLD_OK) return limits;
    starfold__cgraph_lock();
    starfold_status_t st = parse_dot(src, origin, &d.g);
    if (st == STARFOLD_OK) {
        st = graph_to_topology(&d, &t);
        agclose(d.g);
    }
    starfold__cgraph_unlock();
    free(d.edges);
    if (st == STARFOLD_OK) *topology = t;
    return st;
}

/* What a file that is not a regular one is, for the message. */
static const char *file_kind(mode_t mode)
{
    return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO" : S_ISCHR(mode) ? "a character device"
         : S_ISBLK(mode) ? "a block device" : S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

/*
 * The whole file, NUL-terminated, and its length; ERR_IO when it cannot be read. Only a regular file
 * of at most STARFOLD_TOPOLOGY_FILE_MAX bytes is read: it is opened without blocking (a FIFO with no
 * writer would block the open), checked with fstat, and read to its size plus one byte, so a file
 * that grows past the limit meanwhile is refused too.
 */
static starfold_status_t read_file(const char *path, char **out, size_t *out_len)
{
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return starfold__error(STARFOLD_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    starfold_status_t st = STARFOLD_OK;
    char *buf = NULL;
    size_t len = 0;
    if (fstat(fd, &sb) != 0) {
        st = starfold__error(STARFOLD_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    } else if (!S_ISREG(sb.st_mode)) {
        st = starfold__error(STARFOLD_ERR_IO, "%s: %s, not a topology file (only regular files are read)", path,
                             file_kind(sb.st_mode));
    } else if (sb.st_size > STARFOLD_TOPOLOGY_FILE_MAX) {
        st = starfold__error(STARFOLD_ERR_IO, "%s: %lld bytes, more than the %d bytes a topology file may have", path,
                             (long long)sb.st_size, STARFOLD_TOPOLOGY_FILE_MAX);
    } else if (!(buf = malloc((size_t)sb.st_size + 2))) {
        st = starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "%s: out of memory reading the file", path);
    } else {
        const size_t want = (size_t)sb.st_size + 1; /* one more byte: a file that grew is seen */
        for (;;) {
            const ssize_t got = read(fd, buf + len, want - len);
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) {
                st = starfold__error(STARFOLD_ERR_IO, "%s: read failed: %s", path, strerror(errno));
                break;
            }
            len += (size_t)got;
            if (got == 0 || len == want) break;
        }
        if (st == STARFOLD_OK && len > (size_t)sb.st_size)
            st = starfold__error(STARFOLD_ERR_IO, "%s: the file grew while it was read", path);
    }
    close(fd);
    if (st != STARFOLD_OK) {
        free(buf);
        return st;
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return STARFOLD_OK;
}

/* A NUL byte inside the text: the format is text, and what follows a NUL would be ignored unseen. */
static starfold_status_t check_no_nul(const char *text, size_t len, const char *origin)
{
    const char *nul = memchr(text, '\0', len);
    if (!nul) return STARFOLD_OK;
    int line = 1;
    for (const char *p = text; p < nul; p++) line += *p == '\n';
    return dot_error(STARFOLD_ERR_PARSE, origin, line, "a NUL byte at offset %zu: a topology file is text",
                     (size_t)(nul - text));
}

STARFOLD_API starfold_status_t starfold_topology_load(const char *path, starfold_topology_t *topology)
{
    if (!path || !topology)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_load: NULL %s", !path ? "path" : "topology");
    char *text = NULL;
    size_t len = 0;
    starfold_status_t st = read_file(path, &text, &len);
    starfold_topology_t t = NULL;
    if (st == STARFOLD_OK) st = check_no_nul(text, len, path);
    if (st == STARFOLD_OK) st = load_text(text, path, &t);
    free(text);
    if (st == STARFOLD_OK && !(t->origin = starfold__strdup(path))) {
        starfold_topology_destroy(t);
        return STARFOLD_ERR_OUT_OF_MEMORY;
    }
    if (st == STARFOLD_OK) *topology = t;
    return st;
}

STARFOLD_API starfold_status_t starfold_topology_load_string(const char *dot, const char *origin,
                                                             starfold_topology_t *topology)
{
    if (!dot || !topology)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_topology_load_string: NULL %s",
                        !dot ? "dot" : "topology");
    return load_text(dot, origin ? origin : "<string>", topology);
}
