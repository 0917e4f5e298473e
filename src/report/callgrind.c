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
 *
 * The file is formatted on two threads: its positions are cut into blocks,
 * each formatted into its thread's buffer and written in turn. Which
 * reference gives a name is worked out before (the first in the file's
 * order), so a block's bytes do not depend on the blocks before it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
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
 * stack s, with that stack's value (read here, where the stack is at hand:
 * read per call from the stacks, scattered, it was a cache miss each, a
 * third of formatting the calls; the sample count is read from n_samples,
 * a smaller array). */
typedef struct {
    uint32_t to, s;
    int64_t value;
} hs_cg_ent;

/* Keys (callee << 32 | index) in order: a position's calls are written by
 * callee. Most positions have a few; the root's thousands. */
static void hs_cg_sort_keys(uint64_t *a, size_t n)
{
    while (n > 16) {
        uint64_t x = a[0], y = a[n / 2], z = a[n - 1], t;
        uint64_t piv = x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
        size_t i = 0, j = n - 1;
        for (;;) { /* Hoare: keys are distinct */
            while (a[i] < piv)
                i++;
            while (a[j] > piv)
                j--;
            if (i >= j)
                break;
            t = a[i], a[i] = a[j], a[j] = t;
            i++, j--;
        }
        size_t m = j + 1; /* [0, m) <= piv <= [m, n) */
        if (m < n - m) {
            hs_cg_sort_keys(a, m);
            a += m, n -= m;
        } else {
            hs_cg_sort_keys(a + m, n - m);
            n = m;
        }
    }
    for (size_t i = 1; i < n; i++) {
        uint64_t t = a[i];
        size_t j = i;
        for (; j > 0 && a[j - 1] > t; j--)
            a[j] = a[j - 1];
        a[j] = t;
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

/* The file's text is formatted into hs_bytes buffers (base/bytes.h):
 * room is made with hs_bytes_reserve, then records are written unchecked
 * (the puts below). */
typedef hs_bytes hs_cg_buf;

/* Enough room for any record but the names: a calls= record (its callee
 * lines, two positions of "0x" + 16 + ' ' + 20, two numbers) or a cost
 * line. */
#define HS_CG_REC 256

static inline void hs_cg_put(hs_cg_buf *o, const void *p, size_t k)
{
    memcpy(o->s + o->n, p, k);
    o->n += k;
}

/* The k bytes at p (k <= fix) by copying fix, a constant: no call to
 * memcpy for the short texts copied millions of times. p has fix bytes
 * readable, the buffer room for them (HS_CG_REC holds the copies of a
 * record: two positions and the callee lines). */
#define HS_CG_FIX_POS 48  /* "0x" + 16 + ' ' + 20 */
#define HS_CG_FIX_HEAD 64 /* "cob=(N)\n" "cfl=(N)\n" "cfn=(N)\n", N <= 10 digits */
static inline void hs_cg_putfix(hs_cg_buf *o, const char *p, size_t k, size_t fix)
{
    memcpy(o->s + o->n, p, fix);
    o->n += k;
}

static inline void hs_cg_putc(hs_cg_buf *o, char c)
{
    o->s[o->n++] = c;
}

static inline void hs_cg_putint(hs_cg_buf *o, int64_t v)
{
    o->n += hs_int_dec(o->s + o->n, v);
}

/* "key=(id) name" when name is given (names printed in the file must not
 * contain newlines), "key=(id)" else; ids in the file are strtab id + 1.
 * 0, or -1 (out of memory). */
static int hs_cg_ref(hs_cg_buf *o, const char *key, uint32_t id, const char *name)
{
    size_t len = name ? strlen(*name ? name : "???") : 0;
    if (hs_bytes_reserve(o, HS_CG_REC + len) != 0)
        return -1;
    hs_cg_put(o, key, strlen(key));
    hs_cg_put(o, "=(", 2);
    hs_cg_putint(o, (int64_t)id + 1);
    hs_cg_putc(o, ')');
    if (name) {
        const char *s = *name ? name : "???";
        hs_cg_putc(o, ' ');
        for (size_t i = 0; i < len;) {
            size_t k = strcspn(s + i, "\n\r");
            hs_cg_put(o, s + i, k);
            if ((i += k) < len)
                hs_cg_putc(o, ' '), i++;
        }
    }
    hs_cg_putc(o, '\n');
    return 0;
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

/* Which references give the names (named[f]): the function's header
 * (ob=, fl=, fn=) or its first call record (cob=, cfl=, cfn=). */
enum {
    HS_CG_H_OB = 1,
    HS_CG_H_FL = 2,
    HS_CG_H_FN = 4,
    HS_CG_C_OB = 8,
    HS_CG_C_FL = 16,
    HS_CG_C_FN = 32,
    HS_CG_HEAD = 64, /* the function has a header (a cost line) */
};

/* What a call shares with its caller (hs_cg_refs): the object, the file. */
enum { HS_CG_SAME_OB = 1, HS_CG_SAME_FL = 2 };

/* Calls per block of positions formatted by one thread (and one for each
 * position): ~150 KB of the file. */
#define HS_CG_BLOCK 4096
/* Blocks formatted and not yet written, at most: a thread that is ahead
 * of the block to be written next goes on with another. */
#define HS_CG_SLOTS 4

typedef struct hs_cg hs_cg;

/* A block's text, while it is formatted (state 1) and until it is written
 * (state 2, ready; 0: the slot is free). */
typedef struct {
    hs_cg_buf b;
    size_t blk;
    int state;
    bool failed;
} hs_cg_slot;

/* A formatting thread's own tables. */
typedef struct {
    hs_cg *cg;
    unsigned id;
    hs_cg_call *calls; /* one calling position's calls */
    uint64_t *keys;
    size_t cap_calls;
    uint32_t *fn_call; /* function -> its index in calls, UINT32_MAX */
    hs_cg_buf *o;      /* the block being formatted */
    pthread_t tid;
} hs_cg_worker;

/* The export's tables. Functions are strtab ids (of names, which also
 * holds file and object names: the ids the file shows). The file's order
 * is: functions by id; in each, its cost lines by position, then its calls
 * by calling position and callee. ord lists the nodes in that order, and
 * the calls are gathered per calling position, a range of ord at a time
 * (a pass over the stacks each, each thread taking half of the stacks):
 * holding every call of bench's large profile at once (1.8 M) was half of
 * the process's memory. */
struct hs_cg {
    const hs_view *v;
    uint32_t empty;             /* the id of "" */
    size_t n_ids;
    uint32_t *id_src;           /* id -> node << 2 | 0 function, 1 file, 2 object: its string */
    uint32_t *node_fn;          /* node -> function */
    uint32_t *fn_file, *fn_obj; /* function -> file of its first node, object (UINT32_MAX: none) */
    uint32_t *fn_start;         /* function -> its first index in ord (n_ids + 1) */
    uint32_t *ord;              /* nodes by function, then position */
    uint32_t *ord_ix;           /* node -> its index in ord */
    int64_t *self;              /* node -> self cost */
    uint8_t *has_self;          /* node -> it has a cost line */
    uint32_t *first_q;          /* function -> the first index in ord calling it, UINT32_MAX */
    int64_t *self1;             /* the same over the second half of the stacks, */
    uint8_t *has_self1;         /* counted by the second thread (then merged */
    uint32_t *first_q1;         /* and freed) */
    int64_t total1;
    uint8_t *named;             /* function -> HS_CG_* */
    uint32_t *at[2];            /* index in ord -> its calls in half h of the stacks; then cursors */
    size_t split;               /* the second half of the stacks starts here */
    hs_cg_ent *ents;            /* one pass's calls by calling position */
    uint32_t *n_samples;        /* stack -> its samples */
    uint32_t *passes;           /* the passes' first indices in ord, then nn */
    size_t n_passes;
    uint32_t *blocks;           /* the blocks' first indices in ord (each pass's, in turn) */
    size_t *pass_blk;           /* pass -> its first block (n_passes + 1) */
    hs_cg_buf text;
    uint32_t *pos_at;           /* node -> its position in text (n_nodes + 1: the next is its end) */
    uint32_t *head_at;          /* function -> its callee lines (no names) in text */
    uint8_t *head_len;          /* their length, of which */
    uint8_t *head_ob, *head_fl; /* the cob= line's (0: none) and the cfl= line's */
    hs_cg_addr *ia;
    FILE *out;

    unsigned nw; /* threads formatting */
    hs_cg_worker w[2];
    pthread_barrier_t bar;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu: */
    hs_cg_slot slots[HS_CG_SLOTS];
    size_t claim;  /* the next block to format */
    size_t turn;   /* the next block to write */
    bool writing;  /* a thread is writing blocks */
    bool failed;   /* out of memory in a thread */
};

static void hs_cg_free(hs_cg *cg)
{
    free(cg->id_src);
    free(cg->node_fn);
    free(cg->fn_file);
    free(cg->fn_obj);
    free(cg->fn_start);
    free(cg->ord);
    free(cg->ord_ix);
    free(cg->self);
    free(cg->has_self);
    free(cg->first_q);
    free(cg->self1);
    free(cg->has_self1);
    free(cg->first_q1);
    free(cg->named);
    free(cg->at[0]);
    free(cg->at[1]);
    free(cg->ents);
    free(cg->n_samples);
    free(cg->passes);
    free(cg->blocks);
    free(cg->pass_blk);
    for (unsigned i = 0; i < HS_CG_SLOTS; i++)
        hs_bytes_free(&cg->slots[i].b);
    hs_bytes_free(&cg->text);
    free(cg->pos_at);
    free(cg->head_at);
    free(cg->head_len);
    free(cg->head_ob);
    free(cg->head_fl);
    for (unsigned i = 0; i < 2; i++) {
        free(cg->w[i].calls);
        free(cg->w[i].keys);
        free(cg->w[i].fn_call);
    }
}

/* The strings of nodes interned: ids by content, first seen first, and
 * each id's first string (the view's, which outlive the export: the table
 * is freed once the ids are known). A string at a pointer seen recently
 * has that one's id (nodes share their files and objects). */
#define HS_CG_SEEN 8192

typedef struct {
    hs_strtab *t;
    struct {
        const char *s;
        uint32_t id;
    } seen[HS_CG_SEEN];
    uint32_t *id_src;
} hs_cg_interner;

/* The id of s, node i's string of kind k. UINT32_MAX: out of memory. */
static uint32_t hs_cg_intern(hs_cg_interner *in, const char *s, uint32_t i, unsigned k)
{
    size_t h = (size_t)(((uint64_t)(uintptr_t)s * 0x9e3779b97f4a7c15ULL) >> 51);
    if (in->seen[h].s == s)
        return in->seen[h].id;
    size_t n = hs_strtab_count(in->t);
    uint32_t id = hs_strtab_intern_len(in->t, s, strlen(s));
    if (id == UINT32_MAX)
        return id;
    if (id == n)
        in->id_src[id] = i << 2 | k;
    in->seen[h].s = s;
    in->seen[h].id = id;
    return id;
}

/* The string of id. */
static const char *hs_cg_str(const hs_cg *cg, uint32_t id)
{
    const hs_node *nd = &cg->v->nodes[cg->id_src[id] >> 2];
    switch (cg->id_src[id] & 3) {
    case 0: return nd->function && *nd->function ? nd->function : nd->name;
    case 1: return nd->file ? nd->file : "";
    case 2: return nd->objfile ? nd->objfile : "";
    default: return "";
    }
}

/* Each node's function; each function's file (of its first node) and
 * object file. 0, or -1 (out of memory). */
static int hs_cg_names(hs_cg *cg)
{
    const hs_view *v = cg->v;
    size_t max_ids = 3 * v->n_nodes + 1; /* pages past the ids used stay untouched */
    int rc = -1;
    hs_cg_interner *in = calloc(1, sizeof *in);
    cg->node_fn = malloc((v->n_nodes ? v->n_nodes : 1) * sizeof *cg->node_fn);
    cg->fn_file = malloc(max_ids * sizeof *cg->fn_file);
    cg->fn_obj = malloc(max_ids * sizeof *cg->fn_obj);
    cg->id_src = malloc(max_ids * sizeof *cg->id_src);
    if (!in || !cg->node_fn || !cg->fn_file || !cg->fn_obj || !cg->id_src)
        goto done;
    in->id_src = cg->id_src;
    in->t = hs_strtab_new();
    if (!in->t || (cg->empty = hs_strtab_intern_len(in->t, "", 0)) == UINT32_MAX)
        goto done;
    cg->id_src[cg->empty] = 3;
    size_t filled = 0;
    for (uint32_t i = 0; i < v->n_nodes; i++) {
        const hs_node *nd = &v->nodes[i];
        const char *fname = nd->function && *nd->function ? nd->function : nd->name;
        const char *obj = nd->objfile ? nd->objfile : "";
        uint32_t fn = hs_cg_intern(in, fname, i, 0);
        uint32_t fl = hs_cg_intern(in, nd->file ? nd->file : "", i, 1);
        uint32_t ob = hs_cg_intern(in, obj, i, 2);
        if (fn == UINT32_MAX || fl == UINT32_MAX || ob == UINT32_MAX)
            goto done;
        for (size_t n = hs_strtab_count(in->t); filled < n; filled++)
            cg->fn_file[filled] = cg->fn_obj[filled] = UINT32_MAX;
        cg->node_fn[i] = fn;
        if (cg->fn_file[fn] == UINT32_MAX)
            cg->fn_file[fn] = fl;
        if (cg->fn_obj[fn] == UINT32_MAX && *obj)
            cg->fn_obj[fn] = ob;
    }
    cg->n_ids = hs_strtab_count(in->t);
    rc = 0;
done:
    if (in)
        hs_strtab_delete(in->t);
    free(in);
    return rc;
}

/* ord, ord_ix and fn_start: the nodes by a counting sort on their
 * function (by id within one), then each function's by position
 * (hs_cg_node_cmp). 0, or -1 (out of memory). */
static int hs_cg_order(hs_cg *cg)
{
    const hs_view *v = cg->v;
    size_t nn = v->n_nodes, n_ids = cg->n_ids;
    cg->ord = malloc((nn ? nn : 1) * sizeof *cg->ord);
    cg->ord_ix = malloc((nn ? nn : 1) * sizeof *cg->ord_ix);
    cg->fn_start = calloc(n_ids + 1, sizeof *cg->fn_start);
    if (!cg->ord || !cg->ord_ix || !cg->fn_start)
        return -1;
    for (size_t i = 0; i < nn; i++)
        cg->fn_start[cg->node_fn[i] + 1]++;
    for (size_t f = 0; f < n_ids; f++)
        cg->fn_start[f + 1] += cg->fn_start[f];
    for (size_t i = 0; i < nn; i++) /* fn_start[f] moves to the end of f */
        cg->ord[cg->fn_start[cg->node_fn[i]]++] = (uint32_t)i;
    memmove(cg->fn_start + 1, cg->fn_start, n_ids * sizeof *cg->fn_start);
    cg->fn_start[0] = 0;
    for (size_t f = 0; f < n_ids; f++) {
        uint32_t *a = cg->ord + cg->fn_start[f];
        size_t n = cg->fn_start[f + 1] - cg->fn_start[f];
        if (n > 16) {
            qsort_r(a, n, sizeof *a, hs_cg_node_cmp, (void *)v->nodes);
            continue;
        }
        for (size_t i = 1; i < n; i++) {
            uint32_t t = a[i];
            size_t j = i;
            for (; j > 0 && hs_cg_node_cmp(&a[j - 1], &t, (void *)v->nodes) > 0; j--)
                a[j] = a[j - 1];
            a[j] = t;
        }
    }
    for (size_t q = 0; q < nn; q++)
        cg->ord_ix[cg->ord[q]] = (uint32_t)q;
    return 0;
}

static inline uint32_t hs_cg_fl(const hs_cg *cg, uint32_t f)
{
    return cg->fn_file[f] == UINT32_MAX ? cg->empty : cg->fn_file[f];
}

/* Where each name is given first, in the file's order: a header of f
 * before the calls of f's first position (key fn_start[f] << 32), a call
 * of f at position q at (q << 32 | f + 1), a position's calls by callee.
 * A function's first key is the earlier of its header and its first call;
 * a file's or object's, the earliest of its functions'. */
static uint64_t hs_cg_first_key(const hs_cg *cg, uint32_t f)
{
    uint64_t h = cg->named[f] & HS_CG_HEAD ? (uint64_t)cg->fn_start[f] << 32 : UINT64_MAX;
    uint64_t c = cg->first_q[f] != UINT32_MAX ? ((uint64_t)cg->first_q[f] << 32 | (f + 1)) : UINT64_MAX;
    return h < c ? h : c;
}

static int hs_cg_name_refs(hs_cg *cg)
{
    size_t n_ids = cg->n_ids;
    uint32_t *best = malloc((n_ids ? n_ids : 1) * sizeof *best);
    if (!best)
        return -1;
    for (uint32_t f = 0; f < n_ids; f++)
        for (uint32_t q = cg->fn_start[f]; q < cg->fn_start[f + 1]; q++)
            if (cg->has_self[cg->ord[q]]) {
                cg->named[f] |= HS_CG_HEAD;
                break;
            }
    for (int kind = 0; kind < 3; kind++) { /* fn, fl, ob */
        memset(best, 0xff, (n_ids ? n_ids : 1) * sizeof *best);
        for (uint32_t f = 0; f < n_ids; f++) {
            uint64_t k = hs_cg_first_key(cg, f);
            if (k == UINT64_MAX)
                continue;
            uint32_t x = kind == 0 ? f : kind == 1 ? hs_cg_fl(cg, f) : cg->fn_obj[f];
            if (x != UINT32_MAX && (best[x] == UINT32_MAX || k < hs_cg_first_key(cg, best[x])))
                best[x] = f;
        }
        static const uint8_t at_head[3] = {HS_CG_H_FN, HS_CG_H_FL, HS_CG_H_OB};
        static const uint8_t at_call[3] = {HS_CG_C_FN, HS_CG_C_FL, HS_CG_C_OB};
        for (uint32_t x = 0; x < n_ids; x++) {
            uint32_t f = best[x];
            if (f == UINT32_MAX)
                continue;
            bool head = cg->named[f] & HS_CG_HEAD && hs_cg_first_key(cg, f) == (uint64_t)cg->fn_start[f] << 32;
            cg->named[f] |= head ? at_head[kind] : at_call[kind];
        }
    }
    free(best);
    return 0;
}

/* A position: "LINE", or "0xADDR LINE" with positions: instr line. */
static void hs_cg_pos(hs_cg_buf *o, hs_cg_addr *a, const hs_node *n)
{
    if (a) {
        char hex[24];
        int k = snprintf(hex, sizeof hex, "0x%" PRIx64 " ", hs_cg_file_addr(a, n->address));
        hs_cg_put(o, hex, (size_t)k);
    }
    hs_cg_putint(o, n->line > 0 ? n->line : 0);
}

/* Text written many times, formatted once into text (on the second thread
 * while the first counts the calls): every position, and the lines naming
 * each function before a calls= line once its names are out. 0, or -1
 * (out of memory). */
static int hs_cg_texts(hs_cg *cg)
{
    const hs_view *v = cg->v;
    size_t n_ids = cg->n_ids ? cg->n_ids : 1;
    cg->pos_at = malloc((v->n_nodes + 1) * sizeof *cg->pos_at);
    cg->head_at = malloc(n_ids * sizeof *cg->head_at);
    cg->head_len = malloc(n_ids);
    cg->head_ob = malloc(n_ids);
    cg->head_fl = malloc(n_ids);
    if (!cg->pos_at || !cg->head_at || !cg->head_len || !cg->head_ob || !cg->head_fl)
        return -1;
    for (size_t i = 0; i < v->n_nodes; i++) {
        if (hs_bytes_reserve(&cg->text, HS_CG_REC) != 0 || cg->text.n > UINT32_MAX - HS_CG_REC)
            return -1;
        cg->pos_at[i] = (uint32_t)cg->text.n;
        hs_cg_pos(&cg->text, cg->ia, &v->nodes[i]);
    }
    cg->pos_at[v->n_nodes] = (uint32_t)cg->text.n;
    for (uint32_t f = 0; f < cg->n_ids; f++) {
        if (cg->fn_start[f] == cg->fn_start[f + 1])
            continue; /* not a function */
        if (cg->text.n > UINT32_MAX - HS_CG_REC)
            return -1;
        size_t at = cg->text.n;
        if (cg->fn_obj[f] != UINT32_MAX && hs_cg_ref(&cg->text, "cob", cg->fn_obj[f], NULL) != 0)
            return -1;
        size_t fl_at = cg->text.n;
        if (hs_cg_ref(&cg->text, "cfl", hs_cg_fl(cg, f), NULL) != 0)
            return -1;
        size_t fn_at = cg->text.n;
        if (hs_cg_ref(&cg->text, "cfn", f, NULL) != 0)
            return -1;
        cg->head_at[f] = (uint32_t)at;
        cg->head_len[f] = (uint8_t)(cg->text.n - at);
        cg->head_ob[f] = (uint8_t)(fl_at - at);
        cg->head_fl[f] = (uint8_t)(fn_at - fl_at);
    }
    if (hs_bytes_reserve(&cg->text, HS_CG_FIX_HEAD) != 0) /* the copies read that far */
        return -1;
    memset(cg->text.s + cg->text.n, 0, HS_CG_FIX_HEAD);
    return 0;
}

static inline void hs_cg_wpos(hs_cg_buf *o, const hs_cg *cg, uint32_t node)
{
    hs_cg_putfix(o, cg->text.s + cg->pos_at[node], cg->pos_at[node + 1] - cg->pos_at[node], HS_CG_FIX_POS);
}

/* ob=, fl=, fn= (or cob=, cfl=, cfn=) of function f, with the names the
 * flags in named say; but an object or file in same (HS_CG_SAME_*: the
 * caller's, which readers take when a call omits it) that names nothing.
 * 0, or -1. */
static int hs_cg_refs(hs_cg_buf *o, const hs_cg *cg, uint32_t f, const char *const keys[3], unsigned ob,
                      unsigned fl, unsigned fn, unsigned same)
{
    uint8_t nm = cg->named[f];
    uint32_t lf = hs_cg_fl(cg, f);
    if (cg->fn_obj[f] != UINT32_MAX && (!(same & HS_CG_SAME_OB) || nm & ob) &&
        hs_cg_ref(o, keys[0], cg->fn_obj[f], nm & ob ? hs_cg_str(cg, cg->fn_obj[f]) : NULL) != 0)
        return -1;
    if ((!(same & HS_CG_SAME_FL) || nm & fl) && hs_cg_ref(o, keys[1], lf, nm & fl ? hs_cg_str(cg, lf) : NULL) != 0)
        return -1;
    return hs_cg_ref(o, keys[2], f, nm & fn ? hs_cg_str(cg, f) : NULL);
}

/* Function f's header and cost lines, if it has any. 0, or -1. */
static int hs_cg_write_fn(hs_cg_worker *w, uint32_t f)
{
    static const char *const keys[3] = {"ob", "fl", "fn"};
    const hs_cg *cg = w->cg;
    hs_cg_buf *o = w->o;
    if (!(cg->named[f] & HS_CG_HEAD))
        return 0;
    if (hs_bytes_reserve(o, 1) != 0)
        return -1;
    hs_cg_putc(o, '\n');
    if (hs_cg_refs(o, cg, f, keys, HS_CG_H_OB, HS_CG_H_FL, HS_CG_H_FN, 0) != 0)
        return -1;
    for (uint32_t q = cg->fn_start[f]; q < cg->fn_start[f + 1]; q++) {
        uint32_t node = cg->ord[q];
        if (!cg->has_self[node])
            continue;
        if (hs_bytes_reserve(o, HS_CG_REC) != 0)
            return -1;
        hs_cg_wpos(o, cg, node);
        hs_cg_putc(o, ' ');
        hs_cg_putint(o, cg->self[node]);
        hs_cg_putc(o, '\n');
    }
    return 0;
}

/* The calls made at the node at q (ents[b..e), in stack order): one record
 * per callee, its cost counted once per sample (recursion), then written
 * by callee. 0, or -1 (out of memory). */
static int hs_cg_write_calls(hs_cg_worker *w, uint32_t q, size_t b, size_t e)
{
    static const char *const keys[3] = {"cob", "cfl", "cfn"};
    const hs_cg *cg = w->cg;
    hs_cg_buf *o = w->o;
    uint32_t node = cg->ord[q];
    size_t nc = 0;
    for (size_t j = b; j < e; j++) {
        const hs_cg_ent *en = &cg->ents[j];
        uint32_t to = en->to, s = en->s, cf = cg->node_fn[to];
        uint32_t ci = w->fn_call[cf];
        if (ci == UINT32_MAX) {
            if (nc == w->cap_calls) {
                size_t ncap = w->cap_calls ? 2 * w->cap_calls : 64;
                hs_cg_call *c = realloc(w->calls, ncap * sizeof *c);
                if (c)
                    w->calls = c;
                uint64_t *k = c ? realloc(w->keys, ncap * sizeof *k) : NULL;
                if (!k) {
                    for (size_t i = 0; i < nc; i++)
                        w->fn_call[w->calls[i].callee] = UINT32_MAX;
                    return -1;
                }
                w->keys = k;
                w->cap_calls = ncap;
            }
            ci = (uint32_t)nc++;
            w->fn_call[cf] = ci;
            w->calls[ci] = (hs_cg_call){cf, to, 0, 0, 0};
            w->keys[ci] = (uint64_t)cf << 32 | ci;
        }
        hs_cg_call *c = &w->calls[ci];
        if (c->last == s + 1)
            continue; /* recursion: once per sample */
        c->last = s + 1;
        c->cost = hs_sat_add(c->cost, en->value);
        c->count += cg->n_samples[s];
    }
    for (size_t k = 0; k < nc; k++)
        w->fn_call[w->calls[k].callee] = UINT32_MAX;
    hs_cg_sort_keys(w->keys, nc);
    uint32_t caller = cg->node_fn[node], caller_ob = cg->fn_obj[caller], caller_fl = hs_cg_fl(cg, caller);
    for (size_t k = 0; k < nc; k++) {
        const hs_cg_call *c = &w->calls[(uint32_t)w->keys[k]];
        uint32_t f = c->callee;
        /* cob= and cfl= only where they differ from the caller's ob= and
         * fl= (KCachegrind and callgrind_annotate take the caller's then):
         * most calls stay in their object, many in their file */
        unsigned same = (cg->fn_obj[f] == caller_ob && caller_ob != UINT32_MAX ? HS_CG_SAME_OB : 0) |
                        (hs_cg_fl(cg, f) == caller_fl ? HS_CG_SAME_FL : 0);
        if (q == cg->first_q[f] && cg->named[f] & (HS_CG_C_OB | HS_CG_C_FL | HS_CG_C_FN)) {
            if (hs_cg_refs(o, cg, f, keys, HS_CG_C_OB, HS_CG_C_FL, HS_CG_C_FN, same) != 0)
                return -1;
            if (hs_bytes_reserve(o, HS_CG_REC) != 0)
                return -1;
        } else {
            if (hs_bytes_reserve(o, HS_CG_REC) != 0)
                return -1;
            /* (a tail of "cob cfl cfn": one copy, but for a call into
             * the caller's file in another object) */
            const char *h = cg->text.s + cg->head_at[f];
            size_t skip = 0, ob_len = cg->head_ob[f];
            if (same == HS_CG_SAME_FL) {
                hs_cg_putfix(o, h, ob_len, HS_CG_FIX_HEAD);
                skip = ob_len + cg->head_fl[f];
            } else if (same) {
                skip = ob_len + (same & HS_CG_SAME_FL ? cg->head_fl[f] : 0);
            }
            hs_cg_putfix(o, h + skip, cg->head_len[f] - skip, HS_CG_FIX_HEAD);
        }
        hs_cg_put(o, "calls=", 6);
        hs_cg_putint(o, c->count);
        hs_cg_putc(o, ' ');
        hs_cg_wpos(o, cg, c->callee_node);
        hs_cg_putc(o, '\n');
        hs_cg_wpos(o, cg, node);
        hs_cg_putc(o, ' ');
        hs_cg_putint(o, c->cost);
        hs_cg_putc(o, '\n');
    }
    return 0;
}

/* Calls gathered per pass by default: at most this many, or the most one
 * position makes (ents is 16 bytes each: 7 MiB, at the export's peak of
 * memory; 512 Ki of them took bench's large profile to 2.99x its decoded
 * size in RSS, and the goal is 3x). */
#define HS_CG_PASS_CALLS ((size_t)7 << 16)

static void hs_cg_sync(hs_cg *cg)
{
    if (cg->nw > 1)
        (void)pthread_barrier_wait(&cg->bar);
}

/* Pass p's cursors: at[h][q] (the calls at q in half h of the stacks)
 * become where half h's go in ents; and its blocks. */
static void hs_cg_pass_start(hs_cg *cg, size_t p)
{
    uint32_t lo = cg->passes[p], hi = cg->passes[p + 1], sum = 0;
    size_t nb = cg->pass_blk[p], weight = 0;
    for (uint32_t q = lo; q < hi; q++) {
        uint32_t c0 = cg->at[0][q], c1 = cg->at[1][q];
        if (q == lo || weight >= HS_CG_BLOCK) {
            cg->blocks[nb++] = q;
            weight = 0;
        }
        weight += 1 + c0 + c1;
        cg->at[0][q] = sum;
        cg->at[1][q] = sum + c0;
        sum += c0 + c1;
    }
    cg->pass_blk[p + 1] = nb;
}

/* Half h of the stacks: the calls made in [lo, hi) into ents. */
static void hs_cg_gather(hs_cg *cg, unsigned h, uint32_t lo, uint32_t hi)
{
    const hs_stack *stacks = cg->v->stacks;
    const uint32_t *ord_ix = cg->ord_ix;
    uint32_t *cur = cg->at[h], span = hi - lo;
    hs_cg_ent *ents = cg->ents;
    size_t end = h ? cg->v->n_stacks : cg->split;
    for (size_t i = h ? cg->split : 0; i < end; i++) {
        const hs_stack *st = &stacks[i];
        if (st->value == 0 || st->n == 0)
            continue;
        const uint32_t *nd = st->nodes, *last = nd + st->n - 1;
        for (; nd < last; nd++) {
            uint32_t q = ord_ix[*nd];
            if (q - lo < span)
                ents[cur[q]++] = (hs_cg_ent){nd[1], (uint32_t)i, st->value};
        }
    }
}

/* Block g (of pass p) into w's slot. 0, or -1 (out of memory). */
static int hs_cg_block(hs_cg_worker *w, size_t p, size_t g)
{
    hs_cg *cg = w->cg;
    uint32_t lo = cg->passes[p], b = cg->blocks[g];
    uint32_t e = g + 1 < cg->pass_blk[p + 1] ? cg->blocks[g + 1] : cg->passes[p + 1];
    const uint32_t *end = cg->at[1]; /* now the end of q's calls */
    for (uint32_t q = b; q < e; q++) {
        uint32_t f = cg->node_fn[cg->ord[q]], from = q == lo ? 0 : end[q - 1];
        if (q == cg->fn_start[f] && hs_cg_write_fn(w, f) != 0)
            return -1;
        if (from < end[q] && hs_cg_write_calls(w, q, from, end[q]) != 0)
            return -1;
    }
    return 0;
}

/* Under mu: the ready blocks from turn on written, unless another thread
 * is at it (it writes those that become ready meanwhile). */
static void hs_cg_write_ready(hs_cg *cg)
{
    if (cg->writing)
        return;
    cg->writing = true;
    for (;;) {
        hs_cg_slot *sl = NULL;
        for (unsigned i = 0; i < HS_CG_SLOTS; i++)
            if (cg->slots[i].state == 2 && cg->slots[i].blk == cg->turn)
                sl = &cg->slots[i];
        if (!sl)
            break;
        bool skip = cg->failed || sl->failed;
        cg->failed = skip;
        pthread_mutex_unlock(&cg->mu);
        if (!skip && sl->b.n)
            (void)fwrite(sl->b.s, 1, sl->b.n, cg->out); /* errors: ferror(out) */
        pthread_mutex_lock(&cg->mu);
        sl->state = 0;
        cg->turn++;
        pthread_cond_broadcast(&cg->cv); /* a slot is free */
    }
    cg->writing = false;
}

/* Thread w's share of the file: in each pass, its halves of the stacks
 * gathered into ents, then blocks (the next not taken) formatted into a
 * free slot, and written when their turn comes by whichever thread is
 * there. Thread 0 lays out the next pass meanwhile. */
static void *hs_cg_work(void *arg)
{
    hs_cg_worker *w = arg;
    hs_cg *cg = w->cg;
    hs_cg_sync(cg); /* the tables are ready, or one thread failed */
    pthread_mutex_lock(&cg->mu);
    bool failed = cg->failed;
    pthread_mutex_unlock(&cg->mu);
    for (size_t p = 0; p < cg->n_passes && !failed; p++) {
        uint32_t lo = cg->passes[p], hi = cg->passes[p + 1];
        for (unsigned h = w->id; h < 2; h += cg->nw)
            hs_cg_gather(cg, h, lo, hi);
        hs_cg_sync(cg); /* ents are complete */
        pthread_mutex_lock(&cg->mu);
        while (cg->claim < cg->pass_blk[p + 1]) {
            hs_cg_slot *sl = NULL;
            for (unsigned i = 0; i < HS_CG_SLOTS && !sl; i++)
                if (cg->slots[i].state == 0)
                    sl = &cg->slots[i];
            if (!sl) { /* the block to be written is being formatted */
                pthread_cond_wait(&cg->cv, &cg->mu);
                continue;
            }
            size_t g = cg->claim++;
            bool failed = cg->failed;
            sl->state = 1;
            sl->blk = g;
            pthread_mutex_unlock(&cg->mu);
            sl->b.n = 0;
            w->o = &sl->b;
            failed = failed || hs_cg_block(w, p, g) != 0;
            pthread_mutex_lock(&cg->mu);
            sl->failed = failed;
            sl->state = 2;
            hs_cg_write_ready(cg);
        }
        pthread_mutex_unlock(&cg->mu);
        if (w->id == 0 && p + 1 < cg->n_passes)
            hs_cg_pass_start(cg, p + 1); /* its positions are not read in this pass */
        hs_cg_sync(cg); /* ents are read: the next pass may gather */
    }
    return NULL;
}

/* Half h of the stacks: self costs and cost lines (into self, has_self),
 * the calls made at each position (at[h]), the first position calling
 * each function (first_q). Returns the half's total. */
static int64_t hs_cg_count_half(hs_cg *cg, unsigned h, int64_t *self, uint8_t *has_self, uint32_t *first_q)
{
    const hs_view *v = cg->v;
    uint32_t *at = cg->at[h];
    int64_t total = 0;
    for (size_t i = h ? cg->split : 0; i < (h ? v->n_stacks : cg->split); i++) {
        const hs_stack *st = &v->stacks[i];
        int64_t val = st->value;
        if (val == 0 || st->n == 0)
            continue;
        total = hs_sat_add(total, val);
        const uint32_t *nd = st->nodes;
        uint32_t leaf = nd[st->n - 1];
        self[leaf] = hs_sat_add(self[leaf], val);
        has_self[leaf] = 1;
        for (uint32_t k = 0; k + 1 < st->n; k++) {
            uint32_t q = cg->ord_ix[nd[k]], f = cg->node_fn[nd[k + 1]];
            has_self[nd[k]] = 1; /* a cost line (0 when it only calls) */
            at[q]++;
            if (q < first_q[f])
                first_q[f] = q;
        }
    }
    return total;
}

/* The second thread: the second half of the stacks counted, the texts,
 * then its share of the file. */
static void *hs_cg_thread(void *arg)
{
    hs_cg_worker *w = arg;
    hs_cg *cg = w->cg;
    cg->total1 = hs_cg_count_half(cg, 1, cg->self1, cg->has_self1, cg->first_q1);
    hs_cg_sync(cg); /* counted */
    if (hs_cg_texts(w->cg) != 0) {
        pthread_mutex_lock(&w->cg->mu);
        w->cg->failed = true;
        pthread_mutex_unlock(&w->cg->mu);
    }
    return hs_cg_work(w);
}

/* The tables hs_cg_count fills, and the second thread's copies of those
 * it shares (when there is one). 0, or -1 (out of memory). */
static int hs_cg_count_alloc(hs_cg *cg)
{
    size_t nn = cg->v->n_nodes, n_ids = cg->n_ids ? cg->n_ids : 1;
    cg->self = calloc(nn + 1, sizeof *cg->self);
    cg->has_self = calloc(nn + 1, 1);
    cg->at[0] = calloc(nn + 1, sizeof *cg->at[0]);
    cg->at[1] = calloc(nn + 1, sizeof *cg->at[1]);
    cg->first_q = malloc(n_ids * sizeof *cg->first_q);
    cg->named = calloc(n_ids, 1);
    if (!cg->self || !cg->has_self || !cg->at[0] || !cg->at[1] || !cg->first_q || !cg->named)
        return -1;
    memset(cg->first_q, 0xff, n_ids * sizeof *cg->first_q);
    if (cg->nw < 2)
        return 0;
    cg->self1 = calloc(nn + 1, sizeof *cg->self1);
    cg->has_self1 = calloc(nn + 1, 1);
    cg->first_q1 = malloc(n_ids * sizeof *cg->first_q1);
    if (!cg->self1 || !cg->has_self1 || !cg->first_q1)
        return -1;
    memset(cg->first_q1, 0xff, n_ids * sizeof *cg->first_q1);
    return 0;
}

/* Cost lines, the calls made at each position in each half of the stacks
 * (at[h]), the first position calling each function (the second half
 * counted by the second thread meanwhile, when there is one); then which
 * references give the names, the passes and the first one's layout. 0, or
 * -1 (out of memory). */
static int hs_cg_count(hs_cg *cg, size_t pass_calls, int64_t *total)
{
    const hs_view *v = cg->v;
    size_t nn = v->n_nodes, n_ids = cg->n_ids;
    *total = hs_cg_count_half(cg, 0, cg->self, cg->has_self, cg->first_q);
    if (cg->nw < 2) {
        *total = hs_sat_add(*total, hs_cg_count_half(cg, 1, cg->self, cg->has_self, cg->first_q));
    } else {
        hs_cg_sync(cg); /* the second half is counted */
        *total = hs_sat_add(*total, cg->total1);
        for (size_t i = 0; i < nn; i++) {
            cg->self[i] = hs_sat_add(cg->self[i], cg->self1[i]);
            cg->has_self[i] |= cg->has_self1[i];
        }
        for (size_t f = 0; f < n_ids; f++)
            if (cg->first_q1[f] < cg->first_q[f])
                cg->first_q[f] = cg->first_q1[f];
        free(cg->self1);
        free(cg->has_self1);
        free(cg->first_q1);
        cg->self1 = NULL, cg->has_self1 = NULL, cg->first_q1 = NULL;
    }
    size_t pass = pass_calls ? pass_calls : HS_CG_PASS_CALLS, n_calls = 0, most = 1;
    for (size_t q = 0; q < nn; q++) {
        size_t c = (size_t)cg->at[0][q] + cg->at[1][q];
        n_calls += c;
        if (c > most)
            most = c;
    }
    pass = pass < most ? most : pass > n_calls ? n_calls : pass;
    cg->passes = malloc((nn + 1) * sizeof *cg->passes);
    cg->blocks = malloc((nn + 1) * sizeof *cg->blocks);
    cg->pass_blk = malloc((nn + 1) * sizeof *cg->pass_blk);
    cg->ents = malloc((pass ? pass : 1) * sizeof *cg->ents);
    cg->n_samples = malloc((v->n_stacks + 1) * sizeof *cg->n_samples);
    if (!cg->passes || !cg->blocks || !cg->pass_blk || !cg->ents || !cg->n_samples ||
        hs_cg_name_refs(cg) != 0)
        return -1;
    for (size_t i = 0; i < v->n_stacks; i++)
        cg->n_samples[i] = v->stacks[i].n_samples;
    for (uint32_t lo = 0, hi; lo < nn; lo = hi) {
        size_t sum = 0;
        for (hi = lo; hi < nn && (hi == lo || sum + cg->at[0][hi] + cg->at[1][hi] <= pass); hi++)
            sum += cg->at[0][hi] + cg->at[1][hi];
        cg->passes[cg->n_passes++] = lo;
    }
    cg->passes[cg->n_passes] = (uint32_t)nn;
    cg->pass_blk[0] = 0;
    if (cg->n_passes)
        hs_cg_pass_start(cg, 0);
    return 0;
}

int hs_export_callgrind(const hs_view *v, FILE *out, char *err, size_t errlen)
{
    return hs_export_callgrind_ex(v, out, 0, 0, err, errlen);
}

int hs_export_callgrind_ex(const hs_view *v, FILE *out, size_t pass_calls, unsigned threads,
                           char *err, size_t errlen)
{
    int rc = -1;
    hs_cg cg = {.v = v, .out = out};
    bool instr = v->granularity == HS_GRAN_ADDRESSES;
    bool sync_init = false;
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
    size_t n_ids = cg.n_ids;
    if (hs_cg_order(&cg) != 0)
        goto oom;

    /* the stacks cut in two halves of their frames, one per thread */
    size_t frames = 0, half = 0;
    for (size_t i = 0; i < v->n_stacks; i++)
        frames += v->stacks[i].n;
    for (cg.split = 0; cg.split < v->n_stacks && half < frames / 2; cg.split++)
        half += v->stacks[cg.split].n;
    /* two threads unless told, when there is more than a few blocks */
    cg.nw = threads == 1 || (threads == 0 && frames < 4 * HS_CG_BLOCK) ? 1 : 2;
    for (unsigned i = 0; i < cg.nw; i++) {
        cg.w[i].cg = &cg;
        cg.w[i].id = i;
        cg.w[i].fn_call = malloc((n_ids ? n_ids : 1) * sizeof *cg.w[i].fn_call);
        if (!cg.w[i].fn_call)
            goto oom;
        memset(cg.w[i].fn_call, 0xff, (n_ids ? n_ids : 1) * sizeof *cg.w[i].fn_call);
    }
    if (pthread_mutex_init(&cg.mu, NULL) != 0)
        goto oom;
    if (pthread_cond_init(&cg.cv, NULL) != 0) {
        pthread_mutex_destroy(&cg.mu);
        goto oom;
    }
    sync_init = true;
    if (cg.nw > 1 && pthread_barrier_init(&cg.bar, NULL, 2) != 0)
        cg.nw = 1;
    if (hs_cg_count_alloc(&cg) != 0) {
        if (cg.nw > 1)
            pthread_barrier_destroy(&cg.bar);
        goto oom;
    }
    if (cg.nw > 1 && pthread_create(&cg.w[1].tid, NULL, hs_cg_thread, &cg.w[1]) != 0) {
        pthread_barrier_destroy(&cg.bar);
        cg.nw = 1; /* this thread does everything */
    }
    /* from here on a failure is told to the other thread, at the barrier */
    int64_t total = 0;
    bool failed = hs_cg_count(&cg, pass_calls, &total) != 0 || (cg.nw == 1 && hs_cg_texts(&cg) != 0);
    if (!failed) {
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
    }
    pthread_mutex_lock(&cg.mu);
    cg.failed = cg.failed || failed;
    pthread_mutex_unlock(&cg.mu);
    hs_cg_work(&cg.w[0]);
    if (cg.nw > 1) {
        pthread_join(cg.w[1].tid, NULL);
        pthread_barrier_destroy(&cg.bar);
    }
    if (cg.failed || cg.turn != (cg.n_passes ? cg.pass_blk[cg.n_passes] : 0))
        goto oom;
    fprintf(out, "\ntotals: %" PRId64 "\n", total);
    rc = hs_out_finish(out, err, errlen);
    goto done;
oom:
    snprintf(err, errlen, "out of memory writing callgrind");
done:
    if (sync_init) {
        pthread_cond_destroy(&cg.cv);
        pthread_mutex_destroy(&cg.mu);
    }
    free(addrs.delta);
    free(addrs.known);
    hs_cg_free(&cg);
    return rc;
}
