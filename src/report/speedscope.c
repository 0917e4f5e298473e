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
#include <stdlib.h>
#include <string.h>

#include "profile/vec.h"
#include "report/export.h"
#include "report/stacks.h"

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
    const char *file;
    int64_t line;
} fn_pos;

/* file and line of each function name of p (strtab id -> position) */
static int function_positions(const hs_profile *p, hs_strtab *names, fn_pos **out, size_t *n)
{
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    for (size_t l = 0; l < p->n_locations; l++) {
        const hs_location *loc = &p->locations[l];
        for (size_t k = 0; k < loc->n_lines; k++) {
            const hs_function *f = hs_profile_function(p, loc->lines[k].function_id);
            if (!f)
                continue;
            const char *name = hs_profile_string(p, f->name);
            uint32_t id = hs_strtab_intern(names, name, strlen(name));
            if (id == UINT32_MAX)
                return -1;
            if (id >= cap) {
                size_t nc = cap ? cap * 2 : 256;
                while (nc <= id)
                    nc *= 2;
                fn_pos *np = realloc(*out, nc * sizeof *np);
                if (!np)
                    return -1;
                memset(np + cap, 0, (nc - cap) * sizeof *np);
                *out = np;
                cap = nc;
            }
            if (id >= *n)
                *n = id + 1;
            fn_pos *fp = &(*out)[id];
            const char *file = hs_profile_string(p, f->filename);
            if (!fp->file || !*fp->file)
                fp->file = file;
            int64_t line = f->start_line > 0 ? f->start_line : loc->lines[k].line;
            if (line > 0 && (fp->line == 0 || line < fp->line))
                fp->line = line;
        }
    }
    return 0;
}

/* One profile's walk: a sample per tree node with a self value, its path
 * of frames from the root; the weights are kept for after. */
typedef struct {
    const hs_view *v;
    const uint32_t *frame_of; /* node id -> frame + 1 */
    hs_wbuf *w;
    uint32_t *path;
    size_t path_cap;
    int64_t *weights;
    size_t n_weights, weights_cap;
} hs_ss_walk;

static int hs_ss_node(void *ctx, const hs_walk_node *nd, const hs_walk_node *kids, size_t n_kids)
{
    hs_ss_walk *c = ctx;
    (void)kids;
    (void)n_kids;
    if (nd->depth == 0) { /* the root, first: the profile's header */
        const hs_view *v = c->v;
        fputs("{\"type\":\"sampled\",\"name\":", c->w->out);
        hs_json_string(c->w->out, v->sample_type ? v->sample_type : "");
        fprintf(c->w->out,
                ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRId64 ",\"samples\":[",
                hs_speedscope_unit(v->unit ? v->unit : ""), nd->total);
        return 0;
    }
    if (HS_VEC_RESERVE(c->path, c->path_cap, nd->depth) < 0)
        return 1; /* out of memory */
    c->path[nd->depth - 1] = c->frame_of[nd->node] - 1;
    if (nd->self == 0)
        return 0;
    if (HS_VEC_RESERVE(c->weights, c->weights_cap, c->n_weights + 1) < 0)
        return 1;
    hs_wmem(c->w, c->n_weights ? ",\n[" : "\n[", c->n_weights ? 3 : 2);
    c->weights[c->n_weights++] = nd->self;
    for (uint32_t d = 0; d < nd->depth; d++) {
        if (d)
            hs_wchar(c->w, ',');
        hs_wint(c->w, c->path[d]);
    }
    hs_wchar(c->w, ']');
    return 0;
}

int hs_export_speedscope_multi(const hs_view *const *vs, size_t nv, size_t active,
                               const char *name, FILE *out, char *err, size_t errlen)
{
    int rc = -1;
    uint32_t **frame_of = calloc(nv, sizeof *frame_of); /* per view: node id -> frame + 1 */
    hs_strtab *keys = hs_strtab_new(), *fnames = hs_strtab_new();
    fn_pos *pos = NULL;
    size_t n_pos = 0;
    uint32_t *order = NULL;
    hs_ss_walk c = {0};
    c.w = malloc(sizeof *c.w);
    if (!frame_of || !keys || !fnames || !c.w)
        goto oom;
    hs_wbuf_init(c.w, out);
    if (nv && vs[0]->profile && function_positions(vs[0]->profile, fnames, &pos, &n_pos) < 0)
        goto oom;
    fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",", out);
    fputs("\"exporter\":\"hotspur\",\"name\":", out);
    hs_json_string(out, name ? name : (nv && vs[0]->sample_type ? vs[0]->sample_type : ""));
    fprintf(out, ",\"activeProfileIndex\":%zu,\"shared\":{\"frames\":[", active);
    uint32_t n_frames = 0;
    for (size_t vi = 0; vi < nv; vi++) {
        const hs_view *v = vs[vi];
        size_t n_order;
        free(order);
        if (hs_calltree_first_use(v, &order, &n_order, err, errlen) != 0)
            goto done;
        if (!(frame_of[vi] = calloc(v->n_nodes ? v->n_nodes : 1, sizeof **frame_of)))
            goto oom;
        for (size_t i = 0; i < n_order; i++) {
            uint32_t id = order[i];
            const hs_node *nd = &v->nodes[id];
            const char *file = nd->file ? nd->file : "";
            int64_t line = nd->line;
            if ((!*file || line <= 0) && nd->function && *nd->function) {
                uint32_t fid = hs_strtab_intern(fnames, nd->function, strlen(nd->function));
                if (fid == UINT32_MAX)
                    goto oom;
                if (fid < n_pos) {
                    if (!*file && pos[fid].file)
                        file = pos[fid].file;
                    if (line <= 0)
                        line = pos[fid].line;
                }
            }
            char key[4096];
            int kl = snprintf(key, sizeof key, "%s\x1f%s\x1f%" PRId64, nd->name, file, line);
            size_t before = hs_strtab_count(keys);
            uint32_t k = hs_strtab_intern(keys, key, kl < (int)sizeof key ? (size_t)kl : sizeof key - 1);
            if (k == UINT32_MAX)
                goto oom;
            frame_of[vi][id] = k + 1;
            if (hs_strtab_count(keys) == before)
                continue; /* a frame of an earlier profile */
            fputs(n_frames++ ? ",\n{\"name\":" : "\n{\"name\":", out);
            hs_json_string(out, nd->name);
            if (*file) {
                fputs(",\"file\":", out);
                hs_json_string(out, file);
            }
            if (line > 0)
                fprintf(out, ",\"line\":%" PRId64, line);
            putc('}', out);
        }
    }
    fputs("]},\"profiles\":[", out);
    for (size_t vi = 0; vi < nv; vi++) {
        if (vi)
            fputs(",\n", out);
        c.v = vs[vi];
        c.frame_of = frame_of[vi];
        c.n_weights = 0;
        int r = hs_calltree_walk(vs[vi], 0, hs_ss_node, &c, err, errlen);
        if (r > 0)
            goto oom;
        if (r != 0)
            goto done;
        hs_wmem(c.w, "],\"weights\":[", 13);
        for (size_t i = 0; i < c.n_weights; i++) {
            if (i)
                hs_wchar(c.w, ',');
            hs_wint(c.w, c.weights[i]);
            if ((i + 1) % 32 == 0)
                hs_wchar(c.w, '\n');
        }
        hs_wmem(c.w, "]}", 2);
        hs_wflush(c.w);
    }
    fputs("]}\n", out);
    if (fflush(out) != 0 || ferror(out)) {
        snprintf(err, errlen, "write error: %s", strerror(errno));
        goto done;
    }
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "out of memory writing speedscope JSON");
done:
    free(c.w);
    free(c.path);
    free(c.weights);
    free(order);
    free(pos);
    for (size_t vi = 0; frame_of && vi < nv; vi++)
        free(frame_of[vi]);
    free(frame_of);
    hs_strtab_free(keys);
    hs_strtab_free(fnames);
    return rc;
}

int hs_export_speedscope(const hs_view *v, const char *name, FILE *out, char *err,
                         size_t errlen)
{
    return hs_export_speedscope_multi(&v, 1, 0, name, out, err, errlen);
}
