/* callgrind.c — export a profile in the callgrind format (Valgrind's
 * callgrind_annotate, KCachegrind). One event, the chosen sample type.
 *
 * For each function (under its object file, "ob=", so KCachegrind can group
 * by binary): its self cost by position (the value of samples whose leaf
 * frame it is), and for each call site (caller position, callee) a "calls="
 * record whose cost is the inclusive cost of that call: the value of every
 * sample in which the caller there calls the callee, counted once per
 * sample so recursion does not inflate it. A sampling profile does not know
 * how often a call was made: the number after "calls=" is the number of
 * samples the call was seen in, and the file says so. A position that only
 * makes calls also gets a cost line (0), so callgrind_annotate annotates it.
 * Positions are source lines, or "instr line" (instruction address and
 * line) when the view is at --addresses granularity, for KCachegrind's
 * machine-code view. Names are compressed ("fn=(3) name" once, then
 * "fn=(3)").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/export.h"
#include "report/report.h"
#include "report/stacks.h"

typedef struct {
    uint32_t fn, node; /* function (strtab id) and the view node at this position */
    uint32_t callee;   /* UINT32_MAX for a self-cost record */
    uint32_t callee_node;
    int64_t cost;
    int64_t count;
    uint64_t stamp; /* last sample (+1) that touched this record; then its sort key */
} hs_cg_rec;

typedef struct {
    hs_cg_rec *recs;
    size_t cap;
    hs_map map;
} hs_cg;

static hs_cg_rec *hs_cg_get(hs_cg *cg, uint32_t fn, uint32_t node, uint32_t callee)
{
    int is_new;
    uint32_t i = hs_map_get(&cg->map, ((uint64_t)fn << 32) | node, callee, &is_new);
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
        r->node = node;
        r->callee = callee;
        r->callee_node = UINT32_MAX;
    }
    return &cg->recs[i];
}

/* The self record of a node (its function is fn): the map's, found once
 * and then through self_ix (node -> record index + 1): every frame of
 * every stack needs it, and a map probe was a cache miss. */
static hs_cg_rec *hs_cg_self(hs_cg *cg, uint32_t fn, uint32_t node, uint32_t *self_ix)
{
    if (self_ix[node])
        return &cg->recs[self_ix[node] - 1];
    hs_cg_rec *r = hs_cg_get(cg, fn, node, UINT32_MAX);
    if (r)
        self_ix[node] = (uint32_t)(r - cg->recs) + 1;
    return r;
}

/* Node ids by position: address, line, then id. */
static int hs_cg_node_cmp(const void *a, const void *b, void *arg)
{
    const hs_node *nodes = arg;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    const hs_node *xn = &nodes[x], *yn = &nodes[y];
    if (xn->address != yn->address)
        return xn->address < yn->address ? -1 : 1;
    if (xn->line != yn->line)
        return xn->line < yn->line ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Within one function's self records or its calls, the file's order:
 * by position (stamp: the node's rank by hs_cg_node_cmp << 32 | the
 * callee). */
static int hs_cg_stamp_cmp(const void *a, const void *b)
{
    const hs_cg_rec *x = a, *y = b;
    return x->stamp < y->stamp ? -1 : x->stamp > y->stamp;
}

/* Put cg's n records in the file's order: by function, its self records
 * first, then its calls, each by position: a counting sort into buckets
 * (function, self or call), then each small bucket sorted by stamp. One
 * qsort of the millions of records with a comparison reading the nodes was
 * a third of the export (cache misses, 40-byte moves). The bucket copy
 * takes the place of the map, freed before. 0, or -1 (out of memory). */
static int hs_cg_sort(hs_cg *cg, size_t n, size_t n_fns, const hs_view *v, uint32_t *rank)
{
    uint32_t *order = malloc((v->n_nodes ? v->n_nodes : 1) * sizeof *order);
    size_t nb = 2 * n_fns, *at = calloc(nb + 1, sizeof *at);
    hs_cg_rec *sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (!order || !at || !sorted) {
        free(order);
        free(at);
        free(sorted);
        return -1;
    }
    for (size_t i = 0; i < v->n_nodes; i++)
        order[i] = (uint32_t)i;
    qsort_r(order, v->n_nodes, sizeof *order, hs_cg_node_cmp, (void *)v->nodes);
    for (size_t i = 0; i < v->n_nodes; i++)
        rank[order[i]] = (uint32_t)i;
    free(order);
    for (size_t i = 0; i < n; i++) {
        hs_cg_rec *r = &cg->recs[i];
        r->stamp = (uint64_t)rank[r->node] << 32 | r->callee;
        at[2 * (size_t)r->fn + (r->callee != UINT32_MAX) + 1]++;
    }
    for (size_t b = 0; b < nb; b++) /* at[b]: where bucket b starts */
        at[b + 1] += at[b];
    for (size_t i = 0; i < n; i++) {
        const hs_cg_rec *r = &cg->recs[i];
        sorted[at[2 * (size_t)r->fn + (r->callee != UINT32_MAX)]++] = *r;
    }
    /* now at[b] is where bucket b ends, the start of b + 1 */
    for (size_t b = 0, lo = 0; b < nb; lo = at[b++])
        if (at[b] - lo > 1)
            qsort(sorted + lo, at[b] - lo, sizeof *sorted, hs_cg_stamp_cmp);
    free(at);
    free(cg->recs);
    cg->recs = sorted;
    cg->cap = n;
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
static void hs_cg_name(hs_wbuf *w, const char *s)
{
    for (; *s; s++)
        hs_wchar(w, *s == '\n' || *s == '\r' ? ' ' : *s);
}

/* "key=(id) name" the first time, "key=(id)" after. seen[] is indexed by
 * strtab id; ids in the file are strtab id + 1. */
static void hs_cg_ref(hs_wbuf *w, const char *key, uint32_t id, const char *name, uint8_t *seen)
{
    hs_wmem(w, key, strlen(key));
    hs_wmem(w, "=(", 2);
    hs_wint(w, (int64_t)id + 1);
    hs_wchar(w, ')');
    if (!seen[id]) {
        seen[id] = 1;
        hs_wchar(w, ' ');
        hs_cg_name(w, *name ? name : "???");
    }
    hs_wchar(w, '\n');
}

/* Per mapping, the offset from runtime to file addresses (KCachegrind
 * disassembles the ob= file at the addresses it is given). */
typedef struct {
    const hs_profile *p;
    int64_t *delta;
    uint8_t *known; /* 0 not computed, 1 ok, 2 unknown */
} hs_cg_addr;

static uint64_t hs_cg_file_addr(hs_cg_addr *a, uint64_t addr)
{
    const hs_profile *p = a->p;
    for (size_t i = 0; i < p->n_mappings; i++) {
        const hs_mapping *m = &p->mappings[i];
        if (addr < m->memory_start || addr >= m->memory_limit)
            continue;
        if (!a->known[i])
            a->known[i] = hs_report_elf_delta(hs_profile_string(p, m->filename), m, &a->delta[i]) == 0 ? 1 : 2;
        return a->known[i] == 1 ? addr + (uint64_t)a->delta[i] : addr;
    }
    return addr;
}

/* A position: "LINE", or "0xADDR LINE" with positions: instr line. */
static void hs_cg_pos(hs_wbuf *w, hs_cg_addr *a, const hs_node *n)
{
    if (a) {
        char hex[24];
        int k = snprintf(hex, sizeof hex, "0x%" PRIx64 " ", hs_cg_file_addr(a, n->address));
        hs_wmem(w, hex, (size_t)k);
    }
    hs_wint(w, n->line > 0 ? n->line : 0);
}

int hs_export_callgrind(const hs_view *v, FILE *out, char *err, size_t errlen)
{
    int rc = -1;
    hs_strtab *names = hs_strtab_new();
    hs_cg cg = {0};
    hs_wbuf *w = NULL;
    uint32_t *node_fn = NULL, *fn_file = NULL, *fn_obj = NULL, *self_ix = NULL;
    uint8_t *fn_seen = NULL, *fl_seen = NULL, *ob_seen = NULL;
    bool instr = v->granularity == HS_GRAN_ADDRESSES;
    hs_cg_addr addrs = {v->profile, NULL, NULL}, *ia = NULL;
    if (instr && v->profile) {
        addrs.delta = calloc(v->profile->n_mappings + 1, sizeof *addrs.delta);
        addrs.known = calloc(v->profile->n_mappings + 1, 1);
        if (!addrs.delta || !addrs.known)
            goto oom;
        ia = &addrs;
    }

    if (!names || hs_map_init(&cg.map) != 0)
        goto oom;
    /* Each view node -> its function (strtab id); each function -> the
     * file of its first node. */
    node_fn = malloc((v->n_nodes ? v->n_nodes : 1) * sizeof *node_fn);
    fn_file = malloc((3 * v->n_nodes + 2) * sizeof *fn_file);
    fn_obj = malloc((3 * v->n_nodes + 2) * sizeof *fn_obj);
    self_ix = calloc(v->n_nodes ? v->n_nodes : 1, sizeof *self_ix);
    if (!node_fn || !fn_file || !fn_obj || !self_ix)
        goto oom;
    uint32_t empty = hs_strtab_intern(names, "", 0);
    if (empty == UINT32_MAX)
        goto oom;
    for (size_t i = 0; i < 3 * v->n_nodes + 2; i++)
        fn_file[i] = fn_obj[i] = UINT32_MAX;
    for (size_t i = 0; i < v->n_nodes; i++) {
        const hs_node *nd = &v->nodes[i];
        const char *fname = nd->function && *nd->function ? nd->function : nd->name;
        const char *file = nd->file ? nd->file : "";
        const char *obj = nd->objfile ? nd->objfile : "";
        uint32_t fn = hs_strtab_intern(names, fname, strlen(fname));
        uint32_t fl = hs_strtab_intern(names, file, strlen(file));
        uint32_t ob = hs_strtab_intern(names, obj, strlen(obj));
        if (fn == UINT32_MAX || fl == UINT32_MAX || ob == UINT32_MAX)
            goto oom;
        node_fn[i] = fn;
        if (fn_file[fn] == UINT32_MAX)
            fn_file[fn] = fl;
        if (fn_obj[fn] == UINT32_MAX && *obj)
            fn_obj[fn] = ob;
    }

    int64_t total = 0;
    for (size_t i = 0; i < v->n_stacks; i++) {
        const hs_stack *st = &v->stacks[i];
        int64_t val = st->value;
        if (val == 0 || st->n == 0)
            continue;
        total = hs_sat_add(total, val);
        uint32_t leaf = st->nodes[st->n - 1];
        hs_cg_rec *r = hs_cg_self(&cg, node_fn[leaf], leaf, self_ix);
        if (!r)
            goto oom;
        r->cost = hs_sat_add(r->cost, val);
        for (uint32_t k = 0; k + 1 < st->n; k++) {
            uint32_t from = st->nodes[k], to = st->nodes[k + 1];
            /* the calling position's own cost line (0 when it only calls) */
            if (!hs_cg_self(&cg, node_fn[from], from, self_ix))
                goto oom;
            r = hs_cg_get(&cg, node_fn[from], from, node_fn[to]);
            if (!r)
                goto oom;
            if (r->stamp == i + 1)
                continue; /* recursion: once per sample */
            r->stamp = i + 1;
            r->cost = hs_sat_add(r->cost, val);
            r->count += st->n_samples;
            if (r->callee_node == UINT32_MAX)
                r->callee_node = to;
        }
    }
    size_t n_recs = cg.map.n;
    free(self_ix);
    self_ix = NULL;
    hs_map_free(&cg.map); /* not needed any more: its memory for the sort's */
    /* node_fn is not needed any more either: it takes the nodes' ranks */
    if (hs_cg_sort(&cg, n_recs, hs_strtab_count(names), v, node_fn) != 0)
        goto oom;

    char event[128];
    hs_cg_event_name(v->sample_type ? v->sample_type : "", event, sizeof event);
    fprintf(out, "# callgrind format\nversion: 1\ncreator: hotspur\n");
    fprintf(out, "cmd: %s profile\n", event);
    fprintf(out, "positions: %s\nevents: %s\n", instr ? "instr line" : "line", event);
    fprintf(out, "# sampled profile: the number after calls= is how many samples saw the call,\n"
                 "# not how many calls were made (a sampling profiler cannot know that)\n");
    /* callgrind_annotate rejects "event:" long names: say the unit in a comment */
    fprintf(out, "# %s is %s in %s\n", event, v->sample_type ? v->sample_type : "",
            v->unit ? v->unit : "");
    fprintf(out, "summary: %" PRId64 "\n", total);

    size_t n_ids = hs_strtab_count(names);
    fn_seen = calloc(n_ids ? n_ids : 1, 1);
    fl_seen = calloc(n_ids ? n_ids : 1, 1);
    ob_seen = calloc(n_ids ? n_ids : 1, 1);
    w = malloc(sizeof *w);
    if (!fn_seen || !fl_seen || !ob_seen || !w)
        goto oom;
    hs_wbuf_init(w, out);
    /* ~100 MB on bench's large profile: a thread writes it (else, without
     * one, this one does); ended below, nothing in between fails */
    (void)hs_wbuf_thread(w);
    uint32_t cur_fn = UINT32_MAX;
    for (size_t i = 0; i < n_recs; i++) {
        const hs_cg_rec *r = &cg.recs[i];
        if (r->fn != cur_fn) {
            cur_fn = r->fn;
            uint32_t fl = fn_file[r->fn] == UINT32_MAX ? empty : fn_file[r->fn];
            hs_wchar(w, '\n');
            if (fn_obj[r->fn] != UINT32_MAX)
                hs_cg_ref(w, "ob", fn_obj[r->fn], hs_strtab_get(names, fn_obj[r->fn]), ob_seen);
            hs_cg_ref(w, "fl", fl, hs_strtab_get(names, fl), fl_seen);
            hs_cg_ref(w, "fn", r->fn, hs_strtab_get(names, r->fn), fn_seen);
        }
        const hs_node *at = &v->nodes[r->node];
        if (r->callee == UINT32_MAX) {
            hs_cg_pos(w, ia, at);
            hs_wchar(w, ' ');
            hs_wint(w, r->cost);
            hs_wchar(w, '\n');
            continue;
        }
        uint32_t cfl = fn_file[r->callee] == UINT32_MAX ? empty : fn_file[r->callee];
        if (fn_obj[r->callee] != UINT32_MAX)
            hs_cg_ref(w, "cob", fn_obj[r->callee], hs_strtab_get(names, fn_obj[r->callee]), ob_seen);
        hs_cg_ref(w, "cfl", cfl, hs_strtab_get(names, cfl), fl_seen);
        hs_cg_ref(w, "cfn", r->callee, hs_strtab_get(names, r->callee), fn_seen);
        hs_wmem(w, "calls=", 6);
        hs_wint(w, r->count);
        hs_wchar(w, ' ');
        hs_cg_pos(w, ia, &v->nodes[r->callee_node]);
        hs_wchar(w, '\n');
        hs_cg_pos(w, ia, at);
        hs_wchar(w, ' ');
        hs_wint(w, r->cost);
        hs_wchar(w, '\n');
    }
    hs_wflush(w);
    hs_wbuf_end(w);
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
    free(w);
    free(fn_seen);
    free(fl_seen);
    free(ob_seen);
    free(addrs.delta);
    free(addrs.known);
    free(node_fn);
    free(self_ix);
    free(fn_file);
    free(fn_obj);
    free(cg.recs);
    hs_map_free(&cg.map);
    hs_strtab_free(names);
    return rc;
}
