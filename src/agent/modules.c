/* modules.c — enumerate the loaded code objects with dl_iterate_phdr (at
 * write time, never in a signal handler): file path (the executable's from
 * /proc/self/exe), load bias, address range, build-id from the in-memory
 * PT_NOTE, and the vDSO's in-memory image. dlclose() is interposed to
 * remember libraries before they go, so their samples keep their names. */
#define _GNU_SOURCE
#include "agent/modules.h"
#include "agent/core.h"
#include "agent/unwind.h"
#include "profile/profile.h"

#include <dlfcn.h>
#include <elf.h>
#include <pthread.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

typedef struct {
    hs_module *mods;
    size_t n, cap;
    int failed;
} collect_t;

/* First capacity of a module array: 16 records of ~4 KiB stay under
 * malloc's mmap threshold (32 took a fresh mapping, faulted in and
 * unmapped again at every process's exit write). */
#define FIRST_CAP 16

/* Room for one more record in *mods (n of *cap used): doubled when full.
 * 0, or -1 out of memory (*mods unchanged). */
static int room_for_one(hs_module **mods, size_t n, size_t *cap)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : FIRST_CAP;
    hs_module *m = realloc(*mods, ncap * sizeof *m);
    if (!m)
        return -1;
    *mods = m;
    *cap = ncap;
    return 0;
}

static void build_id_hex(const struct dl_phdr_info *info, char out[41])
{
    out[0] = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)p;
            const uint8_t *name = p + sizeof *nh;
            const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
            const uint8_t *next = desc + ((nh->n_descsz + 3) & ~3u);
            if (next > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                hs_hex(desc, nh->n_descsz > 20 ? 20 : nh->n_descsz, out, 41); /* (snprintf per byte
                                                                                 was most of a write) */
                return;
            }
            p = next;
        }
    }
}

/* The loader keeps a library's name as dlopen() was given it
 * ("./liba.so"), which means nothing to `hotspur record` (or after a
 * chdir); the kernel knows the file. */
int hs_modules_mapped_file(uint64_t addr, char *path, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return -1;
    char line[PATH_MAX + 128];
    int rc = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        int name_at = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &name_at) < 2 || !name_at)
            continue;
        if (addr < lo || addr >= hi)
            continue;
        char *name = line + name_at;
        name[strcspn(name, "\n")] = 0;
        if (name[0] == '/' && (size_t)snprintf(path, len, "%s", name) < len)
            rc = 0;
        break;
    }
    fclose(f);
    return rc;
}

static int add_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    collect_t *c = data;
    uint64_t lo = UINT64_MAX, hi = 0, off = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
        if (s < lo) {
            lo = s;
            off = ph->p_offset;
        }
        if (e > hi)
            hi = e;
    }
    if (hi == 0)
        return 0;
    if (room_for_one(&c->mods, c->n, &c->cap) != 0) {
        c->failed = 1;
        return 1;
    }
    hs_module *m = &c->mods[c->n];
    memset(m, 0, sizeof *m);
    m->bias = info->dlpi_addr;
    m->start = lo;
    m->end = hi;
    m->file_offset = off;
    build_id_hex(info, m->build_id);

    uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)vdso;
    if (vdso && (uintptr_t)info->dlpi_phdr == vdso + eh->e_phoff) {
        snprintf(m->path, sizeof m->path, "[vdso]");
        m->image = eh;
        m->image_size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
    } else if (!info->dlpi_name || !info->dlpi_name[0]) {
        ssize_t k = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
        if (k <= 0)
            return 0; /* no name: leave it out, addresses stay raw */
        m->path[k] = 0;
    } else {
        snprintf(m->path, sizeof m->path, "%s", info->dlpi_name);
        if (m->path[0] != '/')
            hs_modules_mapped_file(lo, m->path, sizeof m->path);
    }
    c->n++;
    return 0;
}

static int by_start(const void *a, const void *b)
{
    const hs_module *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static void (*g_relocate)(uint64_t lo, uint64_t hi, uint64_t to); /* hs_modules_on_unload */
/* Modules seen before a dlclose(); guarded by g_history_lock. */
static collect_t g_history;
static pthread_mutex_t g_history_lock = PTHREAD_MUTEX_INITIALIZER;

static int overlaps(const collect_t *c, const hs_module *m)
{
    for (size_t i = 0; i < c->n; i++)
        if (m->start < c->mods[i].end && c->mods[i].start < m->end)
            return 1;
    return 0;
}

/* Append the history's modules that no current module overlaps. */
static int add_history(collect_t *c)
{
    pthread_mutex_lock(&g_history_lock);
    size_t have = c->n;
    for (size_t i = 0; i < g_history.n; i++) {
        collect_t cur = {c->mods, have, c->cap, 0};
        if (overlaps(&cur, &g_history.mods[i]))
            continue;
        if (room_for_one(&c->mods, c->n, &c->cap) != 0) {
            pthread_mutex_unlock(&g_history_lock);
            return -1;
        }
        c->mods[c->n++] = g_history.mods[i];
    }
    pthread_mutex_unlock(&g_history_lock);
    return 0;
}

void hs_modules_after_fork(void)
{
    pthread_mutex_init(&g_history_lock, NULL);
}

/* Unloaded modules get addresses of their own, above any user-space
 * address (bit 62), 1 TiB apart: samples recorded in one are moved there
 * at its dlclose(), so each module instance keeps its samples even when
 * another is loaded at the same place. */
#define RETIRED_BASE (1ull << 62)
#define RETIRED_STRIDE (1ull << 40)
static uint64_t g_retired; /* modules retired so far (under g_history_lock) */

static int same_module(const hs_module *a, const hs_module *b)
{
    return a->start == b->start && a->end == b->end && strcmp(a->path, b->path) == 0;
}

/* The modules of before that are gone now were unloaded: retire them. */
static void retire_unloaded(const collect_t *before)
{
    collect_t now = {0};
    dl_iterate_phdr(add_module, &now);
    if (now.failed) {
        free(now.mods);
        return;
    }
    pthread_mutex_lock(&g_history_lock);
    for (size_t i = 0; i < before->n; i++) {
        const hs_module *m = &before->mods[i];
        int still = 0;
        for (size_t j = 0; j < now.n && !still; j++)
            still = same_module(m, &now.mods[j]);
        if (still || m->image || m->end - m->start >= RETIRED_STRIDE)
            continue;
        if (room_for_one(&g_history.mods, g_history.n, &g_history.cap) != 0)
            break;
        uint64_t to = RETIRED_BASE + g_retired++ * RETIRED_STRIDE;
        if (g_relocate)
            g_relocate(m->start, m->end, to);
        hs_module r = *m;
        r.bias = m->bias + (to - m->start); /* pc - bias stays the same */
        r.end = to + (m->end - m->start);
        r.start = to;
        g_history.mods[g_history.n++] = r;
    }
    pthread_mutex_unlock(&g_history_lock);
    free(now.mods);
}

typedef int (*dlclose_fn)(void *);

__attribute__((visibility("default"))) int dlclose(void *handle)
{
    static dlclose_fn real;
    if (!real)
        real = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
    if (!real)
        return -1;
    collect_t before = {0};
    hs_self.in_agent++;
    dl_iterate_phdr(add_module, &before);
    int rc = real(handle);
    hs_unwind_forget_code(); /* another library may load at the same addresses */
    if (!before.failed)
        retire_unloaded(&before);
    free(before.mods);
    hs_self.in_agent--;
    return rc;
}

int hs_modules_collect(hs_module **mods, size_t *n)
{
    collect_t c = {0};
    dl_iterate_phdr(add_module, &c);
    if (c.failed || add_history(&c) != 0) {
        free(c.mods);
        return -1;
    }
    qsort(c.mods, c.n, sizeof *c.mods, by_start);
    *mods = c.mods;
    *n = c.n;
    return 0;
}

const hs_module *hs_modules_find(const hs_module *mods, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (addr < mods[mid].start)
            hi = mid;
        else if (addr >= mods[mid].end)
            lo = mid + 1;
        else
            return &mods[mid];
    }
    return NULL;
}

void hs_modules_on_unload(void (*relocate)(uint64_t lo, uint64_t hi, uint64_t to))
{
    g_relocate = relocate;
}
