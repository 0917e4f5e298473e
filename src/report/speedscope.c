/* speedscope.c — export a profile as speedscope JSON (the "sampled"
 * profile type of speedscope's file format): a shared frame table and, for
 * each view given (one per sample type of the profile), one profile with
 * one sample per distinct stack, weighted by the view's value. Distinct
 * stacks come from a walk of the call tree, so the file stays small however many
 * samples the profile holds. Every frame carries a file and line when the
 * profile knows one: the node's own, or at function granularity the
 * function's file and start line (else the smallest line sampled in it). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "report/export.h"
#include "report/stacks.h"

/* a string literal through the writer */
#define HS_WLIT(w, lit) hs_wmem((w), (lit), sizeof(lit) - 1)
#define HEAD "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"hotspur\",\"name\":"

/* speedscope knows a few units; anything else is "none". */
static const char *hs_speedscope_unit(const char *u)
{
    static const char *const known[] = {"nanoseconds", "microseconds", "milliseconds", "seconds",
                                        "bytes"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(u, known[i]) == 0)
            return known[i];
    return "none";
}

typedef struct {
    const char *file; /* "" or NULL: none */
    int64_t line;     /* 0: none */
    size_t first;     /* the line (in location order) that gave file */
} fn_pos;

/* Fold position q (of one function, or of one name) into *fp: the file
 * that came first, the smallest line. */
static void fn_pos_fold(fn_pos *fp, const fn_pos *q)
{
    if (q->file && *q->file && (!fp->file || !*fp->file || q->first < fp->first)) {
        fp->file = q->file;
        fp->first = q->first;
    }
    if (q->line > 0 && (fp->line == 0 || q->line < fp->line))
        fp->line = q->line;
}

/* file and line of each function name of p (strtab id -> position): its
 * functions' file first met in location order, the smallest of their
 * start lines (or lines sampled when a function has none). Gathered per
 * function, then per name, so each function's name is hashed once. */
static int function_positions(const hs_profile *p, hs_strtab *names, fn_pos **out, size_t *n)
{
    size_t cap = 0, seq = 0;
    *out = NULL;
    *n = 0;
    fn_pos *per_fn = calloc(p->n_functions ? p->n_functions : 1, sizeof *per_fn);
    if (!per_fn)
        return -1;
    for (size_t l = 0; l < p->n_locations; l++) {
        const hs_location *loc = &p->locations[l];
        for (size_t k = 0; k < loc->n_lines; k++) {
            const hs_function *f = hs_profile_function(p, loc->lines[k].function_id);
            if (!f)
                continue;
            fn_pos q = {hs_profile_string(p, f->filename),
                        f->start_line > 0 ? f->start_line : loc->lines[k].line, ++seq};
            fn_pos_fold(&per_fn[f - p->functions], &q);
        }
    }
    for (size_t i = 0; i < p->n_functions; i++) {
        if (!per_fn[i].first && !per_fn[i].line) {
            /* not met at all, or met with no file and no line: only its
             * name's presence matters, and that adds nothing to fold */
            continue;
        }
        const char *name = hs_profile_string(p, p->functions[i].name);
        uint32_t id = hs_strtab_intern_len(names, name, strlen(name));
        if (id == UINT32_MAX)
            goto oom;
        if (HS_VEC_RESERVE_ZEROED(*out, cap, (size_t)id + 1))
            goto oom;
        if (id >= *n)
            *n = id + 1;
        fn_pos_fold(&(*out)[id], &per_fn[i]);
    }
    free(per_fn);
    return 0;
oom:
    free(per_fn);
    return -1;
}

/* a frame's number in decimal is at most 10 digits: copied as 16 bytes */
#define HS_SS_NUM 16

/* One profile's walk: a sample per tree node with a self value, the text
 * of its path of frames from the root ("3,17,5"), kept per depth so a
 * node adds only its own frame to its parent's; the weights are kept for
 * after. */
typedef struct {
    const hs_view *v;
    const uint32_t *frame_of; /* node id -> frame + 1 */
    hs_wpath p;            /* the path's text: "3,17,5" */
    const char *ftxt;      /* frame k in decimal: ftxt[foff[k]..foff[k + 1]) */
    const uint32_t *foff;
    int64_t *weights;
    size_t n_weights, weights_cap;
} hs_ss_walk;

static int hs_ss_node(void *ctx, const hs_walk_node *nd, const hs_walk_node *kids, size_t n_kids)
{
    hs_ss_walk *c = ctx;
    (void)kids;
    (void)n_kids;
    uint32_t d = nd->depth;
    c->p.depth = d;
    if (d == 0) { /* the root, first: the profile's header */
        const hs_view *v = c->v;
        HS_WLIT(c->p.w, "{\"type\":\"sampled\",\"name\":");
        hs_wjson_string(c->p.w, v->sample_type ? v->sample_type : "");
        const char *unit = hs_speedscope_unit(v->unit ? v->unit : "");
        HS_WLIT(c->p.w, ",\"unit\":\"");
        hs_wmem(c->p.w, unit, strlen(unit));
        HS_WLIT(c->p.w, "\",\"startValue\":0,\"endValue\":");
        hs_wint(c->p.w, nd->total);
        HS_WLIT(c->p.w, ",\"samples\":[");
        return 0;
    }
    if (HS_VEC_RESERVE(c->p.off, c->p.off_cap, (size_t)d + 1) < 0)
        return 1; /* out of memory */
    size_t base = d == 1 ? 0 : c->p.off[d - 1];
    uint32_t f = c->frame_of[nd->node] - 1, fl = c->foff[f + 1] - c->foff[f];
    if (HS_VEC_RESERVE(c->p.path, c->p.path_cap, base + 1 + HS_SS_NUM) < 0)
        return 1;
    if (d > 1)
        c->p.path[base++] = ',';
    /* a fixed size, past the number (ftxt has room after its last) */
    memcpy(c->p.path + base, c->ftxt + c->foff[f], HS_SS_NUM);
    c->p.off[d] = base + fl;
    if (nd->self == 0)
        return 0;
    if (HS_VEC_RESERVE(c->weights, c->weights_cap, c->n_weights + 1) < 0)
        return 1;
    if (c->n_weights)
        hs_wchar(c->p.w, ',');
    HS_WLIT(c->p.w, "\n[");
    c->weights[c->n_weights++] = nd->self;
    hs_wmem(c->p.w, c->p.path, c->p.off[d]);
    hs_wchar(c->p.w, ']');
    return 0;
}

/* A piece of a split walk: the path so far, its samples into memory and
 * their weights of its own. */
static void hs_ss_drop(void *piece)
{
    hs_ss_walk *p = piece;
    hs_wpath_free(&p->p);
    free(p->weights);
    free(p);
}

static void *hs_ss_fork(void *ctx)
{
    const hs_ss_walk *c = ctx;
    hs_ss_walk *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    if (hs_wpath_fork(&p->p, &c->p) < 0) {
        free(p);
        return NULL;
    }
    p->v = c->v;
    p->frame_of = c->frame_of;
    p->ftxt = c->ftxt;
    p->foff = c->foff;
    return p;
}

static int hs_ss_join(void *ctx, void *piece)
{
    hs_ss_walk *c = ctx;
    const hs_ss_walk *p = piece;
    if (p->p.w->failed || HS_VEC_RESERVE(c->weights, c->weights_cap, c->n_weights + p->n_weights) < 0)
        return 1; /* out of memory */
    if (c->n_weights && p->n_weights) /* between its samples and those before */
        hs_wchar(c->p.w, ',');
    if (hs_wpath_join(&c->p, &p->p) != 0)
        return 1;
    if (p->n_weights)
        memcpy(c->weights + c->n_weights, p->weights, p->n_weights * sizeof *p->weights);
    c->n_weights += p->n_weights;
    return 0;
}

/* key[0..n) + s[0..len), cut at HS_SS_KEY bytes; the new length */
#define HS_SS_KEY 4095
static size_t key_put(char *key, size_t n, const char *s, size_t len)
{
    if (len > HS_SS_KEY - n)
        len = HS_SS_KEY - n;
    memcpy(key + n, s, len);
    return n + len;
}

/* The shared frame table, written to w as it grows: a frame per distinct
 * (name, file, line) of the nodes the views' call trees use, in the order
 * they first appear in them, the active view's first; frame_of[node] =
 * frame + 1 per view. */
typedef struct {
    hs_strtab *keys, *fnames;
    fn_pos *pos; /* function name (fnames id) -> its file and line */
    size_t n_pos;
    uint32_t n_frames;
} hs_ss_frames;

/* (fr zeroed; closed also when this fails) */
static int hs_ss_frames_open(hs_ss_frames *fr, const hs_profile *p)
{
    if (!(fr->keys = hs_strtab_new()) || !(fr->fnames = hs_strtab_new()))
        return -1;
    return p ? function_positions(p, fr->fnames, &fr->pos, &fr->n_pos) : 0;
}

static void hs_ss_frames_close(hs_ss_frames *fr)
{
    free(fr->pos);
    hs_strtab_delete(fr->keys);
    hs_strtab_delete(fr->fnames);
}

/* The frames of v's nodes in order[0..n) (hs_calltree_first_use) that
 * frame_of does not hold yet (a view with the same nodes was added
 * before). 0, or -1 (out of memory). */
static int hs_ss_frames_add(hs_ss_frames *fr, const hs_view *v, const uint32_t *order, size_t n,
                            uint32_t *frame_of, hs_wbuf *w)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t id = order[i];
        if (frame_of[id])
            continue; /* seen in an earlier view with the same nodes */
        const hs_node *nd = &v->nodes[id];
        const char *file = nd->file ? nd->file : "";
        int64_t line = nd->line;
        if ((!*file || line <= 0) && nd->function && *nd->function) {
            uint32_t fid = hs_strtab_intern_len(fr->fnames, nd->function, strlen(nd->function));
            if (fid == UINT32_MAX)
                return -1;
            if (fid < fr->n_pos) {
                if (!*file && fr->pos[fid].file)
                    file = fr->pos[fid].file;
                if (line <= 0)
                    line = fr->pos[fid].line;
            }
        }
        char key[HS_SS_KEY + 1], num[24];
        size_t kl = key_put(key, 0, nd->name, strlen(nd->name));
        kl = key_put(key, kl, "\x1f", 1);
        kl = key_put(key, kl, file, strlen(file));
        kl = key_put(key, kl, "\x1f", 1);
        kl = key_put(key, kl, num, hs_int_dec(num, line));
        size_t before = hs_strtab_count(fr->keys);
        uint32_t k = hs_strtab_intern_len(fr->keys, key, kl);
        if (k == UINT32_MAX)
            return -1;
        frame_of[id] = k + 1;
        if (hs_strtab_count(fr->keys) == before)
            continue; /* a frame of an earlier profile */
        if (fr->n_frames++)
            hs_wchar(w, ',');
        HS_WLIT(w, "\n{\"name\":");
        hs_wjson_string(w, nd->name);
        if (*file) {
            HS_WLIT(w, ",\"file\":");
            hs_wjson_string(w, file);
        }
        if (line > 0) {
            HS_WLIT(w, ",\"line\":");
            hs_wint(w, line);
        }
        hs_wchar(w, '}');
    }
    return 0;
}

/* The views of an export: given (vs[i] set), or those at the other sample
 * indexes of the active one, made on a thread (hs_ss_make_main) while the
 * active view's frames are found. */
typedef struct {
    const hs_view **vs;
    hs_view **own; /* made here: freed by the export */
    size_t nv, active; /* vs[active] is given */
    hs_profile *const *ps;
    size_t n;
    const hs_analysis_options *o;
    int rc;
    char err[256];
} hs_ss_views;

static void *hs_ss_make_main(void *arg)
{
    hs_ss_views *m = arg;
    for (size_t i = 0; i < m->nv && m->rc == 0; i++)
        if (!m->vs[i] &&
            !(m->vs[i] = m->own[i] = hs_view_at_index(m->vs[m->active], m->ps, m->n, m->o, (int)i,
                                                      m->err, sizeof m->err)))
            m->rc = -1;
    return NULL;
}

static int hs_ss_export(hs_ss_views *m, const char *name, FILE *out, char *err, size_t errlen)
{
    int rc = -1;
    size_t nv = m->nv, active = m->active;
    const hs_view *const *vs = m->vs;
    /* per view: node -> frame + 1 (views with the same nodes share one) */
    uint32_t **frame_of = calloc(nv ? nv : 1, sizeof *frame_of);
    hs_ss_walk c = {0};
    hs_ss_frames fr = {0};
    char *ftxt = NULL;
    uint32_t *foff = NULL, *order = NULL;
    size_t n_order = 0;
    pthread_t tid;
    bool making = false, fr_open = true;
    if (hs_wpath_open(&c.p, out) != 0 || !frame_of)
        goto oom;
    HS_WLIT(c.p.w, HEAD);
    if (!name && nv) /* the first sample type's */
        name = vs[0] ? vs[0]->sample_type
                     : hs_profile_string(vs[active]->profile, vs[active]->profile->sample_types[0].type);
    hs_wjson_string(c.p.w, name && *name ? name : "");
    HS_WLIT(c.p.w, ",\"activeProfileIndex\":");
    hs_wint(c.p.w, (int64_t)active);
    HS_WLIT(c.p.w, ",\"shared\":{\"frames\":[");
    /* the active view's node order first: it settles what the other
     * views' making reads of it (hs_view_at_index) */
    if (nv && hs_calltree_first_use(vs[active], &order, &n_order, err, errlen) != 0)
        goto done;
    if (m->own && nv > 1) { /* views to make */
        making = pthread_create(&tid, NULL, hs_ss_make_main, m) == 0;
        if (!making) /* no thread: made here, first */
            hs_ss_make_main(m);
    }
    /* (the functions' positions too, meanwhile) */
    if (hs_ss_frames_open(&fr, nv ? vs[active]->profile : NULL) != 0)
        goto oom;
    /* the active view, then the others in order (made by now) */
    for (size_t k = 0; k < nv; k++) {
        size_t vi = k == 0 ? active : k - 1 + (k - 1 >= active);
        if (k == 1) {
            if (making)
                pthread_join(tid, NULL);
            making = false;
            if (m->rc != 0) {
                snprintf(err, errlen, "%s", m->err);
                goto done;
            }
        }
        if (k > 0) {
            free(order);
            order = NULL;
            if (hs_calltree_first_use(vs[vi], &order, &n_order, err, errlen) != 0)
                goto done;
        }
        for (size_t j = 0; j < nv && !frame_of[vi]; j++)
            if (frame_of[j] && vs[j]->nodes == vs[vi]->nodes)
                frame_of[vi] = frame_of[j];
        if (!frame_of[vi] && !(frame_of[vi] = calloc(vs[vi]->n_nodes + 1, sizeof **frame_of)))
            goto oom;
        if (hs_ss_frames_add(&fr, vs[vi], order, n_order, frame_of[vi], c.p.w) != 0)
            goto oom;
    }
    free(order);
    order = NULL;
    uint32_t n_frames = fr.n_frames;
    hs_ss_frames_close(&fr);
    fr_open = false;
    /* the frames' numbers in decimal, for the samples' paths */
    if (!(foff = malloc(((size_t)n_frames + 1) * sizeof *foff)) ||
        !(ftxt = calloc((size_t)n_frames * 10 + HS_SS_NUM, 1)))
        goto oom;
    foff[0] = 0;
    for (uint32_t k = 0; k < n_frames; k++)
        foff[k + 1] = foff[k] + (uint32_t)hs_int_dec(ftxt + foff[k], k);
    c.ftxt = ftxt;
    c.foff = foff;
    HS_WLIT(c.p.w, "]},\"profiles\":[");
    for (size_t vi = 0; vi < nv; vi++) {
        if (vi)
            HS_WLIT(c.p.w, ",\n");
        c.v = vs[vi];
        c.frame_of = frame_of[vi];
        c.n_weights = 0;
        /* on two threads, the pieces' samples written here in order (each,
         * past the buffer's size, straight from the piece's) */
        static const hs_walk_split split = {hs_ss_node, hs_ss_fork, hs_ss_join, hs_ss_drop};
        int r = hs_calltree_walk_split(vs[vi], 0, &split, &c, 2, err, errlen);
        if (r > 0)
            goto oom;
        if (r != 0)
            goto done;
        HS_WLIT(c.p.w, "],\"weights\":[");
        for (size_t i = 0; i < c.n_weights; i++) {
            if (i)
                hs_wchar(c.p.w, ',');
            hs_wint(c.p.w, c.weights[i]);
            if ((i + 1) % 32 == 0)
                hs_wchar(c.p.w, '\n');
        }
        HS_WLIT(c.p.w, "]}");
    }
    HS_WLIT(c.p.w, "]}\n");
    hs_wflush(c.p.w);
    hs_wbuf_end(c.p.w);
    rc = hs_out_finish(out, err, errlen);
    goto done;
oom:
    snprintf(err, errlen, "out of memory writing speedscope JSON");
done:
    if (making)
        pthread_join(tid, NULL);
    if (fr_open)
        hs_ss_frames_close(&fr);
    hs_wpath_close(&c.p);
    free(order);
    free(ftxt);
    free(foff);
    free(c.weights);
    for (size_t vi = 0; frame_of && vi < nv; vi++) {
        size_t j = 0; /* (a shared one once, at the first view holding it) */
        while (j < vi && frame_of[j] != frame_of[vi])
            j++;
        if (j == vi)
            free(frame_of[vi]);
    }
    free(frame_of);
    return rc;
}

int hs_export_speedscope_multi(const hs_view *const *vs, size_t nv, size_t active,
                               const char *name, FILE *out, char *err, size_t errlen)
{
    hs_ss_views m = {.vs = (const hs_view **)vs, .nv = nv, .active = active};
    return hs_ss_export(&m, name, out, err, errlen);
}

int hs_export_speedscope_types(const hs_view *v, hs_profile *const *ps, size_t n,
                               const hs_analysis_options *o, const char *name, FILE *out,
                               char *err, size_t errlen)
{
    size_t nv = n ? ps[0]->n_sample_types : 0;
    if (nv == 0 || v->sample_index < 0 || (size_t)v->sample_index >= nv)
        return hs_export_speedscope(v, name, out, err, errlen);
    hs_ss_views m = {.vs = calloc(nv, sizeof *m.vs), .own = calloc(nv, sizeof *m.own), .nv = nv,
                     .active = (size_t)v->sample_index, .ps = ps, .n = n, .o = o};
    int rc = -1;
    if (!m.vs || !m.own) {
        snprintf(err, errlen, "out of memory");
    } else {
        m.vs[v->sample_index] = v;
        rc = hs_ss_export(&m, name, out, err, errlen);
    }
    for (size_t i = 0; m.own && i < nv; i++)
        hs_view_free(m.own[i]);
    free(m.own);
    free(m.vs);
    return rc;
}

int hs_export_speedscope(const hs_view *v, const char *name, FILE *out, char *err,
                         size_t errlen)
{
    return hs_export_speedscope_multi(&v, 1, 0, name, out, err, errlen);
}
