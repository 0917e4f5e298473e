/* symbolize_elf.c — naming code from the ELF file when DWARF does not:
 * the symbol table (.symtab, else .dynsym) sorted for binary search, PLT
 * and .plt.got stubs as SYM@plt, and for code no symbol covers, the start
 * of its FDE (.eh_frame) or its file offset (libfoo.so+0x1234). The data
 * model is symbolize_internal.h's. */
#define _GNU_SOURCE
#include "symbolize/symbolize_internal.h"

/* ------------------------------------------------------------------ */
/* ELF symbol table (.symtab, else .dynsym), sorted for binary search:  */
/* dwfl_module_addrinfo scans every symbol on each call.                */

static int hs_sym_cmp(const void *a, const void *b)
{
    const hs_sym *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank > y->rank ? -1 : 1;
    return strcmp(x->name, y->name); /* deterministic among equals */
}

static void hs_build_symtab(hs_object *o)
{
    o->syms_built = true;
    int n = dwfl_module_getsymtab(o->mod);
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx = 0;
        Elf *elf = NULL;
        Dwarf_Addr b = 0;
        const char *name = dwfl_module_getsym_info(o->mod, i, &sym, &addr, &shndx, &elf, &b);
        int type = GELF_ST_TYPE(sym.st_info);
        if (!name || !*name || !elf || shndx == SHN_UNDEF || shndx == (GElf_Word)-1 ||
            sym.st_shndx == SHN_ABS ||
            (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
            continue;
        GElf_Shdr sh;
        Elf_Scn *scn = elf_getscn(elf, shndx);
        if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR))
            continue;
        uint64_t sec_end = sh.sh_addr + sh.sh_size + b;
        if (addr >= sec_end)
            continue;
        if (HS_VEC_RESERVE(o->syms, o->cap_syms, o->n_syms + 1) < 0)
            break; /* keep what we have */
        int bind = GELF_ST_BIND(sym.st_info);
        int base = bind == STB_GLOBAL ? 3 : bind == STB_WEAK ? 2 : 1;
        /* rank > 0: sized (5..7); rank < 0: sizeless (-9..-7). Sizeless
         * symbols (asm labels) extend to the next symbol, at most to their
         * section's end: hi is fixed up after sorting. */
        int rank = sym.st_size ? base + 4 : base - 10;
        uint64_t hi = sym.st_size ? addr + sym.st_size : sec_end;
        o->syms[o->n_syms++] = (hs_sym){addr, hi, name, rank};
    }
    if (o->n_syms > 1)
        qsort(o->syms, o->n_syms, sizeof *o->syms, hs_sym_cmp);
    /* Aliases share an address: keep the best name (sorted first) with the
     * largest extent. */
    size_t w = 0;
    for (size_t r = 0; r < o->n_syms; r++) {
        if (w > 0 && o->syms[w - 1].lo == o->syms[r].lo) {
            if (o->syms[r].rank > 0 && o->syms[w - 1].rank < 0)
                o->syms[w - 1] = o->syms[r]; /* a sized alias beats a label */
            else if (o->syms[r].rank > 0 && o->syms[r].hi > o->syms[w - 1].hi)
                o->syms[w - 1].hi = o->syms[r].hi;
            continue;
        }
        o->syms[w++] = o->syms[r];
    }
    o->n_syms = w;
    for (size_t i = 0; i + 1 < o->n_syms; i++)
        if (o->syms[i].rank < 0 && o->syms[i + 1].lo < o->syms[i].hi)
            o->syms[i].hi = o->syms[i + 1].lo;
}

/* The code symbol containing addr (run-time address), or NULL. */
static const hs_sym *hs_sym_at(hs_object *o, uint64_t addr)
{
    if (!o->syms_built)
        hs_build_symtab(o);
    size_t lo = 0, hi = o->n_syms;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->syms[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* a few steps back, for symbols nested in a larger one */
    for (size_t i = lo, k = 0; i > 0 && k < 4; i--, k++)
        if (addr < o->syms[i - 1].hi)
            return &o->syms[i - 1];
    return NULL;
}

/* Symbol-table answer (no DWARF function for addr): one frame. */
int hs_lookup_symtab(hs_symbolizer *s, hs_object *o, uint64_t addr, hs_frame *out)
{
    const hs_sym *sym = hs_sym_at(o, addr);
    if (!sym)
        return 0;
    const char *sys = hs_sym_intern(&s->strs, sym->name);
    if (!sys)
        return -1;
    const char *fn = hs_sym_demangle(s, sys);
    *out = (hs_frame){fn, sys, "", 0, 0};
    return 1;
}

/* ------------------------------------------------------------------ */
/* names for code without symbols                                     */

static int hs_plt_cmp(const void *a, const void *b)
{
    const hs_sym *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* "SYM@plt" (demangled) for the dynamic symbol of relocation r. */
static const char *hs_plt_name(hs_symbolizer *s, Elf *elf, Elf_Data *sd, const GElf_Shdr *dsh, const GElf_Rela *r)
{
    GElf_Sym sym;
    const char *nm;
    if (!gelf_getsym(sd, (int)GELF_R_SYM(r->r_info), &sym) || !(nm = elf_strptr(elf, dsh->sh_link, sym.st_name)) ||
        !*nm)
        return NULL;
    const char *in = hs_sym_intern(&s->strs, nm);
    const char *dm = in ? hs_sym_demangle(s, in) : NULL;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s@plt", dm ? dm : nm);
    return hs_sym_intern(&s->strs, buf);
}

static int hs_rela_off_cmp(const void *a, const void *b)
{
    const GElf_Rela *x = a, *y = b;
    return x->r_offset < y->r_offset ? -1 : x->r_offset > y->r_offset;
}

/* The stubs of .plt.got (non-lazy PLT entries: a function both called and
 * address-taken, or linked -z now): each is "[endbr64] [bnd] jmp
 * *disp(%rip)" through a GOT slot that a GLOB_DAT relocation of .rela.dyn
 * fills with the symbol, as objdump names them. */
static void hs_build_plt_got(hs_symbolizer *s, hs_object *o, Elf *elf, GElf_Addr bias, Elf_Scn *pg_scn,
                             const GElf_Shdr *pg, Elf_Scn *dyn_scn, const GElf_Shdr *dyn)
{
    Elf_Data *code = elf_getdata(pg_scn, NULL), *rd = elf_getdata(dyn_scn, NULL);
    Elf_Scn *dynsym = elf_getscn(elf, dyn->sh_link);
    GElf_Shdr dsh;
    Elf_Data *sd = dynsym ? elf_getdata(dynsym, NULL) : NULL;
    if (!code || !code->d_buf || !rd || !sd || !gelf_getshdr(dynsym, &dsh) || !dyn->sh_entsize)
        return;
    size_t nr = dyn->sh_size / dyn->sh_entsize, ng = 0;
    GElf_Rela *glob = malloc((nr ? nr : 1) * sizeof *glob);
    if (!glob)
        return;
    for (size_t i = 0; i < nr; i++) {
        GElf_Rela r;
        if (gelf_getrela(rd, (int)i, &r) && GELF_R_TYPE(r.r_info) == R_X86_64_GLOB_DAT)
            glob[ng++] = r;
    }
    qsort(glob, ng, sizeof *glob, hs_rela_off_cmp);
    uint64_t ent = pg->sh_entsize ? pg->sh_entsize : 8;
    const uint8_t *b = code->d_buf;
    for (uint64_t off = 0; off + ent <= code->d_size && ng; off += ent) {
        const uint8_t *p = b + off, *end = b + off + ent;
        if (end - p >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
            p += 4; /* endbr64 */
        if (p < end && *p == 0xf2)
            p++; /* bnd */
        if (end - p < 6 || p[0] != 0xff || p[1] != 0x25)
            continue;
        int32_t disp;
        memcpy(&disp, p + 2, 4);
        GElf_Rela key = {.r_offset = pg->sh_addr + (uint64_t)(p + 6 - b) + (uint64_t)(int64_t)disp};
        const GElf_Rela *r = bsearch(&key, glob, ng, sizeof *glob, hs_rela_off_cmp);
        const char *name = r ? hs_plt_name(s, elf, sd, &dsh, r) : NULL;
        if (!name || HS_VEC_RESERVE(o->plt, o->cap_plt, o->n_plt + 1) < 0)
            continue;
        uint64_t lo = pg->sh_addr + off + bias;
        o->plt[o->n_plt++] = (hs_sym){lo, lo + ent, name, 1};
    }
    free(glob);
}

/* PLT stubs, named as perf names them (SYM@plt): entry i of .plt.sec, and
 * lazy entry i+1 of .plt (entry 0 is the resolver's), call the symbol of
 * relocation i of .rela.plt; the stubs of .plt.got as hs_build_plt_got says. */
static void hs_build_plt(hs_symbolizer *s, hs_object *o)
{
    o->plt_built = true;
    GElf_Addr bias = 0;
    Elf *elf = dwfl_module_getelf(o->mod, &bias);
    size_t shstrndx;
    if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
        return;
    GElf_Shdr plt = {0}, pltsec = {0}, rela = {0}, pltgot = {0}, reladyn = {0};
    Elf_Scn *rela_scn = NULL, *scn = NULL, *pltgot_scn = NULL, *reladyn_scn = NULL;
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        const char *nm;
        if (!gelf_getshdr(scn, &sh) || !(nm = elf_strptr(elf, shstrndx, sh.sh_name)))
            continue;
        if (strcmp(nm, ".plt") == 0 && sh.sh_type == SHT_PROGBITS)
            plt = sh;
        else if (strcmp(nm, ".plt.sec") == 0 && sh.sh_type == SHT_PROGBITS)
            pltsec = sh;
        else if (strcmp(nm, ".rela.plt") == 0 && sh.sh_type == SHT_RELA) {
            rela = sh;
            rela_scn = scn;
        } else if (strcmp(nm, ".plt.got") == 0 && sh.sh_type == SHT_PROGBITS) {
            pltgot = sh;
            pltgot_scn = scn;
        } else if (strcmp(nm, ".rela.dyn") == 0 && sh.sh_type == SHT_RELA) {
            reladyn = sh;
            reladyn_scn = scn;
        }
    }
    if (pltgot_scn && reladyn_scn)
        hs_build_plt_got(s, o, elf, bias, pltgot_scn, &pltgot, reladyn_scn, &reladyn);
    if (!rela_scn || !rela.sh_entsize || (!plt.sh_size && !pltsec.sh_size))
        goto sort;
    Elf_Scn *dynsym = elf_getscn(elf, rela.sh_link);
    GElf_Shdr dsh;
    Elf_Data *rd = elf_getdata(rela_scn, NULL), *sd = dynsym ? elf_getdata(dynsym, NULL) : NULL;
    if (!rd || !sd || !gelf_getshdr(dynsym, &dsh))
        goto sort;
    uint64_t plt_ent = plt.sh_entsize ? plt.sh_entsize : 16;
    uint64_t sec_ent = pltsec.sh_entsize ? pltsec.sh_entsize : 16;
    size_t n = rela.sh_size / rela.sh_entsize;
    for (size_t i = 0; i < n; i++) {
        GElf_Rela r;
        if (!gelf_getrela(rd, (int)i, &r))
            continue;
        const char *name = hs_plt_name(s, elf, sd, &dsh, &r);
        if (!name)
            continue;
        if (HS_VEC_RESERVE(o->plt, o->cap_plt, o->n_plt + 2) < 0)
            break;
        if (pltsec.sh_size && (i + 1) * sec_ent <= pltsec.sh_size) {
            uint64_t lo = pltsec.sh_addr + i * sec_ent + bias;
            o->plt[o->n_plt++] = (hs_sym){lo, lo + sec_ent, name, 1};
        }
        if (plt.sh_size && (i + 2) * plt_ent <= plt.sh_size) {
            uint64_t lo = plt.sh_addr + (i + 1) * plt_ent + bias;
            o->plt[o->n_plt++] = (hs_sym){lo, lo + plt_ent, name, 1};
        }
    }
sort:
    if (o->n_plt > 1)
        qsort(o->plt, o->n_plt, sizeof *o->plt, hs_plt_cmp);
}

static const char *hs_plt_at(hs_symbolizer *s, hs_object *o, uint64_t addr)
{
    if (!o->plt_built)
        hs_build_plt(s, o);
    size_t lo = 0, hi = o->n_plt;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->plt[mid].hi <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < o->n_plt && o->plt[lo].lo <= addr ? o->plt[lo].name : NULL;
}

/* The file offset of link-time address vaddr (PT_LOAD), or vaddr itself. */
static uint64_t hs_file_offset(Elf *elf, uint64_t vaddr)
{
    size_t n;
    if (elf_getphdrnum(elf, &n) != 0)
        return vaddr;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr &&
            vaddr < ph.p_vaddr + ph.p_memsz)
            return vaddr - ph.p_vaddr + ph.p_offset;
    }
    return vaddr;
}

/* The start (link-time) of the FDE covering pc, from .eh_frame_hdr's sorted
 * table (datarel|sdata4 entries, as GNU ld, gold and lld write it); pc
 * itself when there is no table. The caller has checked (CFI) that pc has
 * an FDE, so the greatest start <= pc is its own. */
static uint64_t hs_fde_start(Elf *elf, uint64_t pc)
{
    size_t shstrndx;
    Elf_Scn *scn = NULL;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return pc;
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        const char *nm;
        if (!gelf_getshdr(scn, &sh) || !(nm = elf_strptr(elf, shstrndx, sh.sh_name)) ||
            strcmp(nm, ".eh_frame_hdr") != 0)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        const unsigned char *h = d ? d->d_buf : NULL;
        if (!h || d->d_size < 12 || h[0] != 1 || (h[1] & 0x0f) != 0x0b || (h[2] & 0x0f) != 0x03 ||
            h[3] != 0x3b)
            return pc;
        uint32_t count;
        memcpy(&count, h + 8, 4);
        if (count == 0 || 12 + (uint64_t)count * 8 > d->d_size)
            return pc;
        uint64_t lo = 0, hi = count; /* first entry with start > pc */
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            int32_t rel;
            memcpy(&rel, h + 12 + mid * 8, 4);
            if (sh.sh_addr + (int64_t)rel <= pc)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0)
            return pc;
        int32_t rel;
        memcpy(&rel, h + 12 + (lo - 1) * 8, 4);
        return sh.sh_addr + (int64_t)rel;
    }
    return pc;
}

/* A name for addr when no symbol covers it, stable across runs (never the
 * randomized run-time address): SYM@plt in a PLT; __restore_rt for the
 * signal-return trampoline (an FDE marked as a signal frame); else the
 * object and the file offset of the .eh_frame FDE containing addr, so one
 * stripped function is one name ("libz.so.1+0xaa60"); without an FDE, the
 * file offset of addr itself. One frame, or 0. */
int hs_lookup_nosym(hs_symbolizer *s, hs_object *o, uint64_t addr, hs_frame *out)
{
    const char *name = hs_plt_at(s, o, addr);
    if (!name) {
        GElf_Addr bias = 0;
        Elf *elf = dwfl_module_getelf(o->mod, &bias);
        if (!elf)
            return 0;
        if (!o->cfi_tried) {
            o->cfi_tried = true;
            o->cfi = dwarf_getcfi_elf(elf);
        }
        uint64_t pc = addr - bias, start = pc;
        bool signal = false;
        Dwarf_Frame *fr = NULL;
        if (o->cfi && dwarf_cfi_addrframe(o->cfi, pc, &fr) == 0) {
            Dwarf_Addr lo = 0, hi = 0; /* (the CFA row's range, not the FDE's) */
            if (dwarf_frame_info(fr, &lo, &hi, &signal) < 0)
                signal = false;
            free(fr);
            start = hs_fde_start(elf, pc);
        }
        char buf[600];
        if (signal)
            snprintf(buf, sizeof buf, "__restore_rt");
        else
            snprintf(buf, sizeof buf, "%.500s+0x%" PRIx64, o->base, hs_file_offset(elf, start));
        if (!(name = hs_sym_intern(&s->strs, buf)))
            return -1;
    }
    *out = (hs_frame){name, name, "", 0, 0};
    return 1;
}

