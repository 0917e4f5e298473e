/* symbolize_report.h — shared by the symbolizer's test programs: print where
 * the main executable is loaded (bias, address range) and one captured pc,
 * so tests/unit/test_symbolize.c can symbolize it from outside the process.
 * Output: "bias 0x..\nrange 0x.. 0x..\npc 0x..\n". */
#ifndef HS_SYMBOLIZE_REPORT_H
#define HS_SYMBOLIZE_REPORT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <link.h>
#include <stdint.h>
#include <stdio.h>

struct hs_report_main {
    uintptr_t bias, lo, hi;
    int done;
};

static int hs_report_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct hs_report_main *m = (struct hs_report_main *)arg;
    (void)size;
    if (m->done)
        return 1;
    m->done = 1; /* the first object is the main program */
    m->bias = info->dlpi_addr;
    m->lo = UINTPTR_MAX;
    m->hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < m->lo)
            m->lo = a;
        if (a + ph->p_memsz > m->hi)
            m->hi = a + ph->p_memsz;
    }
    return 1;
}

static int hs_report(void *pc)
{
    struct hs_report_main m;
    m.done = 0;
    dl_iterate_phdr(hs_report_cb, &m);
    if (!m.done)
        return 1;
    /* call-site address: the return address minus one */
    printf("bias 0x%lx\nrange 0x%lx 0x%lx\npc 0x%lx\n", (unsigned long)m.bias,
           (unsigned long)m.lo, (unsigned long)m.hi, (unsigned long)((uintptr_t)pc - 1));
    return 0;
}

#endif
