/* mappings.c — symbolize a profile after the fact, from its own mappings:
 * each mapping's file is opened from disk (the process that wrote the
 * profile may be gone), and "[vdso]" is read from this process's vDSO,
 * which the kernel gives every process alike (when the build IDs agree:
 * another kernel's vDSO is another file). `hotspur record` uses it so
 * that the profiled program doesn't pay for symbolization at exit. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "symbolize/symbolize.h"

int hs_own_vdso(const void **image, size_t *size, char *build_id, size_t cap)
{
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)getauxval(AT_SYSINFO_EHDR);
    if (!eh || cap == 0)
        return -1;
    build_id[0] = 0;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum && !build_id[0]; i++) {
        if (ph[i].p_type != PT_NOTE)
            continue;
        /* in memory, the vDSO's file offsets are its addresses from eh */
        const unsigned char *d = (const unsigned char *)eh + ph[i].p_offset, *end = d + ph[i].p_filesz;
        while (d + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)d;
            const unsigned char *name = d + sizeof *nh, *desc = name + ((nh->n_namesz + 3) & ~3u);
            if (desc + nh->n_descsz > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
                nh->n_descsz * 2 < cap) {
                for (uint32_t k = 0; k < nh->n_descsz; k++)
                    snprintf(build_id + 2 * k, 3, "%02x", desc[k]);
                break;
            }
            d = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    *image = eh;
    *size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
    return 0;
}

/* Register this process's vDSO image for a mapping [start, limit) whose
 * build ID is want ("" : unknown, taken on trust). A profile written under
 * another kernel has another vDSO: its frames are left unnamed rather than
 * named from ours. */
static void add_own_vdso(hs_symbolizer *s, uint64_t start, uint64_t limit, const char *want)
{
    const void *img;
    size_t size;
    char bid[HS_VDSO_BUILD_ID_MAX + 1];
    if (hs_own_vdso(&img, &size, bid, sizeof bid) != 0 || (want[0] && strcmp(want, bid) != 0))
        return;
    const ElfW(Ehdr) *eh = img;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
    uint64_t lowest = UINT64_MAX;
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < lowest)
            lowest = ph[i].p_vaddr;
    if (lowest == UINT64_MAX)
        return;
    hs_symbolizer_add_image(s, "[vdso]", eh, size, start - lowest, start, limit);
}

int hs_symbolize_needed(const hs_profile *p)
{
    for (size_t i = 0; i < p->n_locations; i++)
        if (p->locations[i].n_lines == 0)
            return 1;
    return 0;
}

static void add_profile_mapping(hs_symbolizer *s, const hs_profile *p, const hs_mapping *m)
{
    const char *file = hs_profile_string(p, m->filename);
    if (strcmp(file, "[vdso]") == 0)
        add_own_vdso(s, m->memory_start, m->memory_limit, hs_profile_string(p, m->build_id));
    else if (file[0] == '/')
        hs_symbolizer_add_mapping(s, file, m->memory_start, m->memory_limit, m->file_offset);
}

int hs_symbolize_with_mappings(hs_symbolizer *s, hs_profile *p)
{
    if (!hs_symbolize_needed(p))
        return 0;
    hs_symbolizer_clear_modules(s);
    for (size_t i = 0; i < p->n_mappings; i++)
        add_profile_mapping(s, p, &p->mappings[i]);
    return hs_symbolize_profile(s, p);
}

static int cmp_space(const void *a, const void *b, void *arg)
{
    const uint64_t *space = arg;
    uint64_t x = space[*(const size_t *)a], y = space[*(const size_t *)b];
    if (x != y)
        return x < y ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

int hs_symbolize_spaces(hs_symbolizer *s, hs_profile *p, const uint64_t *space)
{
    if (!hs_symbolize_needed(p))
        return 0;
    size_t n = p->n_mappings;
    size_t *order = malloc((n + 1) * sizeof *order);
    unsigned char *want = calloc(n + 1, 1);
    int rc = order && want ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        order[i] = i;
    if (rc == 0)
        qsort_r(order, n, sizeof *order, cmp_space, (void *)space);
    /* one space at a time: its mappings alone are the symbolizer's modules */
    for (size_t a = 0, b; rc == 0 && a < n; a = b) {
        for (b = a; b < n && space[order[b]] == space[order[a]]; b++)
            ;
        if (space[order[a]] == 0)
            continue;
        hs_symbolizer_clear_modules(s);
        memset(want, 0, n);
        for (size_t k = a; k < b; k++) {
            add_profile_mapping(s, p, &p->mappings[order[k]]);
            want[order[k]] = 1;
        }
        rc = hs_symbolize_profile_some(s, p, want);
    }
    /* locations without a mapping are named as unknown addresses */
    if (rc == 0) {
        hs_symbolizer_clear_modules(s);
        memset(want, 0, n);
        want[n] = 1;
        rc = hs_symbolize_profile_some(s, p, want);
    }
    free(order);
    free(want);
    return rc;
}
