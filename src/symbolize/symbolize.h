/* symbolize.h — address -> function, file, line and inline chain (elfutils).
 *
 * A symbolizer is told which ELF modules were loaded where (as the agent saw
 * them with dl_iterate_phdr, or as a profile's mappings say) and answers
 * lookups from the files on disk, following separate debug files
 * (/usr/lib/debug/.build-id/..., .gnu_debuglink) when the module itself has no
 * DWARF. Stripped modules fall back to .dynsym; code no symbol covers is named
 * as perf names it and stably across runs: "SYM@plt" in a PLT, "__restore_rt"
 * for the signal trampoline, else "MODULE+0xOFF" with OFF the file offset of
 * the .eh_frame FDE (the function) containing it. Only an address outside
 * every module yields no frame (the caller prints "0xADDR [module]").
 *
 * Not async-signal-safe: it allocates. Used at profile write time.
 */
#ifndef HS_SYMBOLIZE_H
#define HS_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

typedef struct hs_symbolizer hs_symbolizer;

/* One frame of an address's inline chain. Strings are owned by the
 * symbolizer and live until hs_symbolizer_free(). */
typedef struct {
    const char *function;    /* demangled name ("" when unknown) */
    const char *system_name; /* mangled / linkage name (== function for C) */
    const char *file;        /* source file, "" when unknown */
    int64_t line;            /* 0 when unknown */
    int64_t start_line;      /* line of the function's declaration, 0 when unknown */
} hs_frame;

hs_symbolizer *hs_symbolizer_new(void);
void hs_symbolizer_free(hs_symbolizer *s);

/* Register a module: the ELF file at `path` whose load bias (run-time address
 * minus link-time address, dlpi_addr) is `bias`, covering [start, end).
 * `path` must name the file (dl_iterate_phdr's "" for the main program is
 * resolved by the caller, e.g. with readlink("/proc/self/exe")). The same
 * path and bias registered for several ranges share one open file.
 * Returns 0, or -1 if the file cannot be opened as ELF (lookups in that range
 * then return no frames). */
int hs_symbolizer_add_module(hs_symbolizer *s, const char *path, uint64_t bias, uint64_t start,
                             uint64_t end);
/* The same for a file that stands in for the module under another name:
 * a separate debug file, or a copy kept by build ID at a server. Names
 * made from the object's file name ("MODULE+0xOFF", "0xADDR [MODULE]")
 * use name's basename, as they would for the module itself. The first
 * registration of a path decides its name. */
int hs_symbolizer_add_module_named(hs_symbolizer *s, const char *path, const char *name, uint64_t bias,
                                   uint64_t start, uint64_t end);
/* Register a module whose ELF image is in memory (the vDSO); the image is copied. */
int hs_symbolizer_add_image(hs_symbolizer *s, const char *name, const void *image, size_t size,
                            uint64_t bias, uint64_t start, uint64_t end);

/* Forget where modules are (the ranges registered so far) but keep what was
 * learnt about them: open files, indexes, answers. The next profile's
 * modules are then registered: a module already known, by path (or the same
 * in-memory image), is not opened again, and its answers are reused, even at
 * another load address. The modules' files must not change meanwhile. */
void hs_symbolizer_clear_modules(hs_symbolizer *s);

/* Register a mapping as a profile describes it: the ELF file at `path` mapped
 * at [start, limit) from file offset `file_offset`; the load bias is computed
 * from the file's program headers. Returns 0, or -1 if the file is not usable
 * ELF or no PT_LOAD segment contains file_offset. */
int hs_symbolizer_add_mapping(hs_symbolizer *s, const char *path, uint64_t start, uint64_t limit,
                              uint64_t file_offset);

/* Symbolize one address (use pc-1 for return addresses: callers pass the
 * call-site address). Fills at most max frames, innermost (inlined) first,
 * the outer function last (a longer chain loses its innermost frames, never
 * the outer function). Returns the number of frames (0 if unknown).
 * Answers are cached per address; separate debug files are looked up locally
 * only (build-id, .gnu_debuglink), never through debuginfod. */
int hs_symbolizer_lookup(hs_symbolizer *s, uint64_t addr, hs_frame *frames, int max);

/* The demangled form of a linkage name: C++ (__cxa_demangle), Rust legacy
 * and v0 (libiberty, as rustfilt: no hash, no $LT$ escapes), ".llvm.N"
 * suffixes dropped; name itself when it is not mangled. Owned by s. */
const char *hs_symbolizer_demangle(hs_symbolizer *s, const char *name);

/* The GNU build ID of the ELF file at path as lowercase hex into out
 * (cap >= 129). 0, 1 when the file is ELF without a build ID, -1 when it
 * is not a readable ELF file. */
int hs_elf_build_id(const char *path, char *out, size_t cap);

/* GNU build-id of the module containing addr, as lowercase hex ("" if none). */
const char *hs_symbolizer_build_id(hs_symbolizer *s, uint64_t addr);

/* Give every location of p that has no lines its function/file/line chain
 * (unknown addresses become a function named "0xADDR [module basename]"),
 * and set the mappings' build_id and has_* flags. Modules must have been
 * added already. 0 on success, -1 on out of memory. */
int hs_symbolize_profile(hs_symbolizer *s, hs_profile *p);

/* The same for some of p's locations only: those whose mapping is at an
 * index i of p->mappings with want[i] != 0, and with want[p->n_mappings]
 * those without a mapping (want: p->n_mappings + 1 flags); only those
 * mappings get their build_id and flags. want NULL: all, as
 * hs_symbolize_profile. */
int hs_symbolize_profile_some(hs_symbolizer *s, hs_profile *p, const unsigned char *want);

/* Whether some location of p has no lines (something to symbolize). */
int hs_symbolize_needed(const hs_profile *p);

/* This process's vDSO: its ELF image in memory (from AT_SYSINFO_EHDR to
 * the end of its section headers) and its GNU build ID as lowercase hex
 * into build_id ("" if it has none; cap: at least
 * HS_VDSO_BUILD_ID_MAX + 1). 0, or -1 when there is no vDSO. */
#define HS_VDSO_BUILD_ID_MAX 128
int hs_own_vdso(const void **image, size_t *size, char *build_id, size_t cap);

/* Symbolize the locations of p that have no lines from p's own mappings,
 * with symbolizer s, whose modules are replaced by p's (see
 * hs_symbolizer_clear_modules): files from disk, "[vdso]" from this
 * process's vDSO when the mapping's build ID is the vDSO's (or the mapping
 * has none); 0, or -1 on out of memory (unknown addresses are not an
 * error). One symbolizer for many profiles of the
 * same programs (`hotspur record`'s children) opens and indexes each module
 * once. Results are the same as with a fresh symbolizer. */
int hs_symbolize_with_mappings(hs_symbolizer *s, hs_profile *p);
/* For a profile of several processes: space[i] says which address space
 * (process) p->mappings[i] belongs to. Each location is named only from the
 * mappings of its own mapping's space, so two processes with different
 * files at the same address (non-PIE programs, two builds) are never
 * confused, which one set of modules for the whole profile cannot promise.
 * Locations of a mapping of space 0 are left unnamed (for the server to
 * name: the host agent's HOTSPUR_SYMBOLIZE=server); locations without a
 * mapping are named as unknown addresses. */
int hs_symbolize_spaces(hs_symbolizer *s, hs_profile *p, const uint64_t *space);

#endif
