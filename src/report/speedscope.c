/* speedscope.c — export a profile as speedscope JSON (the "sampled"
 * profile type of speedscope's file format): a shared frame table and, for
 * each view given (one per sample type of the profile), one profile with
 * one sample per distinct stack, weighted by the view's value. Distinct
 * stacks come from the call tree, so the file stays small however many
 * samples the profile holds. Every frame carries a file and line when the
 * profile knows one: the node's own, or at function granularity the
 * function's file and start line (else the smallest line sampled in it). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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

int hs_export_speedscope_multi(const hs_view *const *vs, size_t nv, size_t active,
                               const char *name, FILE *out, char *err, size_t errlen)
{
    int rc = -1;
    hs_calltree *trees = calloc(nv, sizeof *trees);
    uint32_t **frame_of = calloc(nv, sizeof *frame_of); /* per view: node id -> frame + 1 */
    hs_strtab *keys = hs_strtab_new(), *fnames = hs_strtab_new();
    fn_pos *pos = NULL;
    size_t n_pos = 0;
    uint32_t *path = NULL;
    size_t path_cap = 0;
    if (!trees || !frame_of || !keys || !fnames)
        goto oom;
    if (nv && vs[0]->profile && function_positions(vs[0]->profile, fnames, &pos, &n_pos) < 0)
        goto oom;
    fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",", out);
    fputs("\"exporter\":\"hotspur\",\"name\":", out);
    hs_json_string(out, name ? name : (nv && vs[0]->sample_type ? vs[0]->sample_type : ""));
    fprintf(out, ",\"activeProfileIndex\":%zu,\"shared\":{\"frames\":[", active);
    uint32_t n_frames = 0;
    for (size_t vi = 0; vi < nv; vi++) {
        const hs_view *v = vs[vi];
        if (hs_calltree_build(v, &trees[vi], err, errlen) != 0)
            goto done;
        if (!(frame_of[vi] = calloc(v->n_nodes ? v->n_nodes : 1, sizeof **frame_of)))
            goto oom;
        const hs_calltree *t = &trees[vi];
        for (size_t i = 1; i < t->n; i++) {
            uint32_t id = t->t[i].node;
            if (frame_of[vi][id])
                continue;
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
        const hs_view *v = vs[vi];
        const hs_calltree *t = &trees[vi];
        fputs(vi ? ",\n{\"type\":\"sampled\",\"name\":" : "{\"type\":\"sampled\",\"name\":", out);
        hs_json_string(out, v->sample_type ? v->sample_type : "");
        fprintf(out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRId64 ",\"samples\":[",
                hs_speedscope_unit(v->unit ? v->unit : ""), t->t[0].total);
        /* One sample per tree node with a self value: its path from the root. */
        size_t n_out = 0;
        for (uint32_t node = t->t[0].first_child; node; node = hs_calltree_next(t, node)) {
            const hs_tree_node *nd = &t->t[node];
            if (nd->depth > path_cap) {
                size_t nc = path_cap ? path_cap * 2 : 64;
                while (nc < nd->depth)
                    nc *= 2;
                uint32_t *np = realloc(path, nc * sizeof *np);
                if (!np)
                    goto oom;
                path = np;
                path_cap = nc;
            }
            path[nd->depth - 1] = frame_of[vi][nd->node] - 1;
            if (nd->self == 0)
                continue;
            fputs(n_out++ ? ",\n[" : "\n[", out);
            for (uint32_t d = 0; d < nd->depth; d++)
                fprintf(out, d ? ",%" PRIu32 : "%" PRIu32, path[d]);
            putc(']', out);
        }
        fputs("],\"weights\":[", out);
        n_out = 0;
        for (uint32_t node = t->t[0].first_child; node; node = hs_calltree_next(t, node)) {
            const hs_tree_node *nd = &t->t[node];
            if (nd->self == 0)
                continue;
            fprintf(out, n_out++ ? ",%" PRId64 : "%" PRId64, nd->self);
            if (n_out % 32 == 0)
                putc('\n', out);
        }
        fputs("]}", out);
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
    free(path);
    free(pos);
    for (size_t vi = 0; frame_of && vi < nv; vi++)
        free(frame_of[vi]);
    free(frame_of);
    for (size_t vi = 0; trees && vi < nv; vi++)
        hs_calltree_free(&trees[vi]);
    free(trees);
    hs_strtab_free(keys);
    hs_strtab_free(fnames);
    return rc;
}

int hs_export_speedscope(const hs_view *v, const char *name, FILE *out, char *err,
                         size_t errlen)
{
    return hs_export_speedscope_multi(&v, 1, 0, name, out, err, errlen);
}
