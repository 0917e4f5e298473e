/* locations.c — the window's profile as `record -p/-a` builds it:
 * locations and mappings of user addresses (per process image), kernel
 * frames named from /proc/kallsyms ("FN [k]"), thread names, and the user
 * frames named at the end from each image's own mappings. */
#define _GNU_SOURCE
#include <elfutils/libdwelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "live/live_int.h"

/* ---- locations ---- */

/* The profile's mapping for m of pr (added at its first use), remembered
 * with pr's address space; with leave_names, with its file's build ID. */
uint64_t lv_user_mapping(live *L, proc *pr, map_ent *m)
{
    if (m->mapping_id)
        return m->mapping_id;
    if (L->leave_names && !m->build_id_read && m->path[0] == '/') {
        m->build_id_read = 1;
        Elf *elf = lv_shared_elf(L, pr->pid, m->path);
        const unsigned char *bits = NULL;
        ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, (const void **)&bits) : -1;
        for (ssize_t i = 0; bits && i < n && i < 20; i++)
            snprintf(m->build_id + 2 * i, 3, "%02x", bits[i]);
    }
    uint64_t id = hs_profile_add_mapping(L->p, m->start, m->end, m->off, m->path, m->build_id);
    if (!id)
        return 0;
    if (id >= L->cap_map_space) {
        size_t nc = L->cap_map_space ? L->cap_map_space * 2 : 256;
        while (nc <= id)
            nc *= 2;
        uint64_t *ns = realloc(L->map_space, nc * sizeof *ns);
        if (ns)
            L->map_space = ns;
        int *nr = ns ? realloc(L->map_root, nc * sizeof *nr) : NULL;
        if (!nr)
            return id; /* named as unknown */
        L->map_root = nr;
        memset(ns + L->cap_map_space, 0, (nc - L->cap_map_space) * sizeof *ns);
        memset(nr + L->cap_map_space, 0, (nc - L->cap_map_space) * sizeof *nr);
        L->cap_map_space = nc;
    }
    L->map_space[id] = pr->space;
    if (!pr->root) { /* its files are named as it sees them: under /proc/PID/root if its root or mounts are not ours */
        char path[64], ns[64];
        struct stat a, b, c, d;
        snprintf(path, sizeof path, "/proc/%d/root/", pr->pid);
        snprintf(ns, sizeof ns, "/proc/%d/ns/mnt", pr->pid);
        int other_root = stat(path, &a) == 0 && stat("/", &b) == 0 && (a.st_dev != b.st_dev || a.st_ino != b.st_ino);
        int other_ns = stat(ns, &c) == 0 && stat("/proc/self/ns/mnt", &d) == 0 && c.st_ino != d.st_ino;
        pr->root = other_root || other_ns ? 2 : 1;
    }
    L->map_root[id] = pr->root == 2 ? pr->pid : 0;
    return m->mapping_id = id;
}

uint64_t lv_user_location(live *L, proc *pr, uint64_t addr)
{
    bool ins;
    uint64_t *slot = hs_hmap_slot(&pr->locs, addr, &ins);
    if (!slot)
        return 0;
    if (!ins)
        return *slot;
    map_ent *m = NULL;
    for (int pass = 0; pass < 2 && !m; pass++) {
        for (size_t i = 0; i < pr->n_maps; i++)
            if (addr >= pr->maps[i].start && addr < pr->maps[i].end)
                m = &pr->maps[i];
        if (!m && pass == 0 && !pr->from_records && pr->maps_read != time(NULL))
            lv_read_maps(L, pr);
        else if (!m)
            break;
    }
    uint64_t mid = m ? lv_user_mapping(L, pr, m) : 0;
    uint64_t id = hs_profile_add_location(L->p, mid, addr, NULL, 0);
    slot = hs_hmap_slot(&pr->locs, addr, &ins);
    if (slot)
        *slot = id;
    return id;
}

uint64_t lv_kernel_location(live *L, uint64_t addr)
{
    uint64_t id;
    if (hs_hmap_get(&L->kloc, addr, &id))
        return id;
    if (!L->kmapping) /* after the programs' mappings: the first one names the profile */
        L->kmapping = hs_profile_add_mapping(L->p, 0, 0, 0, "[kernel.kallsyms]", "");
    id = hs_profile_add_location(L->p, L->kmapping, addr, NULL, 0); /* named by lv_name_kernel */
    hs_hmap_put(&L->kloc, addr, id);
    return id;
}

/* Name the window's kernel frames, after the sampling: kernel symbols that
 * must be read (ksyms.c: on a cold cache, all of /proc/kallsyms) are read
 * then, never while the ring buffers fill. */
void lv_name_kernel(live *L)
{
    size_t it = HS_HMAP_START;
    uint64_t addr, id;
    while (hs_hmap_each(&L->kloc, &it, &addr, &id)) {
        const hs_location *loc = hs_profile_location(L->p, id);
        if (!loc || loc->n_lines) /* named already (lv_kernel_location_named) */
            continue;
        char name[300];
        const char *s = hs_ksyms_lookup(L->ks, addr);
        if (s)
            snprintf(name, sizeof name, "%s [k]", s);
        else
            snprintf(name, sizeof name, "0x%" PRIx64 " [k]", addr);
        hs_line ln = {hs_profile_add_function(L->p, name, name, "", 0), 0, 0};
        hs_profile_set_location_lines(L->p, id, &ln, 1);
    }
}

int64_t lv_thread_name(live *L, int pid, int tid)
{
    uint64_t v;
    if (hs_hmap_get(&L->tid_name, (uint64_t)tid, &v))
        return (int64_t)v;
    char path[96], name[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/comm", pid, tid);
    if (lv_read_small(path, name, sizeof name))
        snprintf(name, sizeof name, "%d", tid);
    int64_t s = hs_profile_str(L->p, name);
    hs_hmap_put(&L->tid_name, (uint64_t)tid, (uint64_t)s);
    return s;
}

/* A kernel frame known by name only (/proc/PID/task/TID/stack). */
uint64_t lv_kernel_location_named(live *L, const char *fn)
{
    uint64_t key = hs_hmap_mix(hs_hmap_mix(0x6b6e616d65ULL)), id; /* never a kernel address: top bit clear */
    for (const char *c = fn; *c; c++)
        key = hs_hmap_mix(key ^ (unsigned char)*c);
    key &= ~(1ULL << 63);
    if (hs_hmap_get(&L->kloc, key, &id))
        return id;
    char name[300];
    snprintf(name, sizeof name, "%s [k]", fn);
    if (!L->kmapping)
        L->kmapping = hs_profile_add_mapping(L->p, 0, 0, 0, "[kernel.kallsyms]", "");
    hs_line ln = {hs_profile_add_function(L->p, name, name, "", 0), 0, 0};
    id = hs_profile_add_location(L->p, L->kmapping, 0, &ln, 1);
    hs_hmap_put(&L->kloc, key, id);
    return id;
}

/* Name the user frames: each from the mappings of its own process image
 * (hs_symbolize_spaces), never from another process's file at the same
 * address. With leave_names, those of files with a build ID stay
 * addresses for the server to name. */
void lv_symbolize(live *L, hs_symbolizer *keep)
{
    hs_symbolizer *s = keep ? keep : hs_symbolizer_new();
    uint64_t *space = calloc(L->p->n_mappings + 1, sizeof *space);
    int64_t *host_name = calloc(L->p->n_mappings + 1, sizeof *host_name);
    if (s && space && host_name) {
        for (size_t i = 0; i < L->p->n_mappings; i++) {
            hs_mapping *m = &L->p->mappings[i];
            space[i] = m->id < L->cap_map_space ? L->map_space[m->id] : 0;
            /* left to the server: files with a build ID (the vDSO is not a file) */
            if (L->leave_names && *hs_profile_string(L->p, m->build_id))
                space[i] = 0;
            /* a process under another root (a container): its file as it
             * sees it, while it is still there, not the host's at that path */
            int pid = m->id < L->cap_map_space ? L->map_root[m->id] : 0;
            const char *file = hs_profile_string(L->p, m->filename);
            char alt[4200];
            if (space[i] && pid && file[0] == '/' &&
                snprintf(alt, sizeof alt, "/proc/%d/root%s", pid, file) < (int)sizeof alt &&
                access(alt, R_OK) == 0) {
                host_name[i] = m->filename;
                m->filename = hs_profile_str(L->p, alt);
            }
        }
        hs_symbolize_spaces(s, L->p, space);
        for (size_t i = 0; i < L->p->n_mappings; i++) /* the profile names the path the process mapped */
            if (host_name[i])
                L->p->mappings[i].filename = host_name[i];
    }
    free(host_name);
    free(space);
    if (!keep)
        hs_symbolizer_free(s);
}
