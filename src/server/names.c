/* names.c — naming frames at the server from build IDs (see names.h).
 *
 * One symbolizer (symbolize/) serves every build ID: the debug file of
 * each is registered once in a range of its own, [slot << 40, (slot+1) << 40),
 * at its link-time addresses, so a frame's link-time address (found from the
 * mapping's file offset and the file's program headers) is looked up at
 * (slot << 40) + vaddr. Answers are kept per (build ID, vaddr) in memory
 * (emptied when it holds max_cached) and in an SQLite file beside the
 * uploads, so a restart does not parse DWARF again; both are dropped for a
 * build ID whose debug info changes. Everything runs under one mutex but
 * the debuginfod lookups, which a thread of their own makes. */
#define _GNU_SOURCE
#include "server/names.h"
#include "server/names_elf.h"

#include <ctype.h>
#include <dirent.h>
#include <elfutils/debuginfod.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/bytes.h"
#include "base/clock.h"
#include "base/hashmap.h"
#include "store/stack.h"
#include "symbolize/symbolize.h"
#include "base/vec.h"

#define SLOT_SHIFT 40
#define MAX_CHAIN 64
#define LOCAL_RETRY_S 10 /* a build ID with no local file is looked for again after this */

enum { SRC_UPLOAD, SRC_BUILD_ID, SRC_PATH, SRC_DEBUGINFOD, N_SRC };
static const char *const src_names[N_SRC] = {"upload", "build-id", "path", "debuginfod"};

/* What is known of one build ID. */
typedef struct {
    char bid[HS_BUILD_ID_MAX + 1];
    char *path;    /* its debug file, NULL while none is known */
    char *display; /* the module's file name, for names made from it */
    int slot;      /* its range in the symbolizer, -1 when not registered */
    load_t loads[16];
    size_t n_loads;
    bool complete; /* the exec segments have their bytes (not a .debug-only file) */
    int64_t local_retry_s, dfd_retry_s;
    bool dfd_queued;
} build_t;

struct hs_names {
    pthread_mutex_t mu;
    hs_names_config cfg;
    char *dir;
    char **debug_dirs;
    size_t n_debug_dirs;
    int order[N_SRC];
    size_t n_order;
    bool use_dfd;
    /* build IDs */
    build_t *builds;
    size_t n_builds, cap_builds;
    hs_hmap by_bid; /* hash(bid) -> index (multimap) */
    /* the symbolizer */
    hs_symbolizer *sym;
    int next_slot;
    size_t sym_lookups;
    /* answers in memory: hash(bid, vaddr) -> index into blobs (multimap) */
    hs_hmap answers;
    struct answer {
        uint64_t vaddr;
        size_t build; /* index in builds */
        unsigned char *blob;
        size_t len;
    } *ans;
    size_t n_ans, cap_ans;
    bool clear_pending;
    /* answers on disk */
    sqlite3 *db;
    sqlite3_stmt *get, *put;
    int64_t disk_rows;
    /* debuginfod */
    pthread_t dfd_thread;
    bool dfd_running, stopping;
    pthread_cond_t dfd_cv;
    char (*queue)[HS_BUILD_ID_MAX + 1];
    size_t n_queue, cap_queue;
    uint64_t generation;
    hs_names_stats stats;
    /* this host's vDSO as a file (memfd), for "[vdso]" mappings of its build ID */
    int vdso_fd; /* -1: not made yet, -2: none */
    char vdso_path[64];
    char vdso_bid[HS_VDSO_BUILD_ID_MAX + 1];
};

static uint64_t bid_hash(const char *bid)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *bid; bid++)
        h = (h ^ (uint8_t)*bid) * 1099511628211ULL;
    return hs_hmap_mix(h);
}

bool hs_names_build_id_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    return n >= 2 && n <= HS_BUILD_ID_MAX && n % 2 == 0 && strspn(s, "0123456789abcdef") == n;
}

const char *hs_names_dir(const hs_names *n)
{
    return n->dir;
}

/* The link-time address of a frame at rel bytes into a mapping that starts
 * at file offset map_off. A complete file places the mapping by the
 * segment containing map_off (as hs_symbolizer_add_mapping does); a .debug
 * file has no offsets, so a mapping at offset 0 is taken to start at the
 * lowest segment (the in-process agent's one mapping per module, a
 * perf-style first mapping) and any other to be the code segment's pages. */
static bool to_vaddr(const build_t *b, uint64_t map_off, uint64_t rel, uint64_t *vaddr)
{
    if (b->n_loads == 0)
        return false;
    if (b->complete) {
        bool found = false;
        uint64_t v = 0;
        for (size_t k = 0; k < b->n_loads; k++) {
            const load_t *l = &b->loads[k];
            if (map_off < l->offset || map_off >= l->offset + l->filesz || (found && !l->exec))
                continue;
            v = l->vaddr + (map_off - l->offset);
            found = true;
        }
        *vaddr = v + rel;
        return found;
    }
    uint64_t lowest = UINT64_MAX;
    const load_t *exec = NULL;
    for (size_t k = 0; k < b->n_loads; k++) {
        if (b->loads[k].vaddr < lowest)
            lowest = b->loads[k].vaddr;
        if (b->loads[k].exec && !exec)
            exec = &b->loads[k];
    }
    if (map_off == 0)
        *vaddr = lowest + rel;
    else if (exec)
        *vaddr = (exec->vaddr & ~(uint64_t)4095) + rel;
    else
        return false;
    return true;
}

/* ---- build IDs and their files ---- */

static build_t *find_build(hs_names *n, const char *bid)
{
    size_t it = HS_HMAP_START;
    uint64_t v;
    while (hs_hmap_next(&n->by_bid, bid_hash(bid), &it, &v))
        if (strcmp(n->builds[v].bid, bid) == 0)
            return &n->builds[v];
    return NULL;
}

static build_t *get_build(hs_names *n, const char *bid, const char *display)
{
    build_t *b = find_build(n, bid);
    if (b)
        return b;
    if (n->n_builds == n->cap_builds) {
        size_t nc = n->cap_builds ? 2 * n->cap_builds : 64;
        build_t *nb = realloc(n->builds, nc * sizeof *nb);
        if (!nb)
            return NULL;
        n->builds = nb;
        n->cap_builds = nc;
    }
    b = &n->builds[n->n_builds];
    memset(b, 0, sizeof *b);
    snprintf(b->bid, sizeof b->bid, "%s", bid);
    b->slot = -1;
    b->display = strdup(display && *display ? display : bid);
    if (!b->display || hs_hmap_add(&n->by_bid, bid_hash(bid), n->n_builds) < 0) {
        free(b->display);
        return NULL;
    }
    n->n_builds++;
    return b;
}

static void upload_path(const hs_names *n, const char *bid, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%.2s/%s.debug", n->dir, bid, bid + 2);
}

/* Use the file at path for b if it is ELF with b's build ID. */
static bool try_file(build_t *b, const char *path)
{
    elf_info in;
    if (hs_names_inspect(path, &in) != 0 || strcmp(in.bid, b->bid) != 0)
        return false;
    char *p = strdup(path);
    if (!p)
        return false;
    free(b->path);
    b->path = p;
    memcpy(b->loads, in.loads, sizeof in.loads);
    b->n_loads = in.n_loads;
    b->complete = in.complete;
    return true;
}

static void queue_debuginfod(hs_names *n, build_t *b)
{
    if (!n->use_dfd || b->dfd_queued || hs_monotonic_ns() / 1000000000 < b->dfd_retry_s || n->n_queue >= 4096)
        return;
    if (n->n_queue == n->cap_queue) {
        size_t nc = n->cap_queue ? 2 * n->cap_queue : 16;
        void *nq = realloc(n->queue, nc * sizeof *n->queue);
        if (!nq)
            return;
        n->queue = nq;
        n->cap_queue = nc;
    }
    memcpy(n->queue[n->n_queue++], b->bid, sizeof b->bid);
    b->dfd_queued = true;
    pthread_cond_signal(&n->dfd_cv);
}

/* A "[vdso]" frame: the vDSO is the kernel's, not a file on disk, so the
 * "path" source is this host's own vDSO, used when its build ID is b's
 * (the same kernel build). Made into a memory file once, so the
 * symbolizer reads it as it reads any ELF file. */
static void try_own_vdso(hs_names *n, build_t *b)
{
    if (n->vdso_fd == -1) {
        const void *img;
        size_t size;
        n->vdso_fd = -2;
        if (hs_own_vdso(&img, &size, n->vdso_bid, sizeof n->vdso_bid) != 0 || !n->vdso_bid[0])
            return;
        int fd = memfd_create("hotspur-vdso", MFD_CLOEXEC);
        if (fd < 0)
            return;
        if (write(fd, img, size) != (ssize_t)size) {
            close(fd);
            return;
        }
        n->vdso_fd = fd;
        snprintf(n->vdso_path, sizeof n->vdso_path, "/proc/self/fd/%d", fd);
    }
    if (n->vdso_fd >= 0 && strcmp(n->vdso_bid, b->bid) == 0)
        try_file(b, n->vdso_path);
}

/* b's debug file from the local sources, in order; debuginfod queued. */
static bool resolve(hs_names *n, build_t *b, const char *mapping_path)
{
    if (b->path)
        return true;
    int64_t t = hs_monotonic_ns() / 1000000000;
    if (t >= b->local_retry_s) {
        b->local_retry_s = t + LOCAL_RETRY_S;
        char p[PATH_MAX];
        for (size_t i = 0; i < n->n_order && !b->path; i++) {
            switch (n->order[i]) {
            case SRC_UPLOAD:
                if (n->dir) {
                    upload_path(n, b->bid, p, sizeof p);
                    try_file(b, p);
                }
                break;
            case SRC_BUILD_ID:
                for (size_t d = 0; d < n->n_debug_dirs && !b->path; d++) {
                    snprintf(p, sizeof p, "%s/.build-id/%.2s/%s.debug", n->debug_dirs[d], b->bid, b->bid + 2);
                    try_file(b, p);
                }
                break;
            case SRC_PATH:
                if (mapping_path && mapping_path[0] == '/')
                    try_file(b, mapping_path);
                else if (mapping_path && strcmp(mapping_path, "[vdso]") == 0)
                    try_own_vdso(n, b);
                break;
            default:
                break;
            }
        }
    }
    if (!b->path)
        queue_debuginfod(n, b);
    return b->path != NULL;
}

/* Register b in the symbolizer (a fresh one every max_cached lookups). */
static int ensure_slot(hs_names *n, build_t *b)
{
    if (n->sym && n->sym_lookups > n->cfg.max_cached) {
        hs_symbolizer_free(n->sym);
        n->sym = NULL;
    }
    if (!n->sym) {
        if (!(n->sym = hs_symbolizer_new()))
            return -1;
        n->sym_lookups = 0;
        n->next_slot = 1;
        for (size_t i = 0; i < n->n_builds; i++)
            n->builds[i].slot = -1;
    }
    if (b->slot >= 0)
        return 0;
    if (n->next_slot >= (1 << 23))
        return -1;
    uint64_t base = (uint64_t)n->next_slot << SLOT_SHIFT;
    /* errors (not ELF after all) show as lookups with no answer */
    hs_symbolizer_add_module_named(n->sym, b->path, b->display, base, base, base + (1ULL << SLOT_SHIFT));
    b->slot = n->next_slot++;
    return 0;
}

/* Forget what is known of bid (its file changed): answers, registration. */
static void forget_build(hs_names *n, const char *bid)
{
    build_t *b = find_build(n, bid);
    if (b) {
        free(b->path);
        b->path = NULL;
        b->local_retry_s = 0;
        b->dfd_retry_s = 0;
    }
    /* the symbolizer knows the file by path: start a new one */
    hs_symbolizer_free(n->sym);
    n->sym = NULL;
    n->clear_pending = true;
    if (n->db) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(n->db, "DELETE FROM answers WHERE build_id = ?", -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_text(st, 1, bid, -1, SQLITE_STATIC);
            sqlite3_step(st);
        }
        sqlite3_finalize(st);
    }
    __atomic_add_fetch(&n->generation, 1, __ATOMIC_RELEASE);
}

/* ---- answers ---- */

/* blob: u32 n, then per frame i64 line, i64 start_line, and function,
 * system_name, file each as u32 length + bytes. */
static void put_str(hs_bytes *b, const char *s)
{
    uint32_t l = (uint32_t)strlen(s);
    hs_bytes_put(b, &l, 4);
    hs_bytes_put(b, s, l);
}

typedef struct {
    const char *function, *system_name, *file;
    size_t lf, ls, lfile;
    int64_t line, start_line;
} frame_view;

/* Decode blob into at most max frames. The count, or -1 if malformed. */
static int blob_frames(const unsigned char *d, size_t len, frame_view *out, int max)
{
    uint32_t n;
    if (len < 4)
        return -1;
    memcpy(&n, d, 4);
    size_t at = 4;
    if (n > (uint32_t)max)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        if (at + 16 > len)
            return -1;
        memcpy(&out[i].line, d + at, 8);
        memcpy(&out[i].start_line, d + at + 8, 8);
        at += 16;
        const char **s[3] = {&out[i].function, &out[i].system_name, &out[i].file};
        size_t *l[3] = {&out[i].lf, &out[i].ls, &out[i].lfile};
        for (int k = 0; k < 3; k++) {
            uint32_t sl;
            if (at + 4 > len)
                return -1;
            memcpy(&sl, d + at, 4);
            at += 4;
            if (sl > len - at)
                return -1;
            *s[k] = (const char *)d + at;
            *l[k] = sl;
            at += sl;
        }
    }
    return (int)n;
}

static uint64_t answer_key(const build_t *b, uint64_t vaddr)
{
    return hs_hmap_mix(bid_hash(b->bid) ^ (vaddr * 0x9e3779b97f4a7c15ULL));
}

static void clear_answers(hs_names *n)
{
    for (size_t i = 0; i < n->n_ans; i++)
        free(n->ans[i].blob);
    n->n_ans = 0;
    hs_hmap_clear(&n->answers);
    n->clear_pending = false;
}

static const struct answer *mem_get(hs_names *n, size_t bi, uint64_t vaddr)
{
    size_t it = HS_HMAP_START;
    uint64_t v;
    while (hs_hmap_next(&n->answers, answer_key(&n->builds[bi], vaddr), &it, &v))
        if (n->ans[v].build == bi && n->ans[v].vaddr == vaddr)
            return &n->ans[v];
    return NULL;
}

/* Keep blob (taken over) as the answer for (bi, vaddr). */
static const struct answer *mem_put(hs_names *n, size_t bi, uint64_t vaddr, unsigned char *blob, size_t len)
{
    if (n->n_ans == n->cap_ans) {
        size_t nc = n->cap_ans ? 2 * n->cap_ans : 1024;
        void *na = realloc(n->ans, nc * sizeof *n->ans);
        if (!na) {
            free(blob);
            return NULL;
        }
        n->ans = na;
        n->cap_ans = nc;
    }
    if (hs_hmap_add(&n->answers, answer_key(&n->builds[bi], vaddr), n->n_ans) < 0) {
        free(blob);
        return NULL;
    }
    n->ans[n->n_ans] = (struct answer){vaddr, bi, blob, len};
    return &n->ans[n->n_ans++];
}

static unsigned char *disk_get(hs_names *n, const char *bid, uint64_t vaddr, size_t *len)
{
    if (!n->get)
        return NULL;
    unsigned char *out = NULL;
    sqlite3_reset(n->get);
    sqlite3_bind_text(n->get, 1, bid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(n->get, 2, (int64_t)vaddr);
    if (sqlite3_step(n->get) == SQLITE_ROW) {
        int l = sqlite3_column_bytes(n->get, 0);
        const void *d = sqlite3_column_blob(n->get, 0);
        if (l >= 4 && d && (out = malloc((size_t)l))) {
            memcpy(out, d, (size_t)l);
            *len = (size_t)l;
        }
    }
    sqlite3_reset(n->get);
    return out;
}

static void disk_put(hs_names *n, const char *bid, uint64_t vaddr, const void *blob, size_t len)
{
    if (!n->put)
        return;
    sqlite3_reset(n->put);
    sqlite3_bind_text(n->put, 1, bid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(n->put, 2, (int64_t)vaddr);
    sqlite3_bind_blob(n->put, 3, blob, (int)len, SQLITE_STATIC);
    if (sqlite3_step(n->put) == SQLITE_DONE)
        n->disk_rows++;
    sqlite3_reset(n->put);
    if (n->disk_rows > (int64_t)n->cfg.max_cached) { /* keep the newer half */
        char sql[160];
        snprintf(sql, sizeof sql, "DELETE FROM answers WHERE rowid <= (SELECT max(rowid) FROM answers) - %" PRId64,
                 (int64_t)n->cfg.max_cached / 2);
        sqlite3_exec(n->db, sql, NULL, NULL, NULL);
        n->disk_rows = (int64_t)n->cfg.max_cached / 2;
    }
}

/* The frames (innermost first) of the frame at rel in a mapping at
 * map_off of build bid, the module file being mapping_path: their count
 * (0: not nameable now), -1 on error. Under n->mu; out valid until the
 * mutex is released. */
static int lookup(hs_names *n, const char *bid, const char *mapping_path, uint64_t map_off, uint64_t rel,
                  frame_view *out)
{
    const char *slash = mapping_path ? strrchr(mapping_path, '/') : NULL;
    build_t *b = get_build(n, bid, slash ? slash + 1 : mapping_path);
    if (!b)
        return -1;
    uint64_t vaddr;
    if (!resolve(n, b, mapping_path) || !to_vaddr(b, map_off, rel, &vaddr) || vaddr >= (1ULL << SLOT_SHIFT))
        return 0;
    size_t bi = (size_t)(b - n->builds);
    const struct answer *a = mem_get(n, bi, vaddr);
    if (a) {
        n->stats.cache_hits++;
    } else {
        size_t len = 0;
        unsigned char *blob = disk_get(n, bid, vaddr, &len);
        if (blob) {
            n->stats.disk_hits++;
        } else {
            if (ensure_slot(n, b) < 0)
                return -1;
            b = &n->builds[bi];
            hs_frame fr[MAX_CHAIN];
            int k = hs_symbolizer_lookup(n->sym, ((uint64_t)b->slot << SLOT_SHIFT) + vaddr, fr, MAX_CHAIN);
            n->sym_lookups++;
            hs_bytes bb = {0};
            uint32_t cnt = (uint32_t)(k > 0 ? k : 0);
            hs_bytes_put(&bb, &cnt, 4);
            for (uint32_t i = 0; i < cnt; i++) {
                hs_bytes_put(&bb, &fr[i].line, 8);
                hs_bytes_put(&bb, &fr[i].start_line, 8);
                put_str(&bb, fr[i].function);
                put_str(&bb, fr[i].system_name);
                put_str(&bb, fr[i].file);
            }
            if (bb.oom) {
                hs_bytes_free(&bb);
                return -1;
            }
            blob = bb.p;
            len = bb.n;
            disk_put(n, bid, vaddr, blob, len);
        }
        if (n->n_ans >= n->cfg.max_cached)
            n->clear_pending = true; /* emptied when the current call ends (out may point into it) */
        if (!(a = mem_put(n, bi, vaddr, blob, len)))
            return -1;
    }
    int k = blob_frames(a->blob, a->len, out, MAX_CHAIN);
    /* a frame without a function name (nothing covers the address) is no name */
    if (k > 0 && out[k - 1].lf == 0)
        k = 0;
    return k < 0 ? 0 : k;
}

static void begin(hs_names *n)
{
    pthread_mutex_lock(&n->mu);
    if (n->clear_pending)
        clear_answers(n);
}

static void end(hs_names *n)
{
    if (n->clear_pending)
        clear_answers(n);
    pthread_mutex_unlock(&n->mu);
}

/* ---- profiles and records ---- */

bool hs_names_wanted(const hs_profile *p)
{
    for (size_t i = 0; i < p->n_locations; i++) {
        const hs_location *l = &p->locations[i];
        if (l->n_lines || !l->mapping_id)
            continue;
        const hs_mapping *m = hs_profile_mapping(p, l->mapping_id);
        if (m && *hs_profile_string(p, m->build_id))
            return true;
    }
    return false;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

long hs_names_profile(hs_names *n, hs_profile *p)
{
    long named = 0;
    begin(n);
    for (size_t i = 0; i < p->n_locations; i++) {
        hs_location *l = &p->locations[i];
        if (l->n_lines || !l->mapping_id)
            continue;
        const hs_mapping *m = hs_profile_mapping(p, l->mapping_id);
        if (!m)
            continue;
        char bid[HS_BUILD_ID_MAX + 1], path[PATH_MAX];
        snprintf(bid, sizeof bid, "%s", hs_profile_string(p, m->build_id));
        snprintf(path, sizeof path, "%s", hs_profile_string(p, m->filename));
        if (!hs_names_build_id_ok(bid))
            continue;
        uint64_t loc_id = l->id, map_off = m->file_offset, rel = l->address - m->memory_start;
        frame_view fr[MAX_CHAIN];
        int k = lookup(n, bid, path, map_off, rel, fr);
        if (k < 0) {
            named = -1;
            break;
        }
        if (k == 0) {
            n->stats.unnamed++;
            continue;
        }
        hs_line lines[MAX_CHAIN];
        for (int j = 0; j < k; j++) {
            char *f = dup_n(fr[j].function, fr[j].lf), *s = dup_n(fr[j].system_name, fr[j].ls),
                 *file = dup_n(fr[j].file, fr[j].lfile);
            uint64_t fid = f && s && file ? hs_profile_add_function(p, f, s, file, fr[j].start_line) : 0;
            free(f);
            free(s);
            free(file);
            if (!fid) {
                named = -1;
                goto out;
            }
            lines[j] = (hs_line){fid, fr[j].line, 0};
        }
        if (hs_profile_set_location_lines(p, loc_id, lines, (size_t)k) < 0) {
            named = -1;
            break;
        }
        hs_mapping *mm = (hs_mapping *)hs_profile_mapping(p, p->locations[i].mapping_id);
        if (mm) {
            mm->has_functions = true;
            mm->has_filenames |= fr[0].lfile > 0;
            mm->has_line_numbers |= fr[0].line > 0;
        }
        n->stats.named++;
        named++;
    }
out:
    end(n);
    return named;
}

int hs_names_record(hs_names *n, const void *rec, size_t len, void **out, size_t *outlen)
{
    hs_stack_decoded d;
    char err[128];
    if (hs_stack_decode(rec, len, &d, err, sizeof err) != 0)
        return -1;
    hs_stack_frame *nf = NULL;
    char **owned = NULL;
    size_t n_nf = 0, cap = 0, n_owned = 0, cap_owned = 0;
    int rc = 0;
    bool any = false;
    begin(n);
    for (size_t i = 0; i < d.n_frames && rc == 0; i++) {
        const hs_stack_frame *f = &d.frames[i];
        char bid[HS_BUILD_ID_MAX + 1];
        uint64_t map_off, rel;
        frame_view fr[MAX_CHAIN];
        int k = 0;
        if (hs_stack_unnamed_parse(f->system_name, bid, &map_off, &rel)) {
            k = lookup(n, bid, f->mapping, map_off, rel, fr);
            if (k < 0) {
                rc = -1;
                break;
            }
        }
        size_t need = n_nf + (size_t)(k > 0 ? k : 1);
        if (HS_VEC_RESERVE(nf, cap, need)) {
            rc = -1;
            break;
        }
        if (k == 0) {
            nf[n_nf++] = *f;
            continue;
        }
        any = true;
        if (HS_VEC_RESERVE(owned, cap_owned, n_owned + 3 * (size_t)k)) {
            rc = -1;
            break;
        }
        for (int j = 0; j < k; j++) {
            char *fn = dup_n(fr[j].function, fr[j].lf), *sys = dup_n(fr[j].system_name, fr[j].ls),
                 *file = dup_n(fr[j].file, fr[j].lfile);
            owned[n_owned++] = fn;
            owned[n_owned++] = sys;
            owned[n_owned++] = file;
            if (!fn || !sys || !file) {
                rc = -1;
                break;
            }
            nf[n_nf++] = (hs_stack_frame){fn, sys, file, f->mapping, fr[j].line, fr[j].start_line,
                                          j + 1 < k ? true : f->inlined};
        }
    }
    end(n);
    if (rc == 0 && any) {
        hs_stack_label *labels = d.n_labels ? d.labels : NULL;
        rc = hs_stack_encode(nf, n_nf, labels, d.n_labels, out, outlen, err, sizeof err) == 0 ? 1 : -1;
    }
    for (size_t i = 0; i < n_owned; i++)
        free(owned[i]);
    free(owned);
    free(nf);
    hs_stack_decoded_free(&d);
    return rc;
}

/* Without the mutex: a query must not wait for an upload being named. */
uint64_t hs_names_generation(hs_names *n)
{
    return __atomic_load_n(&n->generation, __ATOMIC_ACQUIRE);
}

void hs_names_get_stats(hs_names *n, hs_names_stats *out)
{
    pthread_mutex_lock(&n->mu);
    *out = n->stats;
    pthread_mutex_unlock(&n->mu);
}

/* ---- debuginfod ---- */

typedef struct {
    int64_t deadline_ms;
    volatile bool *stopping;
} dfd_ctx;

/* libdebuginfod calls this while it waits: nonzero gives up. */
static int dfd_progress(debuginfod_client *c, long a, long b)
{
    (void)a, (void)b;
    dfd_ctx *x = debuginfod_get_user_data(c);
    return x && (hs_monotonic_ns() / 1000000 > x->deadline_ms || *x->stopping);
}

static int hex_bytes(const char *hex, unsigned char *out)
{
    size_t n = strlen(hex) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (unsigned char)v;
    }
    return (int)n;
}

static void *dfd_loop(void *arg)
{
    hs_names *n = arg;
    pthread_mutex_lock(&n->mu);
    while (!n->stopping) {
        if (n->n_queue == 0) {
            pthread_cond_wait(&n->dfd_cv, &n->mu);
            continue;
        }
        char bid[HS_BUILD_ID_MAX + 1];
        memcpy(bid, n->queue[0], sizeof bid);
        memmove(n->queue, n->queue + 1, (n->n_queue - 1) * sizeof *n->queue);
        n->n_queue--;
        pthread_mutex_unlock(&n->mu);

        unsigned char bits[HS_BUILD_ID_MAX / 2];
        int nb = hex_bytes(bid, bits);
        char *path = NULL;
        int fd = -1;
        debuginfod_client *c = nb > 0 ? debuginfod_begin() : NULL;
        if (c) {
            dfd_ctx x = {hs_monotonic_ns() / 1000000 + (int64_t)n->cfg.debuginfod_timeout_s * 1000, (volatile bool *)&n->stopping};
            debuginfod_set_user_data(c, &x);
            debuginfod_set_progressfn(c, dfd_progress);
            fd = debuginfod_find_debuginfo(c, bits, nb, &path);
            debuginfod_end(c);
        }
        if (fd >= 0)
            close(fd);

        pthread_mutex_lock(&n->mu);
        build_t *b = find_build(n, bid);
        if (b) {
            b->dfd_queued = false;
            if (fd >= 0 && path && !b->path && try_file(b, path)) {
                n->stats.debuginfod_ok++;
                __atomic_add_fetch(&n->generation, 1, __ATOMIC_RELEASE);
            } else if (!b->path) {
                n->stats.debuginfod_failed++;
                b->dfd_retry_s = hs_monotonic_ns() / 1000000000 + n->cfg.negative_ttl_s;
            }
        }
        free(path);
    }
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

/* ---- uploads ---- */

int hs_names_add_upload(hs_names *n, const char *build_id, const char *tmp, char *err, size_t errlen)
{
    int status = 0;
    elf_info in;
    if (!n->dir) {
        snprintf(err, errlen, "this server keeps no uploads (no --debuginfo-dir)");
        status = 400;
    } else if (!hs_names_build_id_ok(build_id)) {
        snprintf(err, errlen, "not a build ID: 2 to 128 lowercase hex digits");
        status = 400;
    } else if (hs_names_inspect(tmp, &in) != 0) {
        snprintf(err, errlen, "not an ELF file");
        status = 400;
    } else if (strcmp(in.bid, build_id) != 0) {
        snprintf(err, errlen, "the file's build ID is %s, not %s", in.bid[0] ? in.bid : "(none)", build_id);
        status = 400;
    } else if (!in.debug) {
        snprintf(err, errlen, "the file has no debug info (.debug_info or .symtab): upload the unstripped "
                              "binary or its .debug file");
        status = 400;
    }
    if (status) {
        unlink(tmp);
        return status;
    }
    char dst[PATH_MAX], sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/%.2s", n->dir, build_id);
    upload_path(n, build_id, dst, sizeof dst);
    if ((mkdir(sub, 0700) != 0 && errno != EEXIST) || rename(tmp, dst) != 0) {
        snprintf(err, errlen, "cannot keep the file: %s", strerror(errno));
        unlink(tmp);
        return 500;
    }
    pthread_mutex_lock(&n->mu);
    forget_build(n, build_id);
    pthread_mutex_unlock(&n->mu);
    return 0;
}

int hs_names_remove_upload(hs_names *n, const char *build_id, char *err, size_t errlen)
{
    char dst[PATH_MAX];
    if (!n->dir || !hs_names_build_id_ok(build_id)) {
        snprintf(err, errlen, "no debug info uploaded for %s", build_id);
        return 404;
    }
    upload_path(n, build_id, dst, sizeof dst);
    if (unlink(dst) != 0) {
        snprintf(err, errlen, errno == ENOENT ? "no debug info uploaded for %s" : "cannot remove it: %s",
                 errno == ENOENT ? build_id : strerror(errno));
        return errno == ENOENT ? 404 : 500;
    }
    pthread_mutex_lock(&n->mu);
    forget_build(n, build_id);
    pthread_mutex_unlock(&n->mu);
    return 0;
}

static int upload_cmp(const void *a, const void *b)
{
    return strcmp(((const hs_names_upload *)a)->build_id, ((const hs_names_upload *)b)->build_id);
}

int hs_names_list_uploads(hs_names *n, hs_names_upload **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    if (!n->dir)
        return 0;
    DIR *top = opendir(n->dir);
    if (!top)
        return -1;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(top))) {
        if (strlen(e->d_name) != 2 || strspn(e->d_name, "0123456789abcdef") != 2)
            continue;
        char sub[PATH_MAX];
        if (snprintf(sub, sizeof sub, "%s/%s", n->dir, e->d_name) >= (int)sizeof sub)
            continue;
        DIR *d = opendir(sub);
        struct dirent *f;
        while (d && (f = readdir(d))) {
            size_t l = strlen(f->d_name);
            if (l < 7 || strcmp(f->d_name + l - 6, ".debug") != 0)
                continue;
            hs_names_upload u = {0};
            if (snprintf(u.build_id, sizeof u.build_id, "%s%.*s", e->d_name, (int)(l - 6), f->d_name) >=
                    (int)sizeof u.build_id ||
                !hs_names_build_id_ok(u.build_id))
                continue;
            char p[PATH_MAX + 512];
            struct stat st;
            if (snprintf(p, sizeof p, "%s/%s", sub, f->d_name) >= (int)sizeof p || stat(p, &st) != 0)
                continue;
            u.size = (uint64_t)st.st_size;
            u.mtime_s = st.st_mtime;
            if (*count == cap) {
                size_t nc = cap ? 2 * cap : 16;
                void *np = realloc(*out, nc * sizeof **out);
                if (!np) {
                    closedir(d);
                    closedir(top);
                    return -1;
                }
                *out = np;
                cap = nc;
            }
            (*out)[(*count)++] = u;
        }
        if (d)
            closedir(d);
    }
    closedir(top);
    if (*count)
        qsort(*out, *count, sizeof **out, upload_cmp);
    return 0;
}

/* ---- life cycle ---- */

static int open_cache(hs_names *n, char *err, size_t errlen)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/names-cache.sqlite", n->dir);
    if (sqlite3_open_v2(p, &n->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
            SQLITE_OK ||
        sqlite3_exec(n->db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                     "CREATE TABLE IF NOT EXISTS answers (build_id TEXT NOT NULL, vaddr INTEGER NOT NULL, "
                     "frames BLOB NOT NULL); "
                     "CREATE UNIQUE INDEX IF NOT EXISTS answers_key ON answers (build_id, vaddr);",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(n->db, "SELECT frames FROM answers WHERE build_id = ? AND vaddr = ?", -1, &n->get,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(n->db, "INSERT OR REPLACE INTO answers (build_id, vaddr, frames) VALUES (?, ?, ?)", -1,
                           &n->put, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", p, n->db ? sqlite3_errmsg(n->db) : "cannot open");
        return -1;
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(n->db, "SELECT count(*) FROM answers", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n->disk_rows = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return 0;
}

static int parse_order(hs_names *n, const char *order, char *err, size_t errlen)
{
    const char *p = order;
    while (*p) {
        size_t l = strcspn(p, ",");
        int found = -1;
        for (int i = 0; i < N_SRC; i++)
            if (strlen(src_names[i]) == l && strncmp(p, src_names[i], l) == 0)
                found = i;
        for (size_t k = 0; k < n->n_order && found >= 0; k++)
            if (n->order[k] == found)
                found = -2;
        if (found < 0) {
            snprintf(err, errlen, "debug info sources: '%.*s' is %s (known: upload, build-id, path, debuginfod)",
                     (int)l, p, found == -2 ? "given twice" : "unknown");
            return -1;
        }
        n->order[n->n_order++] = found;
        p += l;
        if (*p == ',')
            p++;
    }
    return 0;
}

hs_names *hs_names_new(const hs_names_config *cfg, char *err, size_t errlen)
{
    hs_names *n = calloc(1, sizeof *n);
    if (!n) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&n->mu, NULL);
    pthread_cond_init(&n->dfd_cv, NULL);
    n->vdso_fd = -1;
    n->cfg = *cfg;
    if (!n->cfg.debuginfod_timeout_s)
        n->cfg.debuginfod_timeout_s = 10;
    if (!n->cfg.negative_ttl_s)
        n->cfg.negative_ttl_s = 300;
    if (!n->cfg.max_cached)
        n->cfg.max_cached = 1000000;
    static const char *const default_dirs[] = {"/usr/lib/debug"};
    const char *const *dirs = cfg->debug_dirs ? cfg->debug_dirs : default_dirs;
    size_t nd = cfg->debug_dirs ? cfg->n_debug_dirs : 1;
    n->debug_dirs = calloc(nd + 1, sizeof *n->debug_dirs);
    if (!n->debug_dirs)
        goto oom;
    for (size_t i = 0; i < nd; i++)
        if (!(n->debug_dirs[n->n_debug_dirs++] = strdup(dirs[i])))
            goto oom;
    if (cfg->dir && !(n->dir = strdup(cfg->dir)))
        goto oom;
    n->cfg.dir = n->dir;
    if (parse_order(n, cfg->order ? cfg->order : "upload,build-id,path,debuginfod", err, errlen) != 0)
        goto fail;
    const char *urls = cfg->debuginfod_urls ? cfg->debuginfod_urls : getenv("DEBUGINFOD_URLS");
    for (size_t k = 0; k < n->n_order; k++)
        n->use_dfd |= n->order[k] == SRC_DEBUGINFOD && urls && *urls;
    if (n->use_dfd && cfg->debuginfod_urls)
        setenv("DEBUGINFOD_URLS", cfg->debuginfod_urls, 1); /* (before any thread of ours reads it) */
    if (n->dir) {
        if (mkdir(n->dir, 0700) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "%s: %s", n->dir, strerror(errno));
            goto fail;
        }
        if (open_cache(n, err, errlen) != 0)
            goto fail;
    }
    if (n->use_dfd) {
        if (pthread_create(&n->dfd_thread, NULL, dfd_loop, n) != 0) {
            snprintf(err, errlen, "cannot start the debuginfod thread");
            goto fail;
        }
        n->dfd_running = true;
    }
    return n;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    hs_names_free(n);
    return NULL;
}

void hs_names_free(hs_names *n)
{
    if (!n)
        return;
    if (n->dfd_running) {
        pthread_mutex_lock(&n->mu);
        n->stopping = true;
        pthread_cond_broadcast(&n->dfd_cv);
        pthread_mutex_unlock(&n->mu);
        pthread_join(n->dfd_thread, NULL);
    }
    clear_answers(n);
    free(n->ans);
    hs_hmap_free(&n->answers);
    for (size_t i = 0; i < n->n_builds; i++) {
        free(n->builds[i].path);
        free(n->builds[i].display);
    }
    free(n->builds);
    hs_hmap_free(&n->by_bid);
    hs_symbolizer_free(n->sym);
    sqlite3_finalize(n->get);
    sqlite3_finalize(n->put);
    if (n->db)
        sqlite3_close(n->db);
    for (size_t i = 0; i < n->n_debug_dirs; i++)
        free(n->debug_dirs[i]);
    free(n->debug_dirs);
    free(n->dir);
    free(n->queue);
    if (n->vdso_fd >= 0)
        close(n->vdso_fd);
    pthread_mutex_destroy(&n->mu);
    pthread_cond_destroy(&n->dfd_cv);
    free(n);
}
