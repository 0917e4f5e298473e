/* symbolize_internal.h — what symbolize.c (objects, DWARF, the lookup) and
 * symbolize_elf.c (ELF symbol tables, PLT stubs, code without symbols)
 * share: the data model and the few calls between them. Private to
 * src/symbolize. */
#ifndef HS_SYMBOLIZE_INTERNAL_H
#define HS_SYMBOLIZE_INTERNAL_H

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

/* ---- shared by the two files ---- */

/* The interned copy of s ("" for NULL), a stable pointer (NULL only on out
 * of memory). */
const char *hs_sym_intern(hs_strtab *t, const char *s);
/* The demangled form of a (system) name, interned; name itself when it is
 * not mangled. */
const char *hs_sym_demangle(hs_symbolizer *s, const char *sys);
/* symbolize_elf.c: addr in o from the ELF symbol table (1 with *out, 0 when
 * no symbol covers it, -1 on out of memory); from PLT stubs, the FDE or the
 * file offset when there is no symbol at all (the same returns). */
int hs_lookup_symtab(hs_symbolizer *s, hs_object *o, uint64_t addr, hs_frame *out);
int hs_lookup_nosym(hs_symbolizer *s, hs_object *o, uint64_t addr, hs_frame *out);

#endif
