/* perfsym.c — see perfsym.h. One symbolizer per local dso (its executable
 * segments registered at their link-time addresses), opened on first use;
 * the mmap records of each dso are gathered when it is opened. */
#define _GNU_SOURCE /* memmem, strndup */
#include "report/perfsym.h"
#include "base/vec.h"

#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HS_PSYM_MAX_SEGS 8

typedef struct {
    int64_t pid;
    uint64_t start, len, pgoff;
    char *path;
    char build_id[80]; /* lowercase hex, "" when perf printed none */
} hs_psym_mmap;

typedef struct {
    uint64_t offset, filesz, vaddr;
} hs_psym_seg;

typedef struct {
    char *path;
    bool ok;      /* a local ELF file with executable segments */
    bool fixed;   /* ET_EXEC: run-time addresses are its link-time ones */
    bool refused; /* its build-id differs from the one perf recorded */
    hs_psym_seg segs[HS_PSYM_MAX_SEGS];
    size_t n_segs;
    hs_symbolizer *sym;
    size_t *mmaps; /* indexes into hs_psym.mmaps */
    size_t n_mmaps;
} hs_psym_module;

struct hs_psym {
    hs_psym_mmap *mmaps;
    size_t n_mmaps, cap_mmaps;
    hs_psym_module *mods;
    size_t n_mods, cap_mods;
    size_t mismatches;
};

hs_psym *hs_psym_new(void)
{
    return calloc(1, sizeof(hs_psym));
}

void hs_psym_free(hs_psym *ps)
{
    if (!ps)
        return;
    for (size_t i = 0; i < ps->n_mmaps; i++)
        free(ps->mmaps[i].path);
    for (size_t i = 0; i < ps->n_mods; i++) {
        free(ps->mods[i].path);
        free(ps->mods[i].mmaps);
        hs_symbolizer_free(ps->mods[i].sym);
    }
    free(ps->mmaps);
    free(ps->mods);
    free(ps);
}

size_t hs_psym_build_id_mismatches(const hs_psym *ps)
{
    return ps ? ps->mismatches : 0;
}

static const char *skip_spaces(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* strtoull over [p, end): the number and where it stopped (p when none). */
static uint64_t number(const char *p, const char *end, int base, const char **stop)
{
    char buf[32];
    size_t n = (size_t)(end - p) < sizeof buf - 1 ? (size_t)(end - p) : sizeof buf - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    char *e;
    uint64_t v = strtoull(buf, &e, base);
    *stop = p + (e - buf);
    return v;
}

static bool is_build_id(const char *s, size_t n)
{
    if (n < 16 || n >= 80)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* "... PERF_RECORD_MMAP2 2012/2012: [0x55d8ff959000(0x1000) @ 0x1000 fe:00
 * 11809067 2742487274]: r-xp /tmp/busy", or with "<BUILDID>" in the
 * brackets; PERF_RECORD_MMAP: "[0x...(0x...) @ 0x...]: x /path". */
int hs_psym_mmap_line(hs_psym *ps, const char *line, size_t len)
{
    const char *end = line + len, *stop;
    const char *p = memmem(line, len, "PERF_RECORD_MMAP", 16);
    if (!p)
        return 0;
    p += 16;
    if (p < end && *p == '2')
        p++;
    p = skip_spaces(p, end);
    hs_psym_mmap m = {0};
    if (p < end && *p == '-')
        return 0; /* pid -1: the kernel */
    m.pid = (int64_t)number(p, end, 10, &stop);
    if (stop == p)
        return 0;
    const char *br = memchr(p, '[', (size_t)(end - p));
    if (!br)
        return 0;
    p = br + 1;
    m.start = number(p, end, 0, &stop);
    if (stop == p || stop >= end || *stop != '(')
        return 0;
    p = stop + 1;
    m.len = number(p, end, 0, &stop);
    if (stop == p || stop >= end || *stop != ')')
        return 0;
    p = skip_spaces(stop + 1, end);
    if (p >= end || *p != '@')
        return 0;
    p = skip_spaces(p + 1, end);
    m.pgoff = number(p, end, 0, &stop);
    if (stop == p)
        return 0;
    const char *close = memchr(stop, ']', (size_t)(end - stop));
    if (!close)
        return 0;
    for (p = stop; p < close;) { /* a build-id among "fe:00 11809067 0" */
        p = skip_spaces(p, close);
        const char *t = p;
        while (p < close && *p != ' ')
            p++;
        const char *a = t, *b = p;
        if (b - a > 2 && *a == '<' && b[-1] == '>')
            a++, b--;
        if (is_build_id(a, (size_t)(b - a))) {
            memcpy(m.build_id, a, (size_t)(b - a));
            m.build_id[b - a] = '\0';
        }
    }
    p = close + 1;
    if (p < end && *p == ':')
        p++;
    p = skip_spaces(p, end);
    const char *prot = p;
    while (p < end && *p != ' ')
        p++;
    if (!memchr(prot, 'x', (size_t)(p - prot)))
        return 0; /* data: no code to symbolize */
    p = skip_spaces(p, end);
    const char *pe = end;
    while (pe > p && (pe[-1] == ' ' || pe[-1] == '\t'))
        pe--;
    if (pe == p || *p != '/')
        return 0; /* [vdso], [kernel.kallsyms], anonymous */
    if (HS_VEC_RESERVE(ps->mmaps, ps->cap_mmaps, ps->n_mmaps + 1))
        return -1;
    if (!(m.path = strndup(p, (size_t)(pe - p))))
        return -1;
    ps->mmaps[ps->n_mmaps++] = m;
    return 0;
}

/* Open path: its executable PT_LOAD segments and a symbolizer for them.
 * m->ok stays false when it is not a usable local ELF file. */
static void module_open(hs_psym *ps, hs_psym_module *m)
{
    if (m->path[0] != '/')
        return;
    for (size_t i = 0; i < ps->n_mmaps; i++) {
        if (strcmp(ps->mmaps[i].path, m->path) != 0)
            continue;
        size_t *nm = realloc(m->mmaps, (m->n_mmaps + 1) * sizeof *nm);
        if (!nm)
            return;
        m->mmaps = nm;
        m->mmaps[m->n_mmaps++] = i;
    }
    if (!(m->sym = hs_symbolizer_new())) /* also elf_version() for libelf */
        return;
    int fd = open(m->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    size_t nph = 0;
    if (e && elf_kind(e) == ELF_K_ELF && gelf_getehdr(e, &eh) && elf_getphdrnum(e, &nph) == 0) {
        m->fixed = eh.e_type == ET_EXEC;
        for (size_t i = 0; i < nph && m->n_segs < HS_PSYM_MAX_SEGS; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
                ph.p_filesz > 0)
                m->segs[m->n_segs++] = (hs_psym_seg){ph.p_offset, ph.p_filesz, ph.p_vaddr};
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    for (size_t i = 0; i < m->n_segs; i++)
        if (hs_symbolizer_add_module(m->sym, m->path, 0, m->segs[i].vaddr,
                                     m->segs[i].vaddr + m->segs[i].filesz) == 0)
            m->ok = true;
}

static hs_psym_module *module_get(hs_psym *ps, const char *path)
{
    for (size_t i = 0; i < ps->n_mods; i++)
        if (strcmp(ps->mods[i].path, path) == 0)
            return &ps->mods[i];
    if (HS_VEC_RESERVE(ps->mods, ps->cap_mods, ps->n_mods + 1))
        return NULL;
    hs_psym_module *m = &ps->mods[ps->n_mods];
    memset(m, 0, sizeof *m);
    if (!(m->path = strdup(path)))
        return NULL;
    ps->n_mods++;
    module_open(ps, m);
    return m;
}

/* The link-time address of file offset off, 0 when no code segment has it. */
static int offset_to_vaddr(const hs_psym_module *m, uint64_t off, uint64_t *vaddr)
{
    for (size_t i = 0; i < m->n_segs; i++)
        if (off >= m->segs[i].offset && off - m->segs[i].offset < m->segs[i].filesz) {
            *vaddr = off - m->segs[i].offset + m->segs[i].vaddr;
            return 1;
        }
    return 0;
}

int hs_psym_lookup(hs_psym *ps, int64_t pid, const char *dso, uint64_t addr, bool leaf,
                   hs_frame *out, int max)
{
    hs_psym_module *m = module_get(ps, dso);
    if (!m || !m->ok || m->refused)
        return 0;
    const char *build_id = "";
    uint64_t vaddr = 0;
    int found = 0;
    for (size_t i = 0; i < m->n_mmaps && !found; i++) { /* a run-time address */
        const hs_psym_mmap *mm = &ps->mmaps[m->mmaps[i]];
        if (mm->pid == pid && addr >= mm->start && addr - mm->start < mm->len) {
            found = offset_to_vaddr(m, addr - mm->start + mm->pgoff, &vaddr);
            build_id = mm->build_id;
        }
    }
    if (!found) /* perf's dso-relative address: a file offset */
        found = offset_to_vaddr(m, addr, &vaddr);
    for (size_t i = 0; !found && m->fixed && i < m->n_segs; i++) /* non-PIE run-time address */
        if (addr >= m->segs[i].vaddr && addr - m->segs[i].vaddr < m->segs[i].filesz) {
            vaddr = addr;
            found = 1;
        }
    for (size_t i = 0; !*build_id && i < m->n_mmaps; i++)
        build_id = ps->mmaps[m->mmaps[i]].build_id;
    if (!found)
        return 0;
    if (*build_id) {
        const char *local = hs_symbolizer_build_id(m->sym, vaddr);
        if (strcmp(local, build_id) != 0) {
            m->refused = true;
            ps->mismatches++;
            return 0;
        }
    }
    return hs_symbolizer_lookup(m->sym, leaf || vaddr == 0 ? vaddr : vaddr - 1, out, max);
}
