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
#include "symbolize/symbolize.h"
#include "base/hashmap.h"
#include "base/strtab.h"
#include "base/vec.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* From libstdc++ (C++ ABI); linked through the CMake target. */
#include <libiberty/demangle.h> /* cplus_demangle: Rust names */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

#define HS_MAX_OPEN_OBJECTS 48 /* Dwfl sessions (each holds 1-3 fds) open at once */
#define HS_MAX_CHAIN 64        /* inline frames per address we keep */
#define HS_MAX_DIE_DEPTH 128   /* recursion bound when walking (hostile) DWARF */

/* ------------------------------------------------------------------ */
/* small containers                                                    */

/* Interned strings (base/strtab.h; a zeroed table is empty): the interned
 * copy of s, a stable pointer (NULL only on out of memory). */
static const char *hs_intern(hs_strtab *t, const char *s)
{
    uint32_t id = hs_strtab_intern(t, s ? s : "");
    return id == UINT32_MAX ? NULL : hs_strtab_get(t, id);
}

/* ------------------------------------------------------------------ */
/* data model                                                          */

/* One function instance in a CU: a concrete subprogram or an inlined copy. */
typedef struct {
    Dwarf_Die die;
    int32_t parent; /* enclosing instance (index in the CU), -1 for a subprogram */
    bool resolved;
    const char *name, *sysname; /* interned; name "" if DWARF has none */
    int64_t decl_line;
    const char *call_file; /* where this inlined copy was called (interned) */
    int64_t call_line;
} hs_fn;

typedef struct {
    uint64_t lo, hi; /* DWARF addresses, [lo, hi) */
    uint32_t fn, depth;
} hs_inl_range;

typedef struct {
    uint64_t lo, hi;
    uint32_t fn;
    uint32_t inl_begin, inl_end; /* its inlined copies' ranges in cu->inls */
} hs_top_range;

typedef struct {
    Dwarf_Die cudie;
    hs_fn *fns;
    size_t n_fns, cap_fns;
    hs_top_range *tops;
    size_t n_tops, cap_tops;
    hs_inl_range *inls;
    size_t n_inls, cap_inls;
    Dwarf_Files *files;
    size_t n_files;
    bool files_tried;
} hs_cu;

typedef struct {
    uint64_t lo, hi; /* DWARF addresses */
    Dwarf_Off cu_off;
} hs_cu_range;

/* An ELF code symbol: [lo, hi) in run-time addresses; name is valid while
 * the object is open. */
typedef struct {
    uint64_t lo, hi;
    const char *name;
    int rank; /* higher is preferred: sized over sizeless, global over weak over local */
} hs_sym;

/* A PT_LOAD segment, for placing a profile's mapping (add_mapping). */
typedef struct {
    uint64_t offset, filesz, vaddr;
    bool exec;
} hs_load;

#define HS_MAX_LOADS 16

/* An ELF object. Its Dwfl session places it at its link-time addresses
 * (bias 0), so one object serves every address space it is mapped in (all
 * the profiles of a `hotspur record` run): lookups are translated by the
 * range's bias, and answers are cached by (object, link-time address). */
typedef struct {
    char *name;       /* path, or the image's name */
    const char *base; /* basename of name */
    bool is_image;
    void *image;
    size_t image_size;
    bool fixed; /* ET_EXEC: mapped at its link-time addresses */
    hs_load loads[HS_MAX_LOADS];
    size_t n_loads;
    char build_id[129];
    int state; /* 0 closed, 1 open, -1 cannot be opened */
    uint64_t last_use;
    /* valid while open */
    Dwfl *dwfl;
    Dwfl_Module *mod;
    Dwarf *dw;
    Dwarf_Addr dwbias;
    hs_cu_range *cu_ranges;
    size_t n_cu_ranges, cap_cu_ranges;
    bool cu_ranges_built;
    hs_sym *syms; /* code symbols sorted by address (built on first need) */
    size_t n_syms, cap_syms;
    bool syms_built;
    hs_sym *plt; /* PLT entries named SYM@plt, sorted (built on first need) */
    size_t n_plt, cap_plt;
    bool plt_built;
    Dwarf_CFI *cfi; /* .eh_frame, for naming code without symbols by its FDE */
    bool cfi_tried;
    hs_hmap cu_index; /* CU DIE offset -> index+1 in cus */
    hs_cu **cus;
    size_t n_cus, cap_cus;
} hs_object;

typedef struct {
    uint64_t start, end;
    uint64_t bias; /* run-time address - link-time address */
    size_t obj;
    size_t seq; /* insertion order: later registrations win on overlap */
} hs_range;

/* A cached answer: frames[off .. off+n) in the frame pool. */
#define HS_RES_DWARF 1u /* answered from DWARF (inline frames are complete) */

struct hs_symbolizer {
    hs_strtab strs;
    hs_object *objs;
    size_t n_objs, cap_objs;
    hs_range *ranges;
    size_t n_ranges, cap_ranges;
    bool ranges_sorted;
    hs_hmap addr_cache; /* cache_key(obj, link-time addr) -> (off << 24) | (flags << 16) | n */
    hs_frame *pool;
    size_t n_pool, cap_pool;
    hs_hmap demangled; /* interned mangled ptr -> interned demangled ptr */
    uint64_t clock;
    size_t n_open;
};

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
    return display && *display ? hs_intern(&s->strs, hs_basename(display)) : NULL;
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
static const char *hs_demangle(hs_symbolizer *s, const char *sys)
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
        const char *in = hs_intern(&s->strs, d);
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
        f->sysname = hs_intern(&s->strs, link);
        f->name = f->sysname ? hs_demangle(s, f->sysname) : NULL;
    } else if (link) { /* C with an asm label, e.g. glibc's qsort = __GI_qsort */
        f->name = hs_intern(&s->strs, name);
        f->sysname = hs_intern(&s->strs, link);
    } else {
        f->name = f->sysname = hs_intern(&s->strs, name ? name : "");
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
            f->call_file = hs_intern(&s->strs, file ? file : "");
        }
    }
    if (!f->name || !f->sysname || !f->call_file)
        return -1;
    f->resolved = true;
    return 0;
}

/* ------------------------------------------------------------------ */
/* lookup                                                              */

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
static int hs_lookup_symtab(hs_symbolizer *s, hs_object *o, uint64_t addr, hs_frame *out)
{
    const hs_sym *sym = hs_sym_at(o, addr);
    if (!sym)
        return 0;
    const char *sys = hs_intern(&s->strs, sym->name);
    if (!sys)
        return -1;
    const char *fn = hs_demangle(s, sys);
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
    const char *in = hs_intern(&s->strs, nm);
    const char *dm = in ? hs_demangle(s, in) : NULL;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s@plt", dm ? dm : nm);
    return hs_intern(&s->strs, buf);
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
static int hs_lookup_nosym(hs_symbolizer *s, hs_object *o, uint64_t addr, hs_frame *out)
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
        if (!(name = hs_intern(&s->strs, buf)))
            return -1;
    }
    *out = (hs_frame){name, name, "", 0, 0};
    return 1;
}

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
        if (src && !(file = hs_intern(&s->strs, src)))
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
    const char *in = s && name ? hs_intern(&s->strs, name) : NULL;
    return in ? hs_demangle(s, in) : name;
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
