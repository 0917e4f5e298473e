/* callgrind.c — export a profile in the callgrind format (Valgrind's
 * callgrind_annotate, KCachegrind). One event, the chosen sample type.
 *
 * For each function: its self cost by source line (the value of samples
 * whose leaf frame it is), and for each call site (caller line, callee) a
 * "calls=" record whose cost is the inclusive cost of that call: the value
 * of every sample in which the caller at that line calls the callee,
 * counted once per sample so recursion does not inflate it. The number of
 * calls is the number of such samples (a profile does not know the real
 * count). Names are compressed ("fn=(3) name" once, then "fn=(3)").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/export.h"
#include "report/stacks.h"

typedef struct {
    uint32_t fn, line;
    uint32_t callee; /* UINT32_MAX for a self-cost record */
    uint32_t callee_line;
    int64_t cost;
    int64_t count;
    size_t stamp; /* last sample (+1) that touched this record */
} hs_cg_rec;

typedef struct {
    hs_cg_rec *recs;
    size_t cap;
    hs_map map;
} hs_cg;

static hs_cg_rec *hs_cg_get(hs_cg *cg, uint32_t fn, uint32_t line, uint32_t callee)
{
    int is_new;
    uint32_t i = hs_map_get(&cg->map, ((uint64_t)fn << 32) | line, callee, &is_new);
    if (i == UINT32_MAX)
        return NULL;
    if (is_new) {
        if (i >= cg->cap) {
            size_t nc = cg->cap ? cg->cap * 2 : 1024;
            hs_cg_rec *r = realloc(cg->recs, nc * sizeof *r);
            if (!r)
                return NULL;
            cg->recs = r;
            cg->cap = nc;
        }
        hs_cg_rec *r = &cg->recs[i];
        memset(r, 0, sizeof *r);
        r->fn = fn;
        r->line = line;
        r->callee = callee;
    }
    return &cg->recs[i];
}

static int hs_cg_cmp(const void *a, const void *b)
{
    const hs_cg_rec *x = a, *y = b;
    if (x->fn != y->fn)
        return x->fn < y->fn ? -1 : 1;
    /* self records first, then calls, each by line */
    int xs = x->callee == UINT32_MAX, ys = y->callee == UINT32_MAX;
    if (xs != ys)
        return xs ? -1 : 1;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->callee != y->callee)
        return x->callee < y->callee ? -1 : 1;
    return 0;
}

/* Event names are identifiers in the callgrind format. */
static void hs_cg_event_name(const char *s, char *out, size_t outlen)
{
    size_t n = 0;
    for (; *s && n + 1 < outlen; s++)
        out[n++] = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                           (*s >= '0' && *s <= '9') || *s == '_'
                       ? *s
                       : '_';
    if (n == 0 && outlen > 7)
        n = (size_t)snprintf(out, outlen, "samples");
    out[n] = '\0';
}

/* Names printed in the file must not contain newlines. */
static void hs_cg_name(FILE *out, const char *s)
{
    for (; *s; s++)
        putc(*s == '\n' || *s == '\r' ? ' ' : *s, out);
}

/* "key=(id) name" the first time, "key=(id)" after. seen[] is indexed by
 * strtab id; ids in the file are strtab id + 1. */
static void hs_cg_ref(FILE *out, const char *key, uint32_t id, const char *name, uint8_t *seen)
{
    fprintf(out, "%s=(%" PRIu32 ")", key, id + 1);
    if (!seen[id]) {
        seen[id] = 1;
        putc(' ', out);
        hs_cg_name(out, *name ? name : "???");
    }
    putc('\n', out);
}

int hs_export_callgrind(const hs_view *v, FILE *out, char *err, size_t errlen)
{
    int rc = -1;
    hs_strtab *names = hs_strtab_new();
    hs_cg cg = {0};
    uint32_t *node_fn = NULL, *fn_file = NULL;
    uint8_t *fn_seen = NULL, *fl_seen = NULL;

    if (!names || hs_map_init(&cg.map) != 0)
        goto oom;
    /* Each view node -> its function (strtab id); each function -> the
     * file of its first node. */
    node_fn = malloc((v->n_nodes ? v->n_nodes : 1) * sizeof *node_fn);
    fn_file = malloc((2 * v->n_nodes + 2) * sizeof *fn_file);
    if (!node_fn || !fn_file)
        goto oom;
    uint32_t empty = hs_strtab_intern(names, "", 0);
    if (empty == UINT32_MAX)
        goto oom;
    for (size_t i = 0; i < 2 * v->n_nodes + 2; i++)
        fn_file[i] = UINT32_MAX;
    for (size_t i = 0; i < v->n_nodes; i++) {
        const hs_node *nd = &v->nodes[i];
        const char *fname = nd->function && *nd->function ? nd->function : nd->name;
        const char *file = nd->file ? nd->file : "";
        uint32_t fn = hs_strtab_intern(names, fname, strlen(fname));
        uint32_t fl = hs_strtab_intern(names, file, strlen(file));
        if (fn == UINT32_MAX || fl == UINT32_MAX)
            goto oom;
        node_fn[i] = fn;
        if (fn_file[fn] == UINT32_MAX)
            fn_file[fn] = fl;
    }

    int64_t total = 0;
    for (size_t i = 0; i < v->n_stacks; i++) {
        const hs_stack *st = &v->stacks[i];
        int64_t val = st->value;
        if (val == 0 || st->n == 0)
            continue;
        total = hs_sat_add(total, val);
        uint32_t leaf = st->nodes[st->n - 1];
        hs_cg_rec *r = hs_cg_get(&cg, node_fn[leaf], (uint32_t)v->nodes[leaf].line, UINT32_MAX);
        if (!r)
            goto oom;
        r->cost = hs_sat_add(r->cost, val);
        for (uint32_t k = 0; k + 1 < st->n; k++) {
            uint32_t from = st->nodes[k], to = st->nodes[k + 1];
            r = hs_cg_get(&cg, node_fn[from], (uint32_t)v->nodes[from].line, node_fn[to]);
            if (!r)
                goto oom;
            if (r->stamp == i + 1)
                continue; /* recursion: once per sample */
            r->stamp = i + 1;
            r->cost = hs_sat_add(r->cost, val);
            r->count++;
            if (!r->callee_line)
                r->callee_line = (uint32_t)v->nodes[to].line;
        }
    }
    size_t n_recs = cg.map.n;
    if (n_recs)
        qsort(cg.recs, n_recs, sizeof *cg.recs, hs_cg_cmp);

    char event[128];
    hs_cg_event_name(v->sample_type ? v->sample_type : "", event, sizeof event);
    fprintf(out, "# callgrind format\nversion: 1\ncreator: hotspur\n");
    fprintf(out, "cmd: %s profile\n", event);
    fprintf(out, "positions: line\nevents: %s\n", event);
    /* callgrind_annotate rejects "event:" long names: say the unit in a comment */
    fprintf(out, "# %s is %s in %s\n", event, v->sample_type ? v->sample_type : "",
            v->unit ? v->unit : "");
    fprintf(out, "summary: %" PRId64 "\n", total);

    size_t n_ids = hs_strtab_count(names);
    fn_seen = calloc(n_ids ? n_ids : 1, 1);
    fl_seen = calloc(n_ids ? n_ids : 1, 1);
    if (!fn_seen || !fl_seen)
        goto oom;
    uint32_t cur_fn = UINT32_MAX;
    for (size_t i = 0; i < n_recs; i++) {
        const hs_cg_rec *r = &cg.recs[i];
        if (r->fn != cur_fn) {
            cur_fn = r->fn;
            uint32_t fl = fn_file[r->fn] == UINT32_MAX ? empty : fn_file[r->fn];
            putc('\n', out);
            hs_cg_ref(out, "fl", fl, hs_strtab_get(names, fl), fl_seen);
            hs_cg_ref(out, "fn", r->fn, hs_strtab_get(names, r->fn), fn_seen);
        }
        if (r->callee == UINT32_MAX) {
            fprintf(out, "%" PRIu32 " %" PRId64 "\n", r->line, r->cost);
            continue;
        }
        uint32_t cfl = fn_file[r->callee] == UINT32_MAX ? empty : fn_file[r->callee];
        hs_cg_ref(out, "cfl", cfl, hs_strtab_get(names, cfl), fl_seen);
        hs_cg_ref(out, "cfn", r->callee, hs_strtab_get(names, r->callee), fn_seen);
        fprintf(out, "calls=%" PRId64 " %" PRIu32 "\n", r->count, r->callee_line);
        fprintf(out, "%" PRIu32 " %" PRId64 "\n", r->line, r->cost);
    }
    fprintf(out, "\ntotals: %" PRId64 "\n", total);
    if (fflush(out) != 0 || ferror(out)) {
        snprintf(err, errlen, "write error: %s", strerror(errno));
        goto done;
    }
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "out of memory writing callgrind");
done:
    free(fn_seen);
    free(fl_seen);
    free(node_fn);
    free(fn_file);
    free(cg.recs);
    hs_map_free(&cg.map);
    hs_strtab_free(names);
    return rc;
}
