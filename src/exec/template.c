/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Task templates: everything of a graph node's StarPU task that no start changes, computed once per
 * persistent submission from the plan - its distinct pieces (the task's buffers), their access modes,
 * its kernel arguments, its worker - and the StarPU task made from a template for one request.
 *
 * Kernel spans. A graph span may cross pieces; the kernel sees spans within one buffer (kernels.h).
 * A copy (COPY, PACK, UNPACK) lists every piece of every span. An element-wise node (REDUCE, SCALE)
 * cuts each graph segment wherever any of its spans crosses from one piece to the next, so that in
 * a kernel segment each span lies in one piece; consecutive kernel segments continuing each other in
 * every span are merged again (a batch of views of one vector reduces like one tensor):
 *
 *      src0   |---- piece a ----|-------- piece b --------|
 *      dst    |------- piece c --------|---- piece d -----|
 *      kernel [     seg 0      )[ seg 1 )[     seg 2      )
 *
 * Access modes, per distinct piece of a task: read and written -> RW; only read -> R; only written ->
 * W when the task writes the whole piece, or when it is the piece's first writer, no input range in
 * it is read and it is no caller's vector holding views (then nothing in the rest of the piece is read
 * before the graph writes it; StarPU also refuses to read a never-written temporary, so the first
 * write of a temporary must be W); RW otherwise.
 *
 * Empty work. Spans of zero elements are dropped: a zero-element buffer is never attached to a task
 * (its handle may be NULL), and a node with nothing to move is no task at all (the plan skips it).
 *
 * Ownership: a template owns its units[], modes[], args and deps; a task made from it holds a copy of
 * the arguments owned by the request, the template's pieces' handles (borrowed from the persistent
 * submission or the request) and the request as its callback's argument.
 */
#include "config.h"

#include <time.h>

#include "base/common.h"
#include "exec/submit.h"

_Static_assert(SF_KERNEL_TASK_FAILED == (int)STARFOLD_ERR_TASK_FAILED, "kernels.h status mirror");
_Static_assert((int)SF_K_FLOAT32 == (int)STARFOLD_FLOAT32 && (int)SF_K_FLOAT64 == (int)STARFOLD_FLOAT64 &&
                   (int)SF_K_INT32 == (int)STARFOLD_INT32 && (int)SF_K_INT64 == (int)STARFOLD_INT64 &&
                   (int)SF_K_FLOAT16 == (int)STARFOLD_FLOAT16 && (int)SF_K_BFLOAT16 == (int)STARFOLD_BFLOAT16 &&
                   (int)SF_K_INT8 == (int)STARFOLD_INT8 && (int)SF_K_UINT8 == (int)STARFOLD_UINT8 &&
                   (int)SF_K_INT16 == (int)STARFOLD_INT16 && (int)SF_K_UINT16 == (int)STARFOLD_UINT16 &&
                   (int)SF_K_UINT32 == (int)STARFOLD_UINT32 && (int)SF_K_UINT64 == (int)STARFOLD_UINT64 &&
                   SF_K_DTYPE_COUNT == STARFOLD_DTYPE_COUNT,
               "kernels.h dtype mirror");
_Static_assert((int)SF_K_SUM == (int)STARFOLD_OP_SUM && (int)SF_K_MEAN == (int)STARFOLD_OP_MEAN &&
                   (int)SF_K_MIN == (int)STARFOLD_OP_MIN && (int)SF_K_MAX == (int)STARFOLD_OP_MAX &&
                   (int)SF_K_PROD == (int)STARFOLD_OP_PROD && (int)SF_K_SUB == (int)STARFOLD__OP_SUB,
               "kernels.h op mirror");

static struct starpu_codelet starfold__codelet = {
    .where = STARPU_CPU
#ifdef STARFOLD_HAVE_OPENCL
             | STARPU_OPENCL
#endif
#ifdef STARFOLD_HAVE_CUDA
             | STARPU_CUDA
#endif
    ,
    .cpu_funcs = { starfold__kernel_cpu },
#ifdef STARFOLD_HAVE_OPENCL
    .opencl_funcs = { starfold__kernel_opencl },
#endif
#ifdef STARFOLD_HAVE_CUDA
    .cuda_funcs = { starfold__kernel_cuda },
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .name = "starfold",
};

static starfold_status_t task_oom(size_t i)
{
    return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory creating task %zu", i);
}

/* One distinct handle of a task: its piece, and whether the node reads and writes it. */
typedef struct task_buf {
    size_t unit;
    int read, written;
    size_t covered;   /* elements of the piece the node writes (its dst ranges never overlap) */
} task_buf_t;

/*
 * Index of @unit in node @i's buffer list, appended when new. unit_mark[u] == i + 1 says unit u is in
 * the list being built, at unit_pos[u] (a PACK of a thousand tensors stays linear).
 */
static unsigned task_buf_index(starfold__plan_t *p, size_t i, task_buf_t *tb, size_t *nbuf, size_t unit)
{
    if (p->unit_mark[unit] == i + 1) return (unsigned)p->unit_pos[unit];
    p->unit_mark[unit] = i + 1;
    p->unit_pos[unit] = *nbuf;
    tb[(*nbuf)++] = (task_buf_t){ .unit = unit };
    return (unsigned)(*nbuf - 1);
}

/* Number of pieces span @s touches. */
static size_t span_pieces(const starfold__plan_t *p, const starfold__span_t *s)
{
    size_t c = 0, u;
    for (starfold__piece_iter_t it = starfold__pieces_of(p, s); starfold__piece_next(&it, &u);) c++;
    return c;
}

/*
 * Kernel segments of graph segment @q of an element-wise node (REDUCE, SCALE; a segmented REDUCE has
 * several graph segments, every other node one): its spans (sources ps * q.., destinations pd * q..)
 * have one count c; the kernel segments cut [0, c) wherever any of them crosses from one piece to the
 * next, so within a kernel segment each span lies in one piece. Writes the ascending boundaries (0
 * and c included) into @cut, returns their number.
 */
static size_t node_segments(const starfold__plan_t *p, const starfold__node_t *n, size_t q, size_t *cut)
{
    const size_t ps = n->nsrc / n->nseg, pd = n->ndst / n->nseg;
    const size_t c = n->dst[q * pd].count;
    size_t m = 0;
    cut[m++] = 0;
    for (size_t k = 0; k < ps + pd; k++) {
        const starfold__span_t *s = k < ps ? &n->src[q * ps + k] : &n->dst[q * pd + k - ps];
        const size_t lo = starfold__span_lo(p, s);
        size_t u;
        for (starfold__piece_iter_t it = starfold__pieces_of(p, s); starfold__piece_next(&it, &u);)
            if (p->units[u].lo > lo) cut[m++] = p->units[u].lo - lo;
    }
    cut[m++] = c;
    if (m == 2) return 2; /* every span within one piece: the usual case, nothing to sort */
    for (size_t k = 1; k < m; k++) { /* insertion sort: a handful of boundaries */
        const size_t x = cut[k];
        size_t j = k;
        for (; j > 0 && cut[j - 1] > x; j--) cut[j] = cut[j - 1];
        cut[j] = x;
    }
    size_t d = 0;
    for (size_t k = 0; k < m; k++)
        if (d == 0 || cut[d - 1] != cut[k]) cut[d++] = cut[k];
    return d;
}

/* ------------------------------------------------------------------------------------------------
 * Kernel spans
 */

/*
 * The shape of a node's kernel spans: per piece for a copy; per kernel segment and span for an
 * element-wise node, whose graph segments (empty ones dropped) are cut into kernel segments at
 * pieces: cut[cut_at[q] .. cut_at[q + 1]) holds graph segment q's boundaries.
 */
typedef struct kshape {
    int elementwise;
    size_t gseg, ps, pd;   /* graph segments; sources and destinations per graph segment */
    size_t npieces;        /* pieces the node's spans touch, counted per span */
    size_t nseg;           /* kernel segments before merging (1 for a copy) */
    size_t *cut, *cut_at;  /* element-wise only */
} kshape_t;

static starfold_status_t kernel_shape(const starfold__plan_t *p, size_t i, kshape_t *sh)
{
    const starfold__node_t *n = &p->g->nodes[i];
    memset(sh, 0, sizeof *sh);
    sh->elementwise = n->kind == STARFOLD_TASK_REDUCE || n->kind == STARFOLD_TASK_SCALE;
    sh->gseg = sh->elementwise ? n->nseg : 1;
    sh->ps = n->nsrc / sh->gseg;
    sh->pd = n->ndst / sh->gseg;
    sh->nseg = 1;
    for (size_t k = 0; k < n->nsrc; k++)
        if (n->src[k].count) sh->npieces += span_pieces(p, &n->src[k]);
    for (size_t k = 0; k < n->ndst; k++)
        if (n->dst[k].count) sh->npieces += span_pieces(p, &n->dst[k]);
    if (!sh->elementwise) return STARFOLD_OK;
    sh->cut = malloc(sizeof(size_t) * (sh->npieces + 2 * sh->gseg + 1));
    sh->cut_at = malloc(sizeof(size_t) * (sh->gseg + 1));
    if (!sh->cut || !sh->cut_at) {
        free(sh->cut);
        free(sh->cut_at);
        return task_oom(i);
    }
    sh->nseg = 0;
    size_t at = 0;
    for (size_t q = 0; q < sh->gseg; q++) {
        sh->cut_at[q] = at;
        if (n->dst[q * sh->pd].count == 0) continue; /* an empty tensor of a batch: no kernel segment */
        const size_t m = node_segments(p, n, q, sh->cut + at);
        sh->nseg += m - 1;
        at += m;
    }
    sh->cut_at[sh->gseg] = at;
    return STARFOLD_OK;
}

/* The kernel arguments of node @i but its spans and the request's flags. */
static void args_init(starfold__kernel_args_t *a, const struct starfold_graph *g, starfold_context_t ctx, size_t i,
                      size_t nseg)
{
    const starfold__node_t *n = &g->nodes[i];
    memset(a, 0, sizeof *a);
    a->spans = (starfold__kspan_t *)(void *)(a + 1);
    a->kind = n->kind == STARFOLD_TASK_REDUCE ? SF_KERNEL_REDUCE
              : n->kind == STARFOLD_TASK_SCALE ? SF_KERNEL_SCALE
                                               : SF_KERNEL_COPY;
    a->dtype = (int)n->dtype;
    a->dst_dtype = (int)g->bufs[n->dst[0].buf].dtype; /* differs only for a converting SCALE */
    a->op = (int)n->op;
    a->divisor = n->divisor ? n->divisor : 1;
    a->elemsize = starfold_dtype_size(n->dtype);
    a->dst_elemsize = starfold_dtype_size((starfold_dtype_t)a->dst_dtype);
    a->node = i;
    a->fail_hook = &ctx->test_fail_task;
    a->nseg = nseg;
    a->timed = 1;
    a->task_kind = (int)n->kind;
    a->device = n->device;
}

void starfold__kernel_time(starfold__kernel_args_t *a, int end)
{
    /* Only in a StarPU worker running a request's task: a kernel called by hand (the kernel tests)
     * has no task, and StarPU's thread-local lookups are not valid outside its threads. */
    if (!a->timed) return;
    const double now = starfold__now_s();
    starfold__kernel_timing_t *tm = &a->timing;
    if (end) {
        tm->end = now;
        tm->ran = 1;
        return;
    }
    tm->start = now;
    tm->worker = starpu_worker_get_id();
    /* With StarPU's profiling on, how long it took to bring the task's data (the transfers). */
    const struct starpu_task *task = starpu_task_get_current();
    const struct starpu_profiling_task_info *pi = task ? task->profiling_info : NULL;
    if (pi) {
        const double a0 = (double)pi->acquire_data_start_time.tv_sec + 1e-9 * (double)pi->acquire_data_start_time.tv_nsec;
        const double a1 = (double)pi->acquire_data_end_time.tv_sec + 1e-9 * (double)pi->acquire_data_end_time.tv_nsec;
        tm->fetch = a1 > a0 && a0 > 0 ? a1 - a0 : 0;
    }
}

/*
 * An element-wise node's kernel spans, kernel segment after kernel segment; one that continues the
 * previous one in every span (the same piece, the next element: tensors that are consecutive views
 * of one vector per replica) is merged into it, so a batch of views reduces like one tensor, and the
 * kernel streams it. Returns the spans written.
 */
static size_t elementwise_spans(starfold__plan_t *p, size_t i, const kshape_t *sh, starfold__kernel_args_t *a,
                                task_buf_t *tb, size_t *nbuf)
{
    const starfold__node_t *n = &p->g->nodes[i];
    const size_t ps = sh->ps, pd = sh->pd, w = ps + pd;
    size_t kseg = 0, ks = 0;
    a->nsrc = ps;
    a->ndst = pd;
    for (size_t q = 0; q < sh->gseg; q++)
        for (size_t sg = sh->cut_at[q]; sg + 1 < sh->cut_at[q + 1]; sg++) {
            const size_t len = sh->cut[sg + 1] - sh->cut[sg];
            starfold__kspan_t *seg = a->spans + ks, *prev = kseg ? seg - w : NULL;
            int follows = prev != NULL;
            for (size_t k = 0; k < w; k++) {
                const int is_src = k < ps;
                const starfold__span_t *s = is_src ? &n->src[q * ps + k] : &n->dst[q * pd + k - ps];
                const starfold__resource_t *r = &p->res[p->buf_res[s->buf]];
                const size_t at = starfold__span_lo(p, s) + sh->cut[sg];
                const size_t u = r->unit0 + starfold__piece_of(r, at);
                const unsigned j = task_buf_index(p, i, tb, nbuf, u);
                if (is_src) tb[j].read = 1;
                else tb[j].written = 1, tb[j].covered += len;
                seg[k] = (starfold__kspan_t){ j, at - p->units[u].lo, len };
                follows = follows && prev[k].buf == j && prev[k].offset + prev[k].count == seg[k].offset;
            }
            if (follows) {
                for (size_t k = 0; k < w; k++) prev[k].count += len;
            } else {
                ks += w;
                kseg++;
            }
        }
    a->nseg = kseg;
    return ks;
}

/* A copy's kernel spans: every piece of its sources, then of its destinations. Returns their number. */
static size_t copy_spans(starfold__plan_t *p, size_t i, starfold__kernel_args_t *a, task_buf_t *tb, size_t *nbuf)
{
    const starfold__node_t *n = &p->g->nodes[i];
    size_t ks = 0;
    for (size_t k = 0; k < n->nsrc + n->ndst; k++) {
        const int is_src = k < n->nsrc;
        const starfold__span_t *s = is_src ? &n->src[k] : &n->dst[k - n->nsrc];
        if (s->count == 0) continue;
        const size_t start = starfold__span_lo(p, s), end = start + s->count;
        size_t u;
        for (starfold__piece_iter_t it = starfold__pieces_of(p, s); starfold__piece_next(&it, &u);) {
            const size_t lo = p->units[u].lo > start ? p->units[u].lo : start;
            const size_t hi = p->units[u].hi < end ? p->units[u].hi : end;
            const unsigned j = task_buf_index(p, i, tb, nbuf, u);
            if (is_src) tb[j].read = 1, a->nsrc++;
            else tb[j].written = 1, tb[j].covered += hi - lo, a->ndst++;
            a->spans[ks++] = (starfold__kspan_t){ j, lo - p->units[u].lo, hi - lo };
        }
    }
    return ks;
}

/* ------------------------------------------------------------------------------------------------
 * Access modes
 */

/* Each of task @i's @nbuf pieces and its access mode (see the file's head) into @tt. */
static starfold_status_t access_modes(const starfold__plan_t *p, size_t i, const task_buf_t *tb, size_t nbuf,
                                      starfold__task_tmpl_t *tt)
{
    tt->nbuf = nbuf;
    tt->units = malloc(sizeof *tt->units * (nbuf + 1));
    tt->modes = malloc(sizeof *tt->modes * (nbuf + 1));
    if (!tt->units || !tt->modes) return task_oom(i);
    for (size_t j = 0; j < nbuf; j++) {
        const starfold__unit_t *u = &p->units[tb[j].unit];
        enum starpu_data_access_mode mode = STARPU_R;
        if (tb[j].written) {
            /* the node's destination ranges never overlap, so the written count tells */
            const int whole = tb[j].covered >= u->hi - u->lo;
            /* (in a vector holding views, the rest of the piece may be the caller's other data) */
            const int first = u->first_writer == i && !u->input_read && !p->res[u->res].views;
            mode = tb[j].read ? STARPU_RW : (whole || first) ? STARPU_W : STARPU_RW;
        }
        tt->units[j] = tb[j].unit;
        tt->modes[j] = mode;
    }
    return STARFOLD_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Templates and tasks
 */

starfold_status_t starfold__make_template(starfold__plan_t *p, starfold_context_t ctx, size_t i,
                                          starfold__task_tmpl_t *tt)
{
    const starfold__node_t *n = &p->g->nodes[i];
    kshape_t sh;
    starfold_status_t st = kernel_shape(p, i, &sh);
    if (st != STARFOLD_OK) return st;
    const size_t nkspans = sh.elementwise ? sh.nseg * (sh.ps + sh.pd) : sh.npieces;
    starfold__kernel_args_t *a = malloc(sizeof *a + sizeof(starfold__kspan_t) * (nkspans + 1));
    task_buf_t *tb = malloc(sizeof *tb * (sh.npieces + 1)); /* distinct pieces in order of first appearance */
    if (!a || !tb) {
        free(a);
        free(tb);
        free(sh.cut);
        free(sh.cut_at);
        return task_oom(i);
    }
    args_init(a, p->g, ctx, i, sh.nseg);
    size_t nbuf = 0;
    const size_t ks = sh.elementwise ? elementwise_spans(p, i, &sh, a, tb, &nbuf) : copy_spans(p, i, a, tb, &nbuf);
    free(sh.cut);
    free(sh.cut_at);

    tt->node = i;
    tt->kind = n->kind;
    tt->device = n->device;
    tt->worker = (unsigned)ctx->workers[n->device];
    tt->args_size = sizeof *a + sizeof(starfold__kspan_t) * ks; /* merged segments may leave spans unused */
    tt->args = realloc(a, tt->args_size);
    if (!tt->args) tt->args = a;
    tt->args->spans = (starfold__kspan_t *)(void *)(tt->args + 1);
    st = access_modes(p, i, tb, nbuf, tt);
    free(tb);
    return st;
}

void starfold__tmpl_free(starfold__task_tmpl_t *tt)
{
    free(tt->units);
    free(tt->modes);
    free(tt->args);
    free(tt->deps);
}

starfold_status_t starfold__make_task(const starfold__task_tmpl_t *tt, const starpu_data_handle_t *uh,
                                      struct starfold_request *req, struct starpu_task **task_out)
{
    const size_t nbuf = tt->nbuf;
    starfold__kernel_args_t *a = malloc(tt->args_size);
    if (!a) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory creating task %zu", tt->node);
    memcpy(a, tt->args, tt->args_size);
    a->spans = (starfold__kspan_t *)(void *)(a + 1);
    a->cancelled = &req->cancelled;
    a->status = &req->status;
    req->args[req->nargs++] = a;

    struct starpu_task *t = starpu_task_create();
    if (!t) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory creating task %zu", tt->node);
    t->destroy = 0; /* until submitted: a task that never gets submitted is destroyed by us */
    if (nbuf > STARPU_NMAXBUFS) {
        t->dyn_handles = malloc(sizeof(starpu_data_handle_t) * nbuf);
        t->dyn_modes = malloc(sizeof(enum starpu_data_access_mode) * nbuf);
        if (!t->dyn_handles || !t->dyn_modes) {
            starpu_task_destroy(t); /* frees dyn_handles and dyn_modes */
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_submit: out of memory creating task %zu", tt->node);
        }
        for (size_t j = 0; j < nbuf; j++) t->dyn_handles[j] = uh[tt->units[j]];
        memcpy(t->dyn_modes, tt->modes, sizeof *tt->modes * nbuf);
    } else {
        for (size_t j = 0; j < nbuf; j++) {
            t->handles[j] = uh[tt->units[j]];
            t->modes[j] = tt->modes[j];
        }
    }
    t->nbuffers = (int)nbuf;
    t->cl = &starfold__codelet;
    t->cl_arg = a;
    t->cl_arg_size = tt->args_size;
    t->cl_arg_free = 0;
    t->callback_func = starfold__request_task_done;
    t->callback_arg = req;
    t->execute_on_a_specific_worker = 1;
    t->workerid = tt->worker;
    t->name = starfold_task_kind_name(tt->kind);
    *task_out = t;
    return STARFOLD_OK;
}
