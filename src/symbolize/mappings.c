/* mappings.c — symbolize a profile after the fact, from its own mappings:
 * each mapping's file is opened from disk (the process that wrote the
 * profile may be gone), and "[vdso]" is read from this process's vDSO,
 * which the kernel gives every process alike. `hotspur record` uses it so
 * that the profiled program doesn't pay for symbolization at exit. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "symbolize/symbolize.h"

/* Register this process's vDSO image for a mapping [start, limit). */
static void add_own_vdso(hs_symbolizer *s, uint64_t start, uint64_t limit)
{
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)getauxval(AT_SYSINFO_EHDR);
    if (!eh)
        return;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
    uint64_t lowest = UINT64_MAX;
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < lowest)
            lowest = ph[i].p_vaddr;
    if (lowest == UINT64_MAX)
        return;
    size_t size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
    hs_symbolizer_add_image(s, "[vdso]", eh, size, start - lowest, start, limit);
}

int hs_symbolize_needed(const hs_profile *p)
{
    for (size_t i = 0; i < p->n_locations; i++)
        if (p->locations[i].n_lines == 0)
            return 1;
    return 0;
}

int hs_symbolize_from_mappings(hs_profile *p)
{
    if (!hs_symbolize_needed(p))
        return 0;
    hs_symbolizer *s = hs_symbolizer_new();
    if (!s)
        return -1;
    int rc = hs_symbolize_with_mappings(s, p);
    hs_symbolizer_free(s);
    return rc;
}

static void add_profile_mapping(hs_symbolizer *s, const hs_profile *p, const hs_mapping *m)
{
    const char *file = hs_profile_string(p, m->filename);
    if (strcmp(file, "[vdso]") == 0)
        add_own_vdso(s, m->memory_start, m->memory_limit);
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
