/* symbolize.c — address -> function, file, line and inline chain (elfutils).
 *
 * Each registered ELF object (a file, or an in-memory image such as the vDSO)
 * gets its own Dwfl session, opened lazily on the first lookup in its range and
 * closed again when too many are open (so a process with hundreds of
 * libraries does not run out of file descriptors). Lookups go:
 *
 *   address cache -> object range (binary search) -> compilation unit
 *   (own CU range table, built once per object, dwfl's aranges as fallback)
 *   -> per-CU function index (built once per CU: every subprogram and
 *   inlined-subroutine instance with its pc ranges) -> the inline chain,
 *   with file:line from the line table for the innermost frame and
 *   DW_AT_call_file/DW_AT_call_line for the callers.
 *
 * Without DWARF for an address we use the ELF symbol table (.symtab, from a
 * separate debug file if needed, else .dynsym). Separate debug files are found
 * by build-id (/usr/lib/debug/.build-id/xx/yyyy.debug) and .gnu_debuglink;
 * unlike dwfl_standard_find_debuginfo we never ask a debuginfod server (this
 * code runs inside the profiled process at exit; no network access there).
 *
 * All strings handed out are interned in the symbolizer and live until
 * hs_symbolizer_free(). No global mutable state; not thread-safe per instance.
 */
#define _GNU_SOURCE
#include "symbolize/symbolize_internal.h"

/* Interned strings (base/strtab.h; a zeroed table is empty): the interned
 * copy of s, a stable pointer (NULL only on out of memory). */
const char *hs_sym_intern(hs_strtab *t, const char *s)
{
    uint32_t id = hs_strtab_intern(t, s ? s : "");
    return id == UINT32_MAX ? NULL : hs_strtab_get(t, id);
}

/* ------------------------------------------------------------------ */
/* debug file lookup without debuginfod                                */

static bool hs_same_file(int fd, const char *path)
{
    struct stat a, b;
    return path && fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

static bool hs_crc_matches(int fd, uint32_t want)
{
    unsigned char buf[65536];
    uLong crc = crc32(0L, Z_NULL, 0);
    off_t off = 0;
    for (;;) {
        ssize_t n = pread(fd, buf, sizeof buf, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return false;
        if (n == 0)
            break;
        crc = crc32(crc, buf, (uInt)n);
        off += n;
    }
    return (uint32_t)crc == want;
}

/* Is the file at fd a plausible debug file for mod? Build-ids must match when
 * the module has one; otherwise the .gnu_debuglink CRC must (if given). */
static bool hs_debug_file_ok(Dwfl_Module *mod, int fd, GElf_Word crc)
{
    const unsigned char *bits = NULL;
    GElf_Addr vaddr;
    int len = dwfl_module_build_id(mod, &bits, &vaddr);
    if (len > 0) {
        Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!e)
            return false;
        const void *dbits = NULL;
        ssize_t dlen = dwelf_elf_gnu_build_id(e, &dbits);
        bool ok = dlen == len && memcmp(bits, dbits, (size_t)len) == 0;
        elf_end(e);
        return ok;
    }
    return crc == 0 || hs_crc_matches(fd, crc);
}

static int hs_try_debug_path(Dwfl_Module *mod, const char *main_file, const char *cand,
                             GElf_Word crc, char **out_name)
{
    int fd = open(cand, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (hs_same_file(fd, main_file) || !hs_debug_file_ok(mod, fd, crc)) {
        close(fd);
        return -1;
    }
    *out_name = strdup(cand);
    if (!*out_name) {
        close(fd);
        return -1;
    }
    return fd;
}

/* .gnu_debuglink search: DIR/LINK, DIR/.debug/LINK, /usr/lib/debug/DIR/LINK. */
static int hs_find_by_debuglink(Dwfl_Module *mod, const char *file_name, const char *link,
                                GElf_Word crc, char **out_name)
{
    const char *slash = strrchr(file_name, '/');
    if (!slash || file_name[0] != '/')
        return -1;
    int dirlen = (int)(slash - file_name);
    const char *fmts[] = {"%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s"};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        char *cand = NULL;
        if (asprintf(&cand, fmts[i], dirlen, file_name, link) < 0)
            return -1;
        int fd = hs_try_debug_path(mod, file_name, cand, crc, out_name);
        free(cand);
        if (fd >= 0)
            return fd;
    }
    return -1;
}

static int hs_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                             GElf_Addr base, const char *file_name, const char *debuglink_file,
                             GElf_Word debuglink_crc, char **debuginfo_file_name)
{
    int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
                                          debuglink_crc, debuginfo_file_name);
    if (fd >= 0 || !debuglink_file || !file_name)
        return fd;
    if (debuglink_file[0] == '/') {
        /* a dwz alternate file named by absolute path (.gnu_debugaltlink) */
        fd = open(debuglink_file, O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && !(*debuginfo_file_name = strdup(debuglink_file))) {
            close(fd);
            fd = -1;
        }
        return fd;
    }
    if (strchr(debuglink_file, '/'))
        return -1;
    fd = hs_find_by_debuglink(mod, file_name, debuglink_file, debuglink_crc, debuginfo_file_name);
    if (fd >= 0)
        return fd;
    char *canon = realpath(file_name, NULL);
    if (canon && strcmp(canon, file_name) != 0)
        fd = hs_find_by_debuglink(mod, canon, debuglink_file, debuglink_crc, debuginfo_file_name);
    free(canon);
    return fd;
}

/* Never called for modules reported with dwfl_report_elf (we hand over the
 * file); defined so dwfl cannot go looking elsewhere (or to debuginfod). */
static int hs_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                       char **file_name, Elf **elfp)
{
    (void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)elfp;
    errno = ENOENT;
    return -1;
}

static const Dwfl_Callbacks hs_dwfl_callbacks = {
    .find_elf = hs_find_elf,
    .find_debuginfo = hs_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = NULL,
};

/* ------------------------------------------------------------------ */
/* objects: registration, opening, closing                             */

/* Check that e is an ELF object we can use; note its build-id, type and
 * PT_LOAD segments in o. */
static int hs_inspect_elf(Elf *e, hs_object *o)
{
    GElf_Ehdr eh;
    if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh))
        return -1;
    const void *bits = NULL;
    ssize_t n = dwelf_elf_gnu_build_id(e, &bits);
    o->build_id[0] = '\0';
    if (n > 0 && bits)
        hs_hex(bits, (size_t)n, o->build_id, sizeof o->build_id);
    o->fixed = eh.e_type == ET_EXEC;
    size_t nph = 0;
    if (elf_getphdrnum(e, &nph) != 0)
        nph = 0;
    for (size_t i = 0; i < nph && o->n_loads < HS_MAX_LOADS; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
            o->loads[o->n_loads++] = (hs_load){ph.p_offset, ph.p_filesz, ph.p_vaddr, (ph.p_flags & PF_X) != 0};
    }
    return 0;
}

static void hs_cu_free(hs_cu *cu)
{
    if (!cu)
        return;
    free(cu->fns);
    free(cu->tops);
    free(cu->inls);
    free(cu);
}

static void hs_object_close(hs_symbolizer *s, hs_object *o)
{
    if (o->state != 1)
        return;
    for (size_t i = 0; i < o->n_cus; i++)
        hs_cu_free(o->cus[i]);
    free(o->cus);
    o->cus = NULL;
    o->n_cus = o->cap_cus = 0;
    hs_hmap_free(&o->cu_index);
    free(o->cu_ranges);
    o->cu_ranges = NULL;
    o->n_cu_ranges = o->cap_cu_ranges = 0;
    o->cu_ranges_built = false;
    free(o->syms);
    o->syms = NULL;
    o->n_syms = o->cap_syms = 0;
    o->syms_built = false;
    free(o->plt);
    o->plt = NULL;
    o->n_plt = o->cap_plt = 0;
    o->plt_built = false;
    if (o->cfi)
        dwarf_cfi_end(o->cfi);
    o->cfi = NULL;
    o->cfi_tried = false;
    dwfl_end(o->dwfl); /* closes the fds it owns */
    o->dwfl = NULL;
    o->mod = NULL;
    o->dw = NULL;
    o->state = 0;
    s->n_open--;
}

static int hs_image_fd(const hs_object *o)
{
    int fd = memfd_create("hotspur-image", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    const char *p = o->image;
    size_t left = o->image_size;
    while (left > 0) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            close(fd);
            return -1;
        }
        p += n;
        left -= (size_t)n;
    }
    return fd;
}

/* Open o's Dwfl session if needed. 0, or -1 if the object is unusable. */
static int hs_object_open(hs_symbolizer *s, hs_object *o)
{
    o->last_use = ++s->clock;
    if (o->state != 0)
        return o->state == 1 ? 0 : -1;
    while (s->n_open >= HS_MAX_OPEN_OBJECTS) { /* evict the least recently used */
        hs_object *lru = NULL;
        for (size_t i = 0; i < s->n_objs; i++)
            if (s->objs[i].state == 1 && (!lru || s->objs[i].last_use < lru->last_use))
                lru = &s->objs[i];
        if (!lru)
            break;
        hs_object_close(s, lru);
    }
    int fd = o->is_image ? hs_image_fd(o) : open(o->name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1; /* maybe transient (EMFILE): try again next time */
    Dwfl *d = dwfl_begin(&hs_dwfl_callbacks);
    if (!d) {
        close(fd);
        return -1;
    }
    dwfl_report_begin(d);
    /* With add_p_vaddr, base is the load bias: module address = bias + p_vaddr;
     * 0 here: the module sits at its link-time addresses (see hs_object). */
    Dwfl_Module *m = dwfl_report_elf(d, o->base, o->is_image ? o->base : o->name, fd, 0, true);
    if (!m) {
        close(fd); /* not taken over by dwfl on failure */
        dwfl_end(d);
        o->state = -1;
        return -1;
    }
    if (dwfl_report_end(d, NULL, NULL) != 0) {
        dwfl_end(d);
        o->state = -1;
        return -1;
    }
    o->dwfl = d;
    o->mod = m;
    o->dw = dwfl_module_getdwarf(m, &o->dwbias); /* NULL: no DWARF, symbols only */
    o->state = 1;
    s->n_open++;
    return 0;
}

/* Place object obj at [start, end) with the given bias. (Cached answers
 * stay valid: they are per object and link-time address.) */
static int hs_add_range(hs_symbolizer *s, size_t obj, uint64_t bias, uint64_t start, uint64_t end)
{
    if (HS_VEC_RESERVE(s->ranges, s->cap_ranges, s->n_ranges + 1) < 0)
        return -1;
    s->ranges[s->n_ranges] = (hs_range){start, end, bias, obj, s->n_ranges};
    s->n_ranges++;
    s->ranges_sorted = false;
    return 0;
}

/* A new object (taken over), placed at [start, end). */
static int hs_add_object(hs_symbolizer *s, hs_object *o, uint64_t bias, uint64_t start, uint64_t end)
{
    if (HS_VEC_RESERVE(s->objs, s->cap_objs, s->n_objs + 1) < 0 || hs_add_range(s, s->n_objs, bias, start, end) < 0)
        return -1;
    s->objs[s->n_objs++] = *o;
    return 0;
}

static const char *hs_basename(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static int hs_object_init(hs_object *o, const char *name)
{
    memset(o, 0, sizeof *o);
    o->name = strdup(name);
    if (!o->name)
        return -1;
    o->base = hs_basename(o->name);
    return 0;
}

/* Objects opened under another name than their own (add_module_named)
 * keep that name's basename here: o->base points into it. */
static const char *hs_display_base(hs_symbolizer *s, const char *display)
{
    return display && *display ? hs_sym_intern(&s->strs, hs_basename(display)) : NULL;
}

/* The object of the file at path, registered once per symbolizer (a
 * library's several mappings, and the same library in every profile, share
 * one Dwfl session): its index, or -1 out of memory. Validated when first
 * registered (cheap: mmap + ELF header + program headers + notes), opened
 * for real lazily; one that is no usable ELF is kept with state -1, so its
 * ranges yield "0xADDR [name]". */
static ssize_t hs_file_object(hs_symbolizer *s, const char *path, const char *display)
{
    for (size_t i = 0; i < s->n_objs; i++)
        if (!s->objs[i].is_image && strcmp(s->objs[i].name, path) == 0)
            return (ssize_t)i;
    hs_object o;
    if (hs_object_init(&o, path) < 0 || HS_VEC_RESERVE(s->objs, s->cap_objs, s->n_objs + 1) < 0) {
        free(o.name);
        return -1;
    }
    const char *base = hs_display_base(s, display);
    if (display && *display && !base) {
        free(o.name);
        return -1;
    }
    if (base)
        o.base = base;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
    if (hs_inspect_elf(e, &o) < 0)
        o.state = -1;
    if (e)
        elf_end(e);
    if (fd >= 0)
        close(fd);
    s->objs[s->n_objs] = o;
    return (ssize_t)s->n_objs++;
}

int hs_symbolizer_add_module(hs_symbolizer *s, const char *path, uint64_t bias, uint64_t start,
                             uint64_t end)
{
    return hs_symbolizer_add_module_named(s, path, NULL, bias, start, end);
}

int hs_symbolizer_add_module_named(hs_symbolizer *s, const char *path, const char *name, uint64_t bias,
                                   uint64_t start, uint64_t end)
{
    if (!s || !path || !*path || start >= end)
        return -1;
    ssize_t i = hs_file_object(s, path, name);
    if (i < 0 || hs_add_range(s, (size_t)i, bias, start, end) < 0)
        return -1;
    return s->objs[i].state == -1 ? -1 : 0;
}

int hs_symbolizer_add_image(hs_symbolizer *s, const char *name, const void *image, size_t size,
                            uint64_t bias, uint64_t start, uint64_t end)
{
    if (!s || !image || size == 0 || start >= end)
        return -1;
    if (!name || !*name)
        name = "[memory]";
    for (size_t i = 0; i < s->n_objs; i++) { /* the same image (the vDSO of every profile) */
        const hs_object *e = &s->objs[i];
        if (e->is_image && e->image_size == size && strcmp(e->name, name) == 0 && memcmp(e->image, image, size) == 0)
            return hs_add_range(s, i, bias, start, end) < 0 ? -1 : e->state == -1 ? -1 : 0;
    }
    hs_object o;
    if (hs_object_init(&o, name) < 0)
        return -1;
    o.is_image = true;
    o.image = malloc(size);
    if (!o.image) {
        free(o.name);
        return -1;
    }
    memcpy(o.image, image, size);
    o.image_size = size;
    Elf *e = elf_memory(o.image, size);
    int ok = hs_inspect_elf(e, &o);
    if (e)
        elf_end(e);
    if (ok < 0)
        o.state = -1;
    if (hs_add_object(s, &o, bias, start, end) < 0) {
        free(o.image);
        free(o.name);
        return -1;
    }
    return ok;
}

int hs_symbolizer_add_mapping(hs_symbolizer *s, const char *path, uint64_t start, uint64_t limit,
                              uint64_t file_offset)
{
    if (!s || !path || !*path || start >= limit)
        return -1;
    ssize_t i = hs_file_object(s, path, NULL);
    if (i < 0 || s->objs[i].state == -1)
        return -1;
    const hs_object *o = &s->objs[i];
    uint64_t bias = 0;
    bool found = o->fixed; /* ET_EXEC: fixed addresses */
    for (size_t k = 0; k < o->n_loads && !o->fixed; k++) {
        const hs_load *l = &o->loads[k];
        if (file_offset < l->offset || file_offset >= l->offset + l->filesz)
            continue;
        /* prefer the executable segment when several match */
        if (found && !l->exec)
            continue;
        bias = start - (l->vaddr + (file_offset - l->offset));
        found = true;
    }
    if (!found)
        return -1;
    return hs_add_range(s, (size_t)i, bias, start, limit);
}

void hs_symbolizer_clear_modules(hs_symbolizer *s)
{
    if (!s)
        return;
    s->n_ranges = 0;
    s->ranges_sorted = true;
}

int hs_elf_build_id(const char *path, char *out, size_t cap)
{
    if (cap)
        out[0] = '\0';
    if (elf_version(EV_CURRENT) == EV_NONE)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    int rc = -1;
    if (e && elf_kind(e) == ELF_K_ELF) {
        const void *bits = NULL;
        ssize_t n = dwelf_elf_gnu_build_id(e, &bits);
        rc = 1;
        if (n > 0 && bits && (size_t)n * 2 < cap) {
            hs_hex(bits, (size_t)n, out, cap);
            rc = 0;
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    return rc;
}

hs_symbolizer *hs_symbolizer_new(void)
{
    if (elf_version(EV_CURRENT) == EV_NONE)
        return NULL;
    return calloc(1, sizeof(hs_symbolizer));
}

void hs_symbolizer_free(hs_symbolizer *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_objs; i++) {
        hs_object_close(s, &s->objs[i]);
        free(s->objs[i].name);
        free(s->objs[i].image);
    }
    free(s->objs);
    free(s->ranges);
    free(s->pool);
    hs_hmap_free(&s->addr_cache);
    hs_hmap_free(&s->demangled);
    hs_strtab_free(&s->strs);
    free(s);
}

static int hs_range_cmp(const void *a, const void *b)
{
    const hs_range *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The object whose registered range contains addr, or NULL; *rel gets
 * addr's link-time address in it. */
static hs_object *hs_object_at(hs_symbolizer *s, uint64_t addr, uint64_t *rel)
{
    if (!s->ranges_sorted) {
        if (s->n_ranges > 1)
            qsort(s->ranges, s->n_ranges, sizeof *s->ranges, hs_range_cmp);
        s->ranges_sorted = true;
    }
    size_t lo = 0, hi = s->n_ranges; /* first range with start > addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->ranges[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Ranges normally don't overlap; if they do, prefer the latest registered. */
    const hs_range *best = NULL;
    for (size_t i = lo, k = 0; i > 0 && k < 16; i--, k++) {
        const hs_range *r = &s->ranges[i - 1];
        if (addr < r->end && (!best || r->seq > best->seq))
            best = r;
    }
    if (!best)
        return NULL;
    *rel = addr - best->bias;
    return &s->objs[best->obj];
}

const char *hs_symbolizer_build_id(hs_symbolizer *s, uint64_t addr)
{
    if (!s)
        return "";
    uint64_t rel;
    hs_object *o = hs_object_at(s, addr, &rel);
    return o ? o->build_id : "";
}

/* ------------------------------------------------------------------ */
/* per-CU function index                                               */

static int hs_cu_add_fn(hs_cu *cu, Dwarf_Die *die, int32_t parent, uint32_t *idx)
{
    if (cu->n_fns >= UINT32_MAX - 1 || HS_VEC_RESERVE(cu->fns, cu->cap_fns, cu->n_fns + 1) < 0)
        return -1;
    hs_fn *f = &cu->fns[cu->n_fns];
    memset(f, 0, sizeof *f);
    f->die = *die;
    f->parent = parent;
    *idx = (uint32_t)cu->n_fns++;
    return 0;
}

typedef struct {
    Dwarf_Die *items;
    size_t n, cap;
} hs_die_list;

/* Walk the children of die. fn: the enclosing function instance (-1 at
 * namespace level); nested subprograms are queued on pending and indexed
 * separately so each subprogram's inlined ranges stay contiguous. */
static int hs_cu_walk(hs_cu *cu, Dwarf_Die *die, int32_t fn, uint32_t depth, int level,
                      hs_die_list *pending)
{
    if (level > HS_MAX_DIE_DEPTH)
        return 0;
    Dwarf_Die child;
    if (dwarf_child(die, &child) != 0)
        return 0;
    do {
        int tag = dwarf_tag(&child);
        switch (tag) {
        case DW_TAG_subprogram: /* indexed later (declarations are skipped there) */
            if (HS_VEC_RESERVE(pending->items, pending->cap, pending->n + 1) < 0)
                return -1;
            pending->items[pending->n++] = child;
            break;
        case DW_TAG_inlined_subroutine: {
            if (fn < 0)
                break;
            uint32_t idx;
            if (hs_cu_add_fn(cu, &child, fn, &idx) < 0)
                return -1;
            Dwarf_Addr base, lo, hi;
            ptrdiff_t off = 0;
            while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
                if (lo >= hi)
                    continue;
                if (HS_VEC_RESERVE(cu->inls, cu->cap_inls, cu->n_inls + 1) < 0)
                    return -1;
                cu->inls[cu->n_inls++] = (hs_inl_range){lo, hi, idx, depth};
            }
            if (hs_cu_walk(cu, &child, (int32_t)idx, depth + 1, level + 1, pending) < 0)
                return -1;
            break;
        }
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
            if (fn >= 0 && hs_cu_walk(cu, &child, fn, depth, level + 1, pending) < 0)
                return -1;
            break;
        case DW_TAG_imported_unit: { /* dwz: a partial unit's DIEs pulled in here */
            Dwarf_Attribute a;
            Dwarf_Die unit;
            if (level == 0 && dwarf_formref_die(dwarf_attr(&child, DW_AT_import, &a), &unit) &&
                hs_cu_walk(cu, &unit, fn, depth, level + 1, pending) < 0)
                return -1;
            break;
        }
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
            if (hs_cu_walk(cu, &child, fn, depth, level + 1, pending) < 0)
                return -1;
            break;
        default:
            break;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
    return 0;
}

/* Index one concrete subprogram (queued by hs_cu_walk). */
static int hs_cu_index_subprogram(hs_cu *cu, Dwarf_Die *die, hs_die_list *pending)
{
    Dwarf_Addr base, lo, hi;
    if (dwarf_ranges(die, 0, &base, &lo, &hi) <= 0)
        return 0; /* a declaration or an abstract instance: no code */
    uint32_t idx;
    if (hs_cu_add_fn(cu, die, -1, &idx) < 0)
        return -1;
    size_t inl_begin = cu->n_inls;
    if (hs_cu_walk(cu, die, (int32_t)idx, 1, 1, pending) < 0)
        return -1;
    size_t inl_end = cu->n_inls;
    ptrdiff_t off = 0;
    while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
        if (lo >= hi)
            continue;
        if (HS_VEC_RESERVE(cu->tops, cu->cap_tops, cu->n_tops + 1) < 0)
            return -1;
        cu->tops[cu->n_tops++] =
            (hs_top_range){lo, hi, idx, (uint32_t)inl_begin, (uint32_t)inl_end};
    }
    return 0;
}

static int hs_top_cmp(const void *a, const void *b)
{
    const hs_top_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static hs_cu *hs_cu_build(Dwarf_Die *cudie)
{
    hs_cu *cu = calloc(1, sizeof *cu);
    if (!cu)
        return NULL;
    cu->cudie = *cudie;
    hs_die_list pending = {0};
    int rc = hs_cu_walk(cu, cudie, -1, 0, 0, &pending);
    /* Subprograms found while indexing others are appended to pending. */
    for (size_t i = 0; rc == 0 && i < pending.n; i++) {
        Dwarf_Die d = pending.items[i];
        rc = hs_cu_index_subprogram(cu, &d, &pending);
    }
    free(pending.items);
    if (rc < 0 || cu->n_inls > UINT32_MAX) {
        hs_cu_free(cu);
        return NULL;
    }
    if (cu->n_tops > 1)
        qsort(cu->tops, cu->n_tops, sizeof *cu->tops, hs_top_cmp);
    return cu;
}

/* ------------------------------------------------------------------ */
/* CU lookup                                                           */

static int hs_cu_range_cmp(const void *a, const void *b)
{
    const hs_cu_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Our own address -> CU table from every CU's DW_AT_ranges / low_pc, so we
 * do not depend on .debug_aranges (clang and rustc do not emit it). */
static void hs_build_cu_ranges(hs_object *o)
{
    o->cu_ranges_built = true;
    Dwarf_CU *cu = NULL;
    Dwarf_Die cudie;
    uint8_t type;
    while (dwarf_get_units(o->dw, cu, &cu, NULL, &type, &cudie, NULL) == 0) {
        if (type != DW_UT_compile && type != DW_UT_partial && type != DW_UT_skeleton)
            continue;
        Dwarf_Addr base, lo, hi;
        ptrdiff_t off = 0;
        while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
            if (lo >= hi)
                continue;
            if (HS_VEC_RESERVE(o->cu_ranges, o->cap_cu_ranges, o->n_cu_ranges + 1) < 0)
                return; /* partial table: dwfl's aranges remain as fallback */
            o->cu_ranges[o->n_cu_ranges++] = (hs_cu_range){lo, hi, dwarf_dieoffset(&cudie)};
        }
    }
    if (o->n_cu_ranges > 1)
        qsort(o->cu_ranges, o->n_cu_ranges, sizeof *o->cu_ranges, hs_cu_range_cmp);
}

/* The indexed CU containing DWARF address pc, or NULL. */
static hs_cu *hs_cu_at(hs_object *o, uint64_t addr, uint64_t pc)
{
    if (!o->cu_ranges_built)
        hs_build_cu_ranges(o);
    Dwarf_Die cudie;
    bool found = false;
    size_t lo = 0, hi = o->n_cu_ranges;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->cu_ranges[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* CU ranges may nest or overlap (e.g. partial units); look back a little. */
    for (size_t i = lo, k = 0; i > 0 && k < 8 && !found; i--, k++) {
        const hs_cu_range *r = &o->cu_ranges[i - 1];
        if (pc < r->hi && dwarf_offdie(o->dw, r->cu_off, &cudie) != NULL)
            found = true;
    }
    if (!found) {
        Dwarf_Addr b;
        Dwarf_Die *d = dwfl_module_addrdie(o->mod, addr, &b);
        if (!d || b != o->dwbias)
            return NULL;
        cudie = *d;
    }
    Dwarf_Off key = dwarf_dieoffset(&cudie);
    uint64_t v;
    if (hs_hmap_get(&o->cu_index, key, &v))
        return o->cus[v - 1];
    if (HS_VEC_RESERVE(o->cus, o->cap_cus, o->n_cus + 1) < 0)
        return NULL;
    hs_cu *cu = hs_cu_build(&cudie);
    if (!cu)
        return NULL;
    if (hs_hmap_put(&o->cu_index, key, o->n_cus + 1) < 0) {
        hs_cu_free(cu);
        return NULL;
    }
    o->cus[o->n_cus++] = cu;
    return cu;
}

/* The innermost function instance containing pc, or -1. */
static int64_t hs_cu_innermost(const hs_cu *cu, uint64_t pc)
{
    size_t lo = 0, hi = cu->n_tops;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cu->tops[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    const hs_top_range *top = NULL;
    for (size_t i = lo, k = 0; i > 0 && k < 8; i--, k++) {
        if (pc < cu->tops[i - 1].hi) {
            top = &cu->tops[i - 1];
            break;
        }
    }
    if (!top)
        return -1;
    int64_t best = top->fn;
    uint32_t best_depth = 0;
    for (uint32_t i = top->inl_begin; i < top->inl_end; i++) {
        const hs_inl_range *r = &cu->inls[i];
        if (r->lo <= pc && pc < r->hi && r->depth > best_depth) {
            best = r->fn;
            best_depth = r->depth;
        }
    }
    return best;
}

/* ------------------------------------------------------------------ */
/* names                                                               */

/* Whether a _ZN name is Rust's legacy mangling: its last component is the
 * hash "17h" + 16 hex digits, then "E" (and maybe a ".llvm.N" suffix).
 * C++'s demangler would keep the hash and the $LT$-style escapes. */
static int hs_rust_legacy(const char *sym)
{
    if (strncmp(sym, "_ZN", 3) != 0)
        return 0;
    const char *e = strstr(sym, ".llvm."); /* (escapes use dots too: "alloc..vec") */
    size_t n = e ? (size_t)(e - sym) : strlen(sym);
    if (n < 24 || sym[n - 1] != 'E' || strncmp(sym + n - 20, "17h", 3) != 0)
        return 0;
    for (size_t i = n - 17; i < n - 1; i++)
        if (!isxdigit((unsigned char)sym[i]))
            return 0;
    return 1;
}

/* Demangled form of an interned name (itself if not a mangled C++ or Rust
 * name): C++ by libstdc++'s demangler, Rust (legacy and v0) by libiberty's,
 * as rustfilt and perf print them. */
const char *hs_sym_demangle(hs_symbolizer *s, const char *sys)
{
    if (!sys || (strncmp(sys, "_Z", 2) != 0 && strncmp(sys, "_R", 2) != 0))
        return sys;
    uint64_t v;
    if (hs_hmap_get(&s->demangled, (uint64_t)(uintptr_t)sys, &v))
        return (const char *)(uintptr_t)v;
    int status = 0;
    char *d = NULL;
    if (sys[1] == 'R' || hs_rust_legacy(sys))
        d = cplus_demangle(sys, DMGL_PARAMS | DMGL_ANSI | DMGL_RUST);
    else
        d = __cxa_demangle(sys, NULL, NULL, &status);
    const char *out = sys;
    if (d) {
        const char *in = hs_sym_intern(&s->strs, d);
        if (in)
            out = in;
    }
    free(d);
    (void)hs_hmap_put(&s->demangled, (uint64_t)(uintptr_t)sys, (uint64_t)(uintptr_t)out); /* a cache */
    return out;
}

static const char *hs_die_string(Dwarf_Die *die, unsigned int at)
{
    Dwarf_Attribute mem;
    Dwarf_Attribute *a = dwarf_attr_integrate(die, at, &mem);
    return a ? dwarf_formstring(a) : NULL;
}

static const char *hs_cu_file(hs_cu *cu, Dwarf_Word idx)
{
    if (!cu->files_tried) {
        cu->files_tried = true;
        if (dwarf_getsrcfiles(&cu->cudie, &cu->files, &cu->n_files) != 0) {
            cu->files = NULL;
            cu->n_files = 0;
        }
    }
    if (!cu->files || idx >= cu->n_files)
        return NULL;
    return dwarf_filesrc(cu->files, idx, NULL, NULL);
}

/* Fill f's names, declaration line and call site (interned). -1 on OOM. */
static int hs_fn_resolve(hs_symbolizer *s, hs_cu *cu, hs_fn *f)
{
    if (f->resolved)
        return 0;
    const char *link = hs_die_string(&f->die, DW_AT_linkage_name);
    if (!link)
        link = hs_die_string(&f->die, DW_AT_MIPS_linkage_name);
    const char *name = hs_die_string(&f->die, DW_AT_name);
    if (link && (strncmp(link, "_Z", 2) == 0 || strncmp(link, "_R", 2) == 0 || !name)) {
        /* C++ or Rust (legacy _ZN..., v0 _R...) mangling: the full path */
        f->sysname = hs_sym_intern(&s->strs, link);
        f->name = f->sysname ? hs_sym_demangle(s, f->sysname) : NULL;
    } else if (link) { /* C with an asm label, e.g. glibc's qsort = __GI_qsort */
        f->name = hs_sym_intern(&s->strs, name);
        f->sysname = hs_sym_intern(&s->strs, link);
    } else {
        f->name = f->sysname = hs_sym_intern(&s->strs, name ? name : "");
    }
    int line = 0;
    f->decl_line = dwarf_decl_line(&f->die, &line) == 0 && line > 0 ? line : 0;
    f->call_file = "";
    f->call_line = 0;
    Dwarf_Attribute mem;
    Dwarf_Word w;
    if (dwarf_tag(&f->die) == DW_TAG_inlined_subroutine) {
        if (dwarf_formudata(dwarf_attr(&f->die, DW_AT_call_line, &mem), &w) == 0)
            f->call_line = (int64_t)w;
        if (dwarf_formudata(dwarf_attr(&f->die, DW_AT_call_file, &mem), &w) == 0) {
            const char *file = hs_cu_file(cu, w);
            f->call_file = hs_sym_intern(&s->strs, file ? file : "");
        }
    }
    if (!f->name || !f->sysname || !f->call_file)
        return -1;
    f->resolved = true;
    return 0;
}

/* ------------------------------------------------------------------ */
/* lookup                                                              */

/* Resolve addr in object o into frames (innermost first). Returns the count,
 * 0 if unknown, -1 on out of memory. *flags gets HS_RES_DWARF. */
static int hs_resolve(hs_symbolizer *s, hs_object *o, uint64_t addr, hs_frame *frames,
                      unsigned *flags)
{
    *flags = 0;
    if (hs_object_open(s, o) < 0)
        return 0;
    hs_cu *cu = NULL;
    uint64_t pc = addr - o->dwbias;
    if (o->dw)
        cu = hs_cu_at(o, addr, pc);
    const char *file = "";
    int64_t line = 0;
    if (cu) {
        Dwarf_Line *l = dwarf_getsrc_die(&cu->cudie, pc);
        int ln = 0;
        const char *src = l ? dwarf_linesrc(l, NULL, NULL) : NULL;
        if (l && dwarf_lineno(l, &ln) == 0 && ln > 0)
            line = ln;
        if (src && !(file = hs_sym_intern(&s->strs, src)))
            return -1;
    }
    int64_t fi = cu ? hs_cu_innermost(cu, pc) : -1;
    if (fi < 0) {
        int n = hs_lookup_symtab(s, o, addr, frames);
        if (n == 0)
            n = hs_lookup_nosym(s, o, addr, frames);
        if (n > 0) {
            frames[0].file = file;
            frames[0].line = line;
        }
        return n;
    }
    /* Chain from the innermost inlined copy out to the subprogram. */
    int32_t chain[HS_MAX_CHAIN];
    int n = 0;
    for (int32_t i = (int32_t)fi; i >= 0 && n < HS_MAX_CHAIN; i = cu->fns[i].parent)
        chain[n++] = i;
    if (n == HS_MAX_CHAIN && cu->fns[chain[n - 1]].parent >= 0) {
        /* absurdly deep: keep the outer function, drop the middle */
        int32_t i = chain[n - 1];
        while (cu->fns[i].parent >= 0)
            i = cu->fns[i].parent;
        chain[n - 1] = i;
    }
    for (int k = 0; k < n; k++) {
        hs_fn *f = &cu->fns[chain[k]];
        if (hs_fn_resolve(s, cu, f) < 0)
            return -1;
        frames[k] = (hs_frame){f->name, f->sysname, file, line, f->decl_line};
        file = f->call_file; /* the caller's position is this copy's call site */
        line = f->call_line;
    }
    /* An outer subprogram without a DWARF name: take the ELF symbol's. */
    hs_frame *outer = &frames[n - 1];
    if (!*outer->function) {
        hs_frame sf;
        if (hs_lookup_symtab(s, o, addr, &sf) > 0) {
            outer->function = sf.function;
            outer->system_name = sf.system_name;
        }
    }
    *flags = HS_RES_DWARF;
    return n;
}

/* Cached lookup: sets *res to the frames in the pool and returns the count.
 * Answers are kept per object and link-time address (key: object index + 1
 * in the top 16 bits), so they serve every profile the object is in. */
static int hs_lookup_cached(hs_symbolizer *s, uint64_t addr, const hs_frame **res,
                            unsigned *flags)
{
    uint64_t v, rel = 0;
    hs_object *o = hs_object_at(s, addr, &rel);
    size_t oi = o ? (size_t)(o - s->objs) : 0;
    bool keyed = o && rel < (1ULL << 48) && oi + 1 < (1u << 16);
    uint64_t key = keyed ? ((uint64_t)(oi + 1) << 48) | rel : 0;
    if (keyed && hs_hmap_get(&s->addr_cache, key, &v)) {
        *res = s->pool + (v >> 24);
        *flags = (unsigned)(v >> 16) & 0xff;
        return (int)(v & 0xffff);
    }
    hs_frame tmp[HS_MAX_CHAIN];
    int n = 0;
    *flags = 0;
    if (o)
        n = hs_resolve(s, o, rel, tmp, flags);
    if (n < 0)
        return -1;
    /* (reserve at least one slot so the pool is never NULL) */
    if (HS_VEC_RESERVE(s->pool, s->cap_pool, s->n_pool + (size_t)n + 1) < 0 ||
        s->n_pool + (size_t)n >= (1ULL << 40))
        return -1;
    size_t off = s->n_pool;
    if (n > 0)
        memcpy(s->pool + off, tmp, (size_t)n * sizeof *tmp);
    s->n_pool += (size_t)n;
    /* A failed open (e.g. EMFILE) leaves state 0: don't cache, retry later. */
    if (keyed && o->state != 0) {
        if (hs_hmap_put(&s->addr_cache, key, ((uint64_t)off << 24) | ((uint64_t)*flags << 16) |
                                                (uint64_t)n) < 0)
            return -1;
    }
    *res = s->pool + off;
    return n;
}

const char *hs_symbolizer_demangle(hs_symbolizer *s, const char *name)
{
    const char *in = s && name ? hs_sym_intern(&s->strs, name) : NULL;
    return in ? hs_sym_demangle(s, in) : name;
}

int hs_symbolizer_lookup(hs_symbolizer *s, uint64_t addr, hs_frame *frames, int max)
{
    if (!s || !frames || max <= 0)
        return 0;
    const hs_frame *res;
    unsigned flags;
    int n = hs_lookup_cached(s, addr, &res, &flags);
    if (n <= 0)
        return 0;
    /* Too many frames for the caller: keep the outer ones (the real function). */
    int skip = n > max ? n - max : 0;
    memcpy(frames, res + skip, (size_t)(n - skip) * sizeof *frames);
    return n - skip;
}

/* ------------------------------------------------------------------ */
/* profiles                                                            */

typedef struct {
    bool fn, file, line, inl;
} hs_map_flags;

static int hs_symbolize_location(hs_symbolizer *s, hs_profile *p, size_t li,
                                 hs_map_flags *flags)
{
    uint64_t loc_id = p->locations[li].id, addr = p->locations[li].address;
    const hs_frame *fr;
    unsigned rflags;
    int n = hs_lookup_cached(s, addr, &fr, &rflags);
    if (n < 0)
        return -1;
    hs_line lines[HS_MAX_CHAIN];
    if (n == 0) {
        char name[600];
        uint64_t rel;
        hs_object *o = hs_object_at(s, addr, &rel);
        const char *base = o ? o->base : NULL;
        if (!base) {
            const hs_mapping *m = hs_profile_mapping(p, p->locations[li].mapping_id);
            const char *mf = m ? hs_profile_string(p, m->filename) : "";
            base = *mf ? hs_basename(mf) : NULL;
        }
        if (base)
            snprintf(name, sizeof name, "0x%" PRIx64 " [%.500s]", addr, base);
        else
            snprintf(name, sizeof name, "0x%" PRIx64, addr);
        uint64_t fid = hs_profile_add_function(p, name, name, "", 0);
        if (!fid)
            return -1;
        lines[0] = (hs_line){fid, 0, 0};
        return hs_profile_set_location_lines(p, loc_id, lines, 1) < 0 ? -1 : 0;
    }
    for (int i = 0; i < n; i++) {
        /* fr points into the pool, which is stable while we add functions */
        uint64_t fid = hs_profile_add_function(p, fr[i].function, fr[i].system_name, fr[i].file,
                                               fr[i].start_line);
        if (!fid)
            return -1;
        lines[i] = (hs_line){fid, fr[i].line, 0};
        flags->file |= *fr[i].file != '\0';
        flags->line |= fr[i].line > 0;
    }
    flags->fn = true;
    flags->inl |= (rflags & HS_RES_DWARF) != 0;
    return hs_profile_set_location_lines(p, loc_id, lines, (size_t)n) < 0 ? -1 : 0;
}

int hs_symbolize_profile(hs_symbolizer *s, hs_profile *p)
{
    return hs_symbolize_profile_some(s, p, NULL);
}

int hs_symbolize_profile_some(hs_symbolizer *s, hs_profile *p, const unsigned char *want)
{
    if (!s || !p)
        return -1;
    hs_map_flags *mf = calloc(p->n_mappings + 1, sizeof *mf);
    hs_hmap by_id = {0};
    int rc = mf ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < p->n_mappings; i++)
        rc = hs_hmap_put(&by_id, p->mappings[i].id, i);
    for (size_t i = 0; rc == 0 && i < p->n_locations; i++) {
        if (p->locations[i].n_lines > 0)
            continue;
        uint64_t mi;
        int mapped = hs_hmap_get(&by_id, p->locations[i].mapping_id, &mi);
        if (want && !want[mapped ? mi : p->n_mappings])
            continue;
        hs_map_flags dummy = {0};
        hs_map_flags *f = mapped ? &mf[mi] : &dummy;
        rc = hs_symbolize_location(s, p, i, f);
    }
    for (size_t i = 0; rc == 0 && i < p->n_mappings; i++) {
        hs_mapping *m = &p->mappings[i];
        if (want && !want[i])
            continue;
        if (*hs_profile_string(p, m->build_id) == '\0') {
            const char *bid = hs_symbolizer_build_id(s, m->memory_start);
            if (*bid) {
                int64_t idx = hs_profile_str(p, bid);
                if (idx < 0) {
                    rc = -1;
                    break;
                }
                p->mappings[i].build_id = idx;
                m = &p->mappings[i];
            }
        }
        m->has_functions |= mf[i].fn;
        m->has_filenames |= mf[i].file;
        m->has_line_numbers |= mf[i].line;
        m->has_inline_frames |= mf[i].inl;
    }
    hs_hmap_free(&by_id);
    free(mf);
    return rc;
}
