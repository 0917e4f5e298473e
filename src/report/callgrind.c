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

/* One call record of the calling position being written. */
typedef struct {
    uint32_t callee;      /* function (strtab id) */
    uint32_t callee_node; /* the first callee position seen */
    uint32_t last;        /* last stack (+1) counted: once per sample */
    int64_t cost, count;
} hs_cg_call;

/* A call seen in the stacks: the callee node at a calling position, in
 * stack s. */
typedef struct {
    uint32_t to, s;
} hs_cg_ent;

/* A calling position's calls in the file's order: by callee. Most
 * positions have a few; the root's thousands. */
static int hs_cg_call_cmp(const void *a, const void *b)
{
    const hs_cg_call *x = a, *y = b;
    return x->callee < y->callee ? -1 : x->callee > y->callee;
}

static void hs_cg_sort_calls(hs_cg_call *c, size_t n)
{
    if (n > 16) {
        qsort(c, n, sizeof *c, hs_cg_call_cmp);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        hs_cg_call t = c[i];
        size_t j = i;
        for (; j > 0 && c[j - 1].callee > t.callee; j--)
            c[j] = c[j - 1];
        c[j] = t;
    }
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

/* Strings written once and copied many times (each position; the callee
 * lines of a function, once its names are out): formatted by a scratch
 * writer that never fills (each is far below its 64 KiB), then kept end to
 * end in one buffer. */
typedef struct {
    char *s;
    size_t n, cap;
    hs_wbuf *scratch;
} hs_cg_text;

/* Append what the scratch writer holds; its offset in *at. 0, or -1. */
static int hs_cg_keep(hs_cg_text *t, uint32_t *at)
{
    hs_wbuf *w = t->scratch;
    *at = (uint32_t)t->n;
    if (w->n == 0)
        return 0;
    if (t->n + w->n > UINT32_MAX)
        return -1;
    if (t->n + w->n > t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 1 << 16;
        while (nc < t->n + w->n)
            nc *= 2;
        char *ns = realloc(t->s, nc);
        if (!ns)
            return -1;
        t->s = ns;
        t->cap = nc;
    }
    memcpy(t->s + t->n, w->buf, w->n);
    t->n += w->n;
    w->n = 0;
    return 0;
}

/* The export's tables. Functions are strtab ids (of names, which also
 * holds file and object names: the ids the file shows). The file's order
 * is: functions by id; in each, its cost lines by position, then its calls
 * by calling position and callee. ord lists the nodes in that order, and
 * the calls are gathered per calling position, a range of ord at a time
 * (a pass over the stacks each): holding every call of bench's large
 * profile at once (1.8 M) was half of the process's memory. */
typedef struct {
    const hs_view *v;
    hs_strtab *names;
    uint32_t empty;            /* the id of "" */
    uint32_t *node_fn;         /* node -> function */
    uint32_t *fn_file, *fn_obj; /* function -> file of its first node, object (UINT32_MAX: none) */
    uint32_t *fn_start;        /* function -> its first index in ord (n_ids + 1) */
    uint32_t *ord;             /* nodes by function, then position */
    uint32_t *ord_ix;          /* node -> its index in ord */
    int64_t *self;             /* node -> self cost */
    uint8_t *has_self;         /* node -> it has a cost line */
    uint32_t *at;              /* index in ord -> its calls in stacks, then their end in ents */
    hs_cg_ent *ents;           /* one pass's calls by calling position */
    hs_cg_call *calls;         /* one calling position's calls */
    size_t cap_calls;
    uint32_t *fn_call;         /* function -> its index in calls, UINT32_MAX */
    hs_cg_text text;
    uint32_t *pos_at;          /* node -> its position in text (n_nodes + 1: the next is its end) */
    uint32_t *head_at;         /* function -> its callee lines in text, UINT32_MAX: not yet */
    uint8_t *head_len;
    uint8_t *fn_seen, *fl_seen, *ob_seen;
    hs_wbuf *w;
    hs_cg_addr *ia;
} hs_cg;

static void hs_cg_free(hs_cg *cg)
{
    hs_strtab_free(cg->names);
    free(cg->node_fn);
    free(cg->fn_file);
    free(cg->fn_obj);
    free(cg->fn_start);
    free(cg->ord);
    free(cg->ord_ix);
    free(cg->self);
    free(cg->has_self);
    free(cg->at);
    free(cg->ents);
    free(cg->calls);
    free(cg->fn_call);
    free(cg->text.s);
    free(cg->text.scratch);
    free(cg->pos_at);
    free(cg->head_at);
    free(cg->head_len);
    free(cg->fn_seen);
    free(cg->fl_seen);
    free(cg->ob_seen);
    free(cg->w);
}

/* Each node's function; each function's file (of its first node) and
 * object file. 0, or -1 (out of memory). */
static int hs_cg_names(hs_cg *cg)
{
    const hs_view *v = cg->v;
    size_t max_ids = 3 * v->n_nodes + 1; /* pages past the ids used stay untouched */
    cg->names = hs_strtab_new();
    cg->node_fn = malloc((v->n_nodes ? v->n_nodes : 1) * sizeof *cg->node_fn);
    cg->fn_file = malloc(max_ids * sizeof *cg->fn_file);
    cg->fn_obj = malloc(max_ids * sizeof *cg->fn_obj);
    if (!cg->names || !cg->node_fn || !cg->fn_file || !cg->fn_obj)
        return -1;
    cg->empty = hs_strtab_intern(cg->names, "", 0);
    if (cg->empty == UINT32_MAX)
        return -1;
    size_t filled = 0;
    for (size_t i = 0; i < v->n_nodes; i++) {
        const hs_node *nd = &v->nodes[i];
        const char *fname = nd->function && *nd->function ? nd->function : nd->name;
        const char *file = nd->file ? nd->file : "";
        const char *obj = nd->objfile ? nd->objfile : "";
        uint32_t fn = hs_strtab_intern(cg->names, fname, strlen(fname));
        uint32_t fl = hs_strtab_intern(cg->names, file, strlen(file));
        uint32_t ob = hs_strtab_intern(cg->names, obj, strlen(obj));
        if (fn == UINT32_MAX || fl == UINT32_MAX || ob == UINT32_MAX)
            return -1;
        for (size_t n = hs_strtab_count(cg->names); filled < n; filled++)
            cg->fn_file[filled] = cg->fn_obj[filled] = UINT32_MAX;
        cg->node_fn[i] = fn;
        if (cg->fn_file[fn] == UINT32_MAX)
            cg->fn_file[fn] = fl;
        if (cg->fn_obj[fn] == UINT32_MAX && *obj)
            cg->fn_obj[fn] = ob;
    }
    return 0;
}

/* ord, ord_ix and fn_start: the nodes by position (hs_cg_node_cmp), then
 * by a counting sort on their function. 0, or -1 (out of memory). */
static int hs_cg_order(hs_cg *cg, size_t n_ids)
{
    const hs_view *v = cg->v;
    size_t nn = v->n_nodes;
    cg->ord = malloc((nn ? nn : 1) * sizeof *cg->ord);
    cg->ord_ix = malloc((nn ? nn : 1) * sizeof *cg->ord_ix);
    cg->fn_start = calloc(n_ids + 1, sizeof *cg->fn_start);
    if (!cg->ord || !cg->ord_ix || !cg->fn_start)
        return -1;
    uint32_t *by_pos = cg->ord_ix; /* first the nodes by position */
    for (size_t i = 0; i < nn; i++)
        by_pos[i] = (uint32_t)i;
    qsort_r(by_pos, nn, sizeof *by_pos, hs_cg_node_cmp, (void *)v->nodes);
    for (size_t i = 0; i < nn; i++)
        cg->fn_start[cg->node_fn[i] + 1]++;
    for (size_t f = 0; f < n_ids; f++)
        cg->fn_start[f + 1] += cg->fn_start[f];
    for (size_t i = 0; i < nn; i++) /* fn_start[f] moves to the end of f */
        cg->ord[cg->fn_start[cg->node_fn[by_pos[i]]]++] = by_pos[i];
    memmove(cg->fn_start + 1, cg->fn_start, n_ids * sizeof *cg->fn_start);
    cg->fn_start[0] = 0;
    for (size_t q = 0; q < nn; q++)
        cg->ord_ix[cg->ord[q]] = (uint32_t)q;
    return 0;
}

/* Every position that is written (those with a cost line: callees are
 * too), formatted once. 0, or -1 (out of memory). */
static int hs_cg_positions(hs_cg *cg)
{
    const hs_view *v = cg->v;
    cg->pos_at = malloc((v->n_nodes + 1) * sizeof *cg->pos_at);
    cg->text.scratch = malloc(sizeof *cg->text.scratch);
    if (!cg->pos_at || !cg->text.scratch)
        return -1;
    hs_wbuf_init(cg->text.scratch, NULL);
    for (size_t i = 0; i < v->n_nodes; i++) {
        if (cg->has_self[i])
            hs_cg_pos(cg->text.scratch, cg->ia, &v->nodes[i]);
        if (hs_cg_keep(&cg->text, &cg->pos_at[i]) != 0)
            return -1;
    }
    cg->pos_at[v->n_nodes] = (uint32_t)cg->text.n;
    return 0;
}

static inline void hs_cg_wpos(hs_cg *cg, uint32_t node)
{
    hs_wmem(cg->w, cg->text.s + cg->pos_at[node], cg->pos_at[node + 1] - cg->pos_at[node]);
}

/* Function f's header and cost lines, if it has any. */
static void hs_cg_write_fn(hs_cg *cg, uint32_t f)
{
    hs_wbuf *w = cg->w;
    bool head = false;
    for (uint32_t q = cg->fn_start[f]; q < cg->fn_start[f + 1]; q++) {
        uint32_t node = cg->ord[q];
        if (!cg->has_self[node])
            continue;
        if (!head) {
            uint32_t fl = cg->fn_file[f] == UINT32_MAX ? cg->empty : cg->fn_file[f];
            head = true;
            hs_wchar(w, '\n');
            if (cg->fn_obj[f] != UINT32_MAX)
                hs_cg_ref(w, "ob", cg->fn_obj[f], hs_strtab_get(cg->names, cg->fn_obj[f]), cg->ob_seen);
            hs_cg_ref(w, "fl", fl, hs_strtab_get(cg->names, fl), cg->fl_seen);
            hs_cg_ref(w, "fn", f, hs_strtab_get(cg->names, f), cg->fn_seen);
        }
        hs_cg_wpos(cg, node);
        hs_wchar(w, ' ');
        hs_wint(w, cg->self[node]);
        hs_wchar(w, '\n');
    }
}

/* The lines naming callee f before a calls= line: the first time with
 * the names not given yet, then the same lines (kept) again. 0, or -1. */
static int hs_cg_callee(hs_cg *cg, uint32_t f)
{
    if (cg->head_at[f] != UINT32_MAX) {
        hs_wmem(cg->w, cg->text.s + cg->head_at[f], cg->head_len[f]);
        return 0;
    }
    uint32_t cfl = cg->fn_file[f] == UINT32_MAX ? cg->empty : cg->fn_file[f];
    hs_wbuf *ws[2] = {cg->w, cg->text.scratch};
    for (int i = 0; i < 2; i++) { /* the second time all are seen: no names */
        if (cg->fn_obj[f] != UINT32_MAX)
            hs_cg_ref(ws[i], "cob", cg->fn_obj[f], hs_strtab_get(cg->names, cg->fn_obj[f]), cg->ob_seen);
        hs_cg_ref(ws[i], "cfl", cfl, hs_strtab_get(cg->names, cfl), cg->fl_seen);
        hs_cg_ref(ws[i], "cfn", f, hs_strtab_get(cg->names, f), cg->fn_seen);
    }
    cg->head_len[f] = (uint8_t)cg->text.scratch->n;
    return hs_cg_keep(&cg->text, &cg->head_at[f]);
}

/* The calls made at node (ents[b..e), in stack order): one record per
 * callee, its cost counted once per sample (recursion), then written by
 * callee. 0, or -1 (out of memory). */
static int hs_cg_write_calls(hs_cg *cg, uint32_t node, size_t b, size_t e)
{
    const hs_stack *stacks = cg->v->stacks;
    hs_wbuf *w = cg->w;
    size_t nc = 0;
    for (size_t j = b; j < e; j++) {
        uint32_t to = cg->ents[j].to, s = cg->ents[j].s, cf = cg->node_fn[to];
        uint32_t ci = cg->fn_call[cf];
        if (ci == UINT32_MAX) {
            if (nc == cg->cap_calls) {
                size_t ncap = cg->cap_calls ? 2 * cg->cap_calls : 64;
                hs_cg_call *c = realloc(cg->calls, ncap * sizeof *c);
                if (!c) {
                    for (size_t k = 0; k < nc; k++)
                        cg->fn_call[cg->calls[k].callee] = UINT32_MAX;
                    return -1;
                }
                cg->calls = c;
                cg->cap_calls = ncap;
            }
            ci = (uint32_t)nc++;
            cg->fn_call[cf] = ci;
            cg->calls[ci] = (hs_cg_call){cf, to, 0, 0, 0};
        }
        hs_cg_call *c = &cg->calls[ci];
        if (c->last == s + 1)
            continue; /* recursion: once per sample */
        c->last = s + 1;
        c->cost = hs_sat_add(c->cost, stacks[s].value);
        c->count += stacks[s].n_samples;
    }
    for (size_t k = 0; k < nc; k++)
        cg->fn_call[cg->calls[k].callee] = UINT32_MAX;
    hs_cg_sort_calls(cg->calls, nc);
    for (size_t k = 0; k < nc; k++) {
        const hs_cg_call *c = &cg->calls[k];
        if (hs_cg_callee(cg, c->callee) != 0)
            return -1;
        hs_wmem(w, "calls=", 6);
        hs_wint(w, c->count);
        hs_wchar(w, ' ');
        hs_cg_wpos(cg, c->callee_node);
        hs_wchar(w, '\n');
        hs_cg_wpos(cg, node);
        hs_wchar(w, ' ');
        hs_wint(w, c->cost);
        hs_wchar(w, '\n');
    }
    return 0;
}

/* Calls gathered per pass by default: at most this many, or the most one
 * position makes (ents is 8 bytes each: 2 MiB). */
#define HS_CG_PASS_CALLS ((size_t)1 << 18)

/* Every function in ord's range [lo, hi) written: the calls made there
 * gathered from the stacks into ents by calling position (at[q] counted
 * them; it becomes their end), then each position's written. */
static int hs_cg_write_range(hs_cg *cg, uint32_t lo, uint32_t hi, uint32_t *cur_fn)
{
    const hs_view *v = cg->v;
    uint32_t sum = 0, span = hi - lo;
    for (uint32_t q = lo; q < hi; q++) {
        uint32_t c = cg->at[q];
        cg->at[q] = sum;
        sum += c;
    }
    for (size_t i = 0; sum && i < v->n_stacks; i++) {
        const hs_stack *st = &v->stacks[i];
        if (st->value == 0 || st->n == 0)
            continue;
        for (uint32_t k = 0; k + 1 < st->n; k++) {
            uint32_t q = cg->ord_ix[st->nodes[k]];
            if (q - lo < span)
                cg->ents[cg->at[q]++] = (hs_cg_ent){st->nodes[k + 1], (uint32_t)i};
        }
    }
    for (uint32_t q = lo; q < hi; q++) {
        uint32_t node = cg->ord[q], f = cg->node_fn[node];
        if (f != *cur_fn) {
            *cur_fn = f;
            hs_cg_write_fn(cg, f);
        }
        uint32_t b = q == lo ? 0 : cg->at[q - 1];
        if (b < cg->at[q] && hs_cg_write_calls(cg, node, b, cg->at[q]) != 0)
            return -1;
    }
    return 0;
}

int hs_export_callgrind(const hs_view *v, FILE *out, char *err, size_t errlen)
{
    return hs_export_callgrind_ex(v, out, 0, err, errlen);
}

int hs_export_callgrind_ex(const hs_view *v, FILE *out, size_t pass_calls, char *err, size_t errlen)
{
    int rc = -1;
    hs_cg cg = {.v = v};
    bool instr = v->granularity == HS_GRAN_ADDRESSES;
    bool threaded = false;
    hs_cg_addr addrs = {v->profile, NULL, NULL};
    if (instr && v->profile) {
        addrs.delta = calloc(v->profile->n_mappings + 1, sizeof *addrs.delta);
        addrs.known = calloc(v->profile->n_mappings + 1, 1);
        if (!addrs.delta || !addrs.known)
            goto oom;
        cg.ia = &addrs;
    }
    if (v->n_nodes >= UINT32_MAX / 4 || v->n_stacks >= UINT32_MAX || hs_cg_names(&cg) != 0)
        goto oom;
    size_t nn = v->n_nodes, n_ids = hs_strtab_count(cg.names);
    if (hs_cg_order(&cg, n_ids) != 0)
        goto oom;

    /* cost lines, and the calls made at each position (at[]) */
    cg.self = calloc(nn + 1, sizeof *cg.self);
    cg.has_self = calloc(nn + 1, 1);
    cg.at = calloc(nn + 1, sizeof *cg.at);
    if (!cg.self || !cg.has_self || !cg.at)
        goto oom;
    int64_t total = 0;
    for (size_t i = 0; i < v->n_stacks; i++) {
        const hs_stack *st = &v->stacks[i];
        int64_t val = st->value;
        if (val == 0 || st->n == 0)
            continue;
        total = hs_sat_add(total, val);
        uint32_t leaf = st->nodes[st->n - 1];
        cg.self[leaf] = hs_sat_add(cg.self[leaf], val);
        cg.has_self[leaf] = 1;
        for (uint32_t k = 0; k + 1 < st->n; k++) {
            cg.has_self[st->nodes[k]] = 1; /* a cost line (0 when it only calls) */
            cg.at[cg.ord_ix[st->nodes[k]]]++;
        }
    }
    size_t pass = pass_calls ? pass_calls : HS_CG_PASS_CALLS, n_calls = 0, most = 1;
    for (size_t q = 0; q < nn; q++) {
        n_calls += cg.at[q];
        if (cg.at[q] > most)
            most = cg.at[q];
    }
    pass = pass < most ? most : pass > n_calls ? n_calls : pass;
    cg.ents = malloc((pass ? pass : 1) * sizeof *cg.ents);
    cg.fn_call = malloc((n_ids ? n_ids : 1) * sizeof *cg.fn_call);
    cg.fn_seen = calloc(n_ids ? n_ids : 1, 1);
    cg.fl_seen = calloc(n_ids ? n_ids : 1, 1);
    cg.ob_seen = calloc(n_ids ? n_ids : 1, 1);
    cg.w = malloc(sizeof *cg.w);
    cg.head_at = malloc((n_ids ? n_ids : 1) * sizeof *cg.head_at);
    cg.head_len = malloc(n_ids ? n_ids : 1);
    if (!cg.ents || !cg.fn_call || !cg.fn_seen || !cg.fl_seen || !cg.ob_seen || !cg.w ||
        !cg.head_at || !cg.head_len || hs_cg_positions(&cg) != 0)
        goto oom;
    memset(cg.fn_call, 0xff, (n_ids ? n_ids : 1) * sizeof *cg.fn_call);
    memset(cg.head_at, 0xff, (n_ids ? n_ids : 1) * sizeof *cg.head_at);

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

    hs_wbuf_init(cg.w, out);
    /* ~100 MB on bench's large profile: a thread writes it (else, without
     * one, this one does) */
    threaded = hs_wbuf_thread(cg.w) == 0;
    uint32_t cur_fn = UINT32_MAX;
    for (uint32_t lo = 0, hi; lo < nn; lo = hi) {
        size_t sum = 0;
        for (hi = lo; hi < nn && (hi == lo || sum + cg.at[hi] <= pass); hi++)
            sum += cg.at[hi];
        if (hs_cg_write_range(&cg, lo, hi, &cur_fn) != 0)
            goto oom;
    }
    hs_wflush(cg.w);
    hs_wbuf_end(cg.w);
    threaded = false;
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
    if (threaded)
        hs_wbuf_end(cg.w);
    free(addrs.delta);
    free(addrs.known);
    hs_cg_free(&cg);
    return rc;
}
