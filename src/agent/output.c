/* output.c — build an hs_profile from a stack table (CPU or heap): one
 * location per distinct address, one mapping per loaded module, one sample
 * per (thread, stack) with labels tid and thread_name; symbolize it with the
 * loaded modules' files (and the vDSO's image) with the symbolizer of
 * symlib.h; write it as gzipped pprof. Runs at exit or on demand, never in
 * a signal handler, with the calling thread marked as inside the agent so
 * its own allocations aren't profiled. */
#define _GNU_SOURCE
#include "agent/output.h"
#include "agent/upload.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/core.h"
#include "agent/heap.h"
#include "agent/labels.h"
#include "agent/modules.h"
#include "agent/threads.h"
#include "profile/profile.h"
#include "agent/symlib.h"

/* address -> location id, open addressing */
typedef struct {
    uint64_t *keys, *ids;
    size_t cap;
} addr_map;

static uint64_t *addr_slot(addr_map *m, uint64_t addr)
{
    size_t i = (size_t)(addr * 0x9e3779b97f4a7c15ull) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != addr)
        i = (i + 1) & (m->cap - 1);
    m->keys[i] = addr;
    return &m->ids[i];
}

typedef struct {
    hs_profile *p;
    hs_module *mods;
    size_t nmods;
    uint64_t *mapping_ids; /* per module */
    addr_map locs;
} builder;

static uint64_t location_for(builder *b, uint64_t addr)
{
    uint64_t *id = addr_slot(&b->locs, addr ? addr : 1);
    if (!*id) {
        const hs_module *m = hs_modules_find(b->mods, b->nmods, addr);
        uint64_t mid = m ? b->mapping_ids[m - b->mods] : 0;
        *id = hs_profile_add_location(b->p, mid, addr, NULL, 0);
    }
    return *id;
}

/* add_modules: with `defer` the symbolizer is not told (record resolves
 * symbols outside), without `known` it already knows these modules. */
static int add_modules(builder *b, const hs_symlib *lib, hs_symbolizer *sym, int defer, int known)
{
    b->mapping_ids = calloc(b->nmods ? b->nmods : 1, sizeof *b->mapping_ids);
    if (!b->mapping_ids)
        return -1;
    for (size_t i = 0; i < b->nmods; i++) {
        hs_module *m = &b->mods[i];
        b->mapping_ids[i] = hs_profile_add_mapping(b->p, m->start, m->end, m->file_offset, m->path,
                                                   m->build_id);
        if (defer || known)
            continue;
        if (m->image)
            lib->add_image(sym, m->path, m->image, m->image_size, m->bias, m->start, m->end);
        else
            lib->add_module(sym, m->path, m->bias, m->start, m->end);
    }
    return 0;
}

/* Continuous mode symbolizes every window in the process: the profiles of
 * one window share one symbolizer, released (and the memory it used given
 * back to the system) once the window is encoded, so between windows the
 * host carries none of its DWARF state. See docs/agent.md, "Continuous
 * mode", for what keeping it would cost instead. */
static hs_symbolizer *g_sym;
static uint64_t g_sym_modules; /* signature of the modules it knows */

static uint64_t modules_signature(const hs_module *m, size_t n)
{
    uint64_t h = 1469598103934665603ULL ^ n;
    for (size_t i = 0; i < n; i++) {
        uint64_t v[3] = {m[i].start, m[i].end, m[i].bias};
        for (int k = 0; k < 3; k++)
            h = (h ^ v[k]) * 1099511628211ULL;
        for (const char *c = m[i].path; *c; c++)
            h = (h ^ (uint8_t)*c) * 1099511628211ULL;
    }
    return h;
}

/* The window's symbolizer for these modules; *known: it has them already. */
static hs_symbolizer *shared_symbolizer(const hs_symlib *lib, const hs_module *m, size_t n, int *known)
{
    uint64_t sig = modules_signature(m, n);
    *known = g_sym && g_sym_modules == sig;
    if (!*known) {
        if (g_sym)
            lib->destroy(g_sym);
        g_sym = lib->create();
        g_sym_modules = sig;
    }
    return g_sym;
}

void hs_output_release(void)
{
    hs_self.in_agent++;
    if (g_sym)
        hs_symlib_get()->destroy(g_sym);
    g_sym = NULL;
    malloc_trim(0); /* the freed DWARF indexes, back to the system */
    hs_self.in_agent--;
}

/* Thread names, looked up once per tid. */
static int64_t thread_name_str(hs_profile *p, int32_t tid, int32_t *cache_tid, int64_t *cache_str)
{
    if (*cache_tid == tid)
        return *cache_str;
    char name[16];
    hs_threads_name(tid, name);
    *cache_tid = tid;
    *cache_str = hs_profile_str(p, name);
    return *cache_str;
}

/* The values of one entry for the profile: `cur` is its counters now, `base`
 * their value at the last dump. Returns how many values (0: none). */
typedef int (*values_fn)(const hs_stack_entry *e, const int64_t cur[4], const int64_t base[4],
                         void *arg, int64_t out[4]);

/* One sample per entry with nonzero values; labels tid, thread_name and the
 * thread's own. With `advance`, the entries' bases move to the values used,
 * so the next dump covers only what comes after this one. */
static int add_samples(builder *b, hs_stacktab *t, values_fn fn, void *arg, int advance)
{
    int64_t k_tid = hs_profile_str(b->p, "tid");
    int64_t k_name = hs_profile_str(b->p, "thread_name");
    int32_t ctid = 0;
    int64_t cstr = 0;
    uint64_t ids[HS_MAX_DEPTH_LIMIT];
    hs_label labels[2 + HS_LABELS_MAX];
    uint32_t n = atomic_load(&t->n_used);
    for (uint32_t i = 0; i < n; i++) {
        const hs_stack_entry *e = hs_stacktab_nth(t, i);
        if (!e)
            continue;
        int64_t *base = t->base + (size_t)(e - t->entries) * HS_STACKTAB_VALUES;
        int64_t cur[4], values[4] = {0, 0, 0, 0};
        for (int v = 0; v < 4; v++)
            cur[v] = atomic_load_explicit(&e->values[v], memory_order_relaxed);
        int nv = fn(e, cur, base, arg, values);
        if (advance)
            memcpy(base, cur, sizeof cur);
        int any = 0;
        for (int v = 0; v < nv; v++)
            any |= values[v] != 0;
        if (!any)
            continue;
        const uint64_t *pcs = hs_stacktab_frames(t, e);
        uint32_t depth = e->depth < HS_MAX_DEPTH_LIMIT ? e->depth : HS_MAX_DEPTH_LIMIT;
        for (uint32_t d = 0; d < depth; d++)
            if (!(ids[d] = location_for(b, pcs[d])))
                return -1;
        size_t nl = 0;
        labels[nl++] = (hs_label){.key = k_tid, .num = e->tid};
        labels[nl++] = (hs_label){.key = k_name, .str = thread_name_str(b->p, e->tid, &ctid, &cstr)};
        const hs_label_pair *pairs;
        size_t np = hs_labels_get(e->labels, &pairs);
        for (size_t k = 0; k < np; k++)
            labels[nl++] = (hs_label){.key = hs_profile_str(b->p, pairs[k].key),
                                      .str = hs_profile_str(b->p, pairs[k].value)};
        if (hs_profile_add_sample(b->p, ids, depth, values, labels, nl) != 0)
            return -1;
    }
    return 0;
}

typedef struct {
    const char *type, *unit;
} vtype;

/* Build, symbolize and write one profile of table t: to path, or (enc not
 * NULL) encoded into enc. */
static int write_profile(const char *path, hs_encoded *enc, hs_stacktab *t, const vtype *types,
                         int ntypes, const char *default_type, vtype period_type, int64_t period,
                         values_fn fn, void *arg, int advance)
{
    int rc = -1;
    char err[256] = "out of memory";
    builder b = {0};
    hs_self.in_agent++;
    hs_symbolizer *sym = NULL;
    const hs_symlib *lib = NULL; /* (before the first goto out: out reads it) */
    b.p = hs_profile_new();
    /* Distinct addresses are bounded by the frames stored: a table of
     * twice that (a short process has few). */
    b.locs.cap = 64;
    while (b.locs.cap < 2 * (size_t)atomic_load(&t->pool_used) + 16)
        b.locs.cap <<= 1;
    b.locs.keys = calloc(b.locs.cap, sizeof(uint64_t));
    b.locs.ids = calloc(b.locs.cap, sizeof(uint64_t));
    if (!b.p || !b.locs.keys || !b.locs.ids || hs_modules_collect(&b.mods, &b.nmods) != 0)
        goto out;
    /* At exit (or exec) under `hotspur record`, symbols are resolved
     * outside; an upload is symbolized here unless HOTSPUR_SYMBOLIZE=server
     * (then nothing is: the server names the frames from build IDs, see
     * docs/debuginfo.md). Without the symbolizer, addresses only. */
    int defer = ((hs_g.exiting || hs_g.before_exec) && hs_g.cfg.defer_symbols && !enc) ||
                hs_g.cfg.symbolize_server,
        known = 0;
    lib = defer ? NULL : hs_symlib_get();
    if (lib && !(sym = enc ? shared_symbolizer(lib, b.mods, b.nmods, &known) : lib->create()))
        goto out;
    if (add_modules(&b, lib, sym, !lib, known) != 0)
        goto out;
    for (int i = 0; i < ntypes; i++)
        hs_profile_add_sample_type(b.p, types[i].type, types[i].unit);
    if (default_type)
        b.p->default_sample_type = hs_profile_str(b.p, default_type);
    hs_profile_set_period(b.p, period_type.type, period_type.unit, period);
    int64_t now = enc && enc->end_ns ? enc->end_ns : hs_g.write_end_ns ? hs_g.write_end_ns : hs_now_ns(CLOCK_REALTIME);
    b.p->time_nanos = hs_g.window_wall_ns;
    b.p->duration_nanos = now - hs_g.window_wall_ns;
    if (add_samples(&b, t, fn, arg, advance) != 0)
        goto out;
    uint64_t dropped = atomic_load(&t->dropped);
    if (dropped) {
        char c[96];
        snprintf(c, sizeof c, "hotspur: %llu stacks dropped (stack table full)", (unsigned long long)dropped);
        hs_profile_add_comment(b.p, c);
    }
    if (hs_g.attached)
        hs_profile_add_comment(b.p, t == hs_heap_table()
                                        ? "hotspur attach: from the attach on; blocks allocated before the "
                                          "attach are not counted (nor their frees)"
                                        : "hotspur attach: from the attach on");
    if (lib && lib->symbolize_profile(sym, b.p) != 0)
        goto out;
    /* zlib in this thread: no threads of ours and no libdeflate in the host */
    if (enc) {
        if (hs_upload_is_otlp() ? hs_upload_otlp_encode(b.p, &enc->data, &enc->len) != 0
                                : hs_profile_encode_zlib(b.p, &enc->data, &enc->len, err, sizeof err) != 0)
            goto out;
        enc->start_ns = b.p->time_nanos;
        enc->duration_ns = b.p->duration_nanos;
        enc->n_samples = b.p->n_samples;
    } else {
        void *buf;
        size_t len;
        if (hs_profile_encode_zlib(b.p, &buf, &len, err, sizeof err) != 0)
            goto out;
        int wrc = hs_profile_write_encoded(buf, len, path, err, sizeof err);
        free(buf);
        if (wrc != 0)
            goto out;
    }
    rc = 0;
out:
    if (rc != 0)
        fprintf(stderr, "hotspur: cannot %s %s: %s\n", enc ? "encode" : "write", enc ? "a profile" : path, err);
    free(b.locs.keys);
    free(b.locs.ids);
    free(b.mapping_ids);
    free(b.mods);
    hs_profile_free(b.p);
    if (!enc && sym)
        lib->destroy(sym);
    hs_self.in_agent--;
    return rc;
}

/* Counters since the last dump, for CPU (values[0] = samples, the period
 * gives the nanoseconds) and for wall and lock (values[0..1] as written). */
static int delta_values(const hs_stack_entry *e, const int64_t cur[4], const int64_t base[4], void *arg,
                        int64_t out[4])
{
    (void)e;
    const int64_t *period = arg;
    out[0] = cur[0] - base[0];
    out[1] = period ? out[0] * *period : cur[1] - base[1];
    return 2;
}

static int cpu_profile(const char *path, hs_encoded *enc, int advance)
{
    static const vtype types[] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
    int64_t period = 1000000000LL / hs_g.cfg.cpu_hz;
    return write_profile(path, enc, &hs_g.cpu, types, 2, NULL, (vtype){"cpu", "nanoseconds"}, period,
                         delta_values, &period, advance);
}

static int wall_profile(const char *path, hs_encoded *enc, int advance)
{
    static const vtype types[] = {{"samples", "count"}, {"wall", "nanoseconds"}};
    int64_t period = 1000000000LL / (hs_g.cfg.wall_hz > 0 ? hs_g.cfg.wall_hz : 1);
    return write_profile(path, enc, &hs_g.wall, types, 2, NULL, (vtype){"wall", "nanoseconds"}, period,
                         delta_values, NULL, advance);
}

static int lock_profile(const char *path, hs_encoded *enc, int advance)
{
    static const vtype types[] = {{"contentions", "count"}, {"delay", "nanoseconds"}};
    return write_profile(path, enc, &hs_g.lock, types, 2, NULL, (vtype){"contentions", "count"}, 1,
                         delta_values, NULL, advance);
}

static int heap_values(const hs_stack_entry *e, const int64_t cur[4], const int64_t base[4], void *arg,
                       int64_t out[4])
{
    return hs_heap_values(e, *(const hs_heap_view *)arg, cur, base, out);
}

static int heap_profile(const char *path, hs_encoded *enc, hs_heap_view view, int advance)
{
    static const vtype all[] = {{"alloc_objects", "count"}, {"alloc_space", "bytes"},
                                {"inuse_objects", "count"}, {"inuse_space", "bytes"}};
    const vtype *types = view == HS_HEAP_ALL ? all : all + 2;
    return write_profile(path, enc, hs_heap_table(), types, view == HS_HEAP_ALL ? 4 : 2, "inuse_space",
                         (vtype){"space", "bytes"}, hs_g.cfg.heap_rate, heap_values, &view,
                         advance && view == HS_HEAP_ALL);
}

int hs_output_write_cpu(const char *path, int advance)
{
    return cpu_profile(path, NULL, advance);
}

int hs_output_write_wall(const char *path, int advance)
{
    return wall_profile(path, NULL, advance);
}

int hs_output_write_lock(const char *path, int advance)
{
    return lock_profile(path, NULL, advance);
}

int hs_output_write_heap(const char *path, hs_heap_view view, int advance)
{
    return heap_profile(path, NULL, view, advance);
}

int hs_output_encode(const char *type, int64_t end_ns, hs_encoded *enc)
{
    memset(enc, 0, sizeof *enc);
    enc->end_ns = end_ns;
    if (strcmp(type, "cpu") == 0)
        return cpu_profile(NULL, enc, 1);
    if (strcmp(type, "wall") == 0)
        return wall_profile(NULL, enc, 1);
    if (strcmp(type, "lock") == 0)
        return lock_profile(NULL, enc, 1);
    return heap_profile(NULL, enc, HS_HEAP_ALL, 1);
}
