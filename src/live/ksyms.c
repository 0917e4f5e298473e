/* ksyms.c — /proc/kallsyms loaded into a sorted array, looked up by binary
 * search (the symbol with the greatest address <= addr). The names live in
 * one buffer (not a string each: 120k of them on a distribution kernel).
 *
 * Reading /proc/kallsyms costs ~50 ms of CPU, most of it the kernel's
 * formatting of every line, paid again by every `record -p`. So a table
 * opened with hs_ksyms_lazy reads nothing until a kernel frame is named,
 * and then takes the core kernel's symbols (those of no module or BPF
 * program: fixed for the life of a boot) from a cache file written by the
 * first full read of this boot. The cache is trusted only when its boot id
 * is the running kernel's and the first text symbol of /proc/kallsyms (one
 * short read) has the address and name it recorded (so KASLR offsets and
 * kptr_restrict hiding addresses from this user both invalidate it); it is
 * mode 0600 and must be owned by the reader. An address outside the core
 * kernel's range (modules, BPF, ftrace trampolines: they come and go)
 * reads /proc/kallsyms in full, once. */
#define _GNU_SOURCE
#include "live/ksyms.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "live/live_int.h"

typedef struct {
    uint64_t addr;
    uint32_t name; /* offset in names */
    uint32_t core; /* no "\t[module]" (or [bpf]) after the name */
} ksym;

typedef struct {
    ksym *v;
    size_t n;
    char *names;
    size_t n_names, cap_names;
    void *map; /* v and names point into this mapped cache file */
    size_t map_len;
} ktab;

struct hs_ksyms {
    ktab full, core;
    int full_tried, core_tried;
    char *kallsyms, *cache, *boot_id; /* lazy: where to read; cache NULL: none */
};

/* The cache file: this header, then n ksym, then n_names bytes of names. */
typedef struct {
    char magic[8];
    char boot_id[40];
    uint64_t first_addr; /* the first text symbol of /proc/kallsyms */
    char first_name[64];
    uint64_t n, n_names;
} cache_hdr;

static const char MAGIC[8] = "HSKSYM1";

static int cmp_ksym(const void *a, const void *b)
{
    const ksym *x = a, *y = b; /* at one address, the file's order: the last line names it */
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

static void tab_free(ktab *t)
{
    if (t->map) {
        munmap(t->map, t->map_len);
    } else {
        free(t->names);
        free(t->v);
    }
    memset(t, 0, sizeof *t);
}

/* One line "ADDR TYPE NAME[\t[MODULE]]": 0 and its parts for a text
 * symbol, -1 for anything else. */
static int parse_line(char *line, uint64_t *addr, char **name, size_t *len, int *core)
{
    char *end;
    unsigned long long a = strtoull(line, &end, 16);
    if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ')
        return -1;
    char type = end[1];
    if (type != 't' && type != 'T' && type != 'w' && type != 'W')
        return -1;
    *name = end + 3;
    *len = strcspn(*name, " \t\n");
    if (*len == 0)
        return -1;
    *core = (*name)[*len] != '\t';
    if (*len > 255)
        *len = 255;
    *addr = a;
    return 0;
}

static int tab_parse(ktab *k, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    setvbuf(f, NULL, _IOFBF, 1 << 16); /* procfs says 1 KiB: 5000 reads */
    size_t cap = 0;
    char line[512];
    int nonzero = 0, ok = 1;
    while (ok && fgets(line, sizeof line, f)) {
        uint64_t a;
        char *name;
        size_t len;
        int core;
        if (parse_line(line, &a, &name, &len, &core) != 0)
            continue;
        if (a)
            nonzero = 1;
        if (k->n == cap) {
            size_t nc = cap ? cap * 2 : 65536;
            ksym *nv = realloc(k->v, nc * sizeof *nv);
            if (!(ok = nv != NULL))
                break;
            k->v = nv;
            cap = nc;
        }
        if (k->n_names + len + 1 > k->cap_names) {
            size_t nc = k->cap_names ? k->cap_names * 2 : 1 << 21;
            while (nc < k->n_names + len + 1)
                nc *= 2;
            char *nn = nc <= UINT32_MAX ? realloc(k->names, nc) : NULL;
            if (!(ok = nn != NULL))
                break;
            k->names = nn;
            k->cap_names = nc;
        }
        memcpy(k->names + k->n_names, name, len);
        k->names[k->n_names + len] = 0;
        k->v[k->n++] = (ksym){a, (uint32_t)k->n_names, (uint32_t)core};
        k->n_names += len + 1;
    }
    fclose(f);
    if (!nonzero || k->n == 0) {
        tab_free(k);
        return -1;
    }
    qsort(k->v, k->n, sizeof *k->v, cmp_ksym);
    return 0;
}

static const char *tab_lookup(const ktab *k, uint64_t addr)
{
    if (k->n == 0 || addr < k->v[0].addr)
        return NULL;
    size_t lo = 0, hi = k->n; /* answer in [lo, hi) */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (k->v[mid].addr <= addr)
            lo = mid;
        else
            hi = mid;
    }
    return k->names + k->v[lo].name;
}

hs_ksyms *hs_ksyms_load(const char *path)
{
    hs_ksyms *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->full_tried = k->core_tried = 1;
    if (tab_parse(&k->full, path ? path : "/proc/kallsyms") != 0) {
        free(k);
        return NULL;
    }
    return k;
}

hs_ksyms *hs_ksyms_lazy(const char *kallsyms, const char *cache, const char *boot_id)
{
    hs_ksyms *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->kallsyms = strdup(kallsyms ? kallsyms : "/proc/kallsyms");
    k->boot_id = strdup(boot_id ? boot_id : "/proc/sys/kernel/random/boot_id");
    if (cache && *cache)
        k->cache = strdup(cache);
    if (!k->kallsyms || !k->boot_id || (cache && *cache && !k->cache)) {
        hs_ksyms_free(k);
        return NULL;
    }
    return k;
}

const char *hs_ksyms_cache_path(char *buf, size_t len)
{
    const char *env = getenv("HOTSPUR_KSYMS_CACHE");
    if (env)
        return *env && snprintf(buf, len, "%s", env) < (int)len ? buf : NULL;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n = xdg && *xdg ? snprintf(buf, len, "%s/hotspur/kallsyms", xdg)
            : home && *home ? snprintf(buf, len, "%s/.cache/hotspur/kallsyms", home)
                            : -1;
    return n > 0 && n < (int)len ? buf : NULL;
}

void hs_ksyms_free(hs_ksyms *k)
{
    if (!k)
        return;
    tab_free(&k->full);
    tab_free(&k->core);
    free(k->kallsyms);
    free(k->cache);
    free(k->boot_id);
    free(k);
}

/* What identifies this boot's symbols: its boot id and the first text
 * symbol of kallsyms (4 KiB read: the kernel formats only those lines). */
static int cache_key(const hs_ksyms *k, cache_hdr *h)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, MAGIC, sizeof MAGIC);
    char buf[4098];
    if (lv_read_small(k->boot_id, h->boot_id, sizeof h->boot_id) != 0 || !h->boot_id[0] ||
        lv_read_small(k->kallsyms, buf, sizeof buf - 1) != 0)
        return -1;
    size_t n = strlen(buf);
    if (n < sizeof buf - 2) /* the whole file: its last line is whole, its newline cut */
        memcpy(buf + n, "\n", 2);
    for (char *line = buf, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = 0;
        char *name;
        size_t len;
        int core;
        if (parse_line(line, &h->first_addr, &name, &len, &core) == 0 && core) {
            snprintf(h->first_name, sizeof h->first_name, "%.*s", (int)len, name);
            return h->first_addr ? 0 : -1; /* addresses hidden from us: no cache */
        }
    }
    return -1;
}

/* The core table from the cache file, when it is this boot's. */
static int cache_read(hs_ksyms *k, const cache_hdr *key)
{
    int fd = open(k->cache, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    cache_hdr h;
    int ok = fstat(fd, &st) == 0 && st.st_uid == geteuid() && !(st.st_mode & 077) &&
             (size_t)st.st_size >= sizeof h && pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
             memcmp(&h, key, sizeof h - 2 * sizeof(uint64_t)) == 0 && h.n > 0 && h.n_names > 0 &&
             h.n < ((size_t)st.st_size - sizeof h) / sizeof(ksym) && h.n_names < (uint64_t)st.st_size &&
             (uint64_t)st.st_size == sizeof h + h.n * sizeof(ksym) + h.n_names;
    void *m = ok ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    close(fd);
    if (m == MAP_FAILED)
        return -1;
    ktab *t = &k->core;
    t->map = m;
    t->map_len = (size_t)st.st_size;
    t->v = (ksym *)((char *)m + sizeof h);
    t->n = h.n;
    t->names = (char *)(t->v + h.n);
    t->n_names = h.n_names;
    if (t->names[t->n_names - 1] != 0) {
        tab_free(t);
        return -1;
    }
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].name >= t->n_names || (i && t->v[i].addr < t->v[i - 1].addr)) {
            tab_free(t);
            return -1;
        }
    return 0;
}

/* The full table's core symbols written to the cache (a temporary file
 * renamed into place: a reader never sees half of it). Best effort. */
static void cache_write(const hs_ksyms *k, cache_hdr *h)
{
    char dir[PATH_MAX], tmp[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s", k->cache);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if (hs_mkdirs(dir, 0700, NULL, 0) != 0)
            return;
    }
    if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", k->cache) >= (int)sizeof tmp)
        return;
    int fd = mkstemp(tmp); /* mode 0600 */
    if (fd < 0)
        return;
    const ktab *t = &k->full;
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->v[i].core;
    ksym *v = malloc((n ? n : 1) * sizeof *v);
    int ok = v != NULL;
    for (size_t i = 0, j = 0; ok && i < t->n; i++)
        if (t->v[i].core)
            v[j++] = t->v[i];
    h->n = n;
    h->n_names = t->n_names;
    ok = ok && n && hs_write_all(fd, h, sizeof *h) == 0 && hs_write_all(fd, v, n * sizeof *v) == 0 &&
         hs_write_all(fd, t->names, t->n_names) == 0;
    free(v);
    if (close(fd) != 0 || !ok || rename(tmp, k->cache) != 0)
        unlink(tmp);
}

static void load_full(hs_ksyms *k)
{
    k->full_tried = 1;
    tab_parse(&k->full, k->kallsyms);
}

/* The core kernel's symbols: from the cache, or read in full (and cached). */
static void load_core(hs_ksyms *k)
{
    k->core_tried = 1;
    cache_hdr key;
    int keyed = k->cache && cache_key(k, &key) == 0;
    if (keyed && cache_read(k, &key) == 0)
        return;
    load_full(k);
    if (keyed && k->full.n)
        cache_write(k, &key);
}

const char *hs_ksyms_lookup(hs_ksyms *k, uint64_t addr)
{
    if (!k)
        return NULL;
    if (!k->core_tried && !k->full_tried)
        load_core(k);
    const ktab *c = &k->core;
    if (!k->full.n && c->n && addr >= c->v[0].addr && addr <= c->v[c->n - 1].addr)
        return tab_lookup(c, addr);
    if (!k->full_tried) /* a module's, BPF's: they change within a boot */
        load_full(k);
    return tab_lookup(k->full.n ? &k->full : c, addr);
}
