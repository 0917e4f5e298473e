/* speedscope.c — export a profile as speedscope JSON (the "sampled"
 * profile type of speedscope's file format): a shared frame table (one
 * frame per view node, with its file) and one sample per distinct stack,
 * weighted by the view's value. Distinct stacks come from the call tree,
 * so the file stays small however many samples the profile holds. */
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

int hs_export_speedscope(const hs_view *v, const char *name, FILE *out, char *err,
                         size_t errlen)
{
    int rc = -1;
    hs_calltree t = {0};
    uint32_t *frame_of = NULL; /* view node id -> frame index + 1 */
    uint32_t *path = NULL;
    size_t path_cap = 0;

    if (hs_calltree_build(v, &t, err, errlen) != 0)
        return -1;
    frame_of = calloc(v->n_nodes ? v->n_nodes : 1, sizeof *frame_of);
    if (!frame_of)
        goto oom;

    const char *type = v->sample_type ? v->sample_type : "";
    fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",", out);
    fputs("\"exporter\":\"hotspur\",\"name\":", out);
    hs_json_string(out, name ? name : type);
    fputs(",\"activeProfileIndex\":0,\"shared\":{\"frames\":[", out);
    uint32_t n_frames = 0;
    for (size_t i = 1; i < t.n; i++) {
        uint32_t id = t.t[i].node;
        if (frame_of[id])
            continue;
        frame_of[id] = ++n_frames;
        const hs_node *nd = &v->nodes[id];
        fputs(n_frames > 1 ? ",\n{\"name\":" : "\n{\"name\":", out);
        hs_json_string(out, nd->name);
        if (nd->file && *nd->file) {
            fputs(",\"file\":", out);
            hs_json_string(out, nd->file);
        }
        if (nd->line > 0)
            fprintf(out, ",\"line\":%" PRId64, nd->line);
        putc('}', out);
    }
    fputs("]},\"profiles\":[{\"type\":\"sampled\",\"name\":", out);
    hs_json_string(out, type);
    fprintf(out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRId64 ",\"samples\":[",
            hs_speedscope_unit(v->unit ? v->unit : ""), t.t[0].total);

    /* One sample per tree node with a self value: its path from the root. */
    size_t n_out = 0;
    for (uint32_t node = t.t[0].first_child; node; node = hs_calltree_next(&t, node)) {
        const hs_tree_node *nd = &t.t[node];
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
        path[nd->depth - 1] = frame_of[nd->node] - 1;
        if (nd->self == 0)
            continue;
        fputs(n_out++ ? ",\n[" : "\n[", out);
        for (uint32_t d = 0; d < nd->depth; d++)
            fprintf(out, d ? ",%" PRIu32 : "%" PRIu32, path[d]);
        putc(']', out);
    }
    fputs("],\"weights\":[", out);
    n_out = 0;
    for (uint32_t node = t.t[0].first_child; node; node = hs_calltree_next(&t, node)) {
        const hs_tree_node *nd = &t.t[node];
        if (nd->self == 0)
            continue;
        fprintf(out, n_out++ ? ",%" PRId64 : "%" PRId64, nd->self);
        if (n_out % 32 == 0)
            putc('\n', out);
    }
    fputs("]}]}\n", out);
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
    free(frame_of);
    hs_calltree_free(&t);
    return rc;
}
