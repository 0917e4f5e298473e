/* perfsym.h — symbolizing the addresses of imported `perf script` frames
 * from the local binaries (perfscript.c's helper), with hotspur's own
 * symbolizer (symbolize.h: function, file:line, inline chain).
 *
 * perf prints two kinds of addresses: in call chains, the address relative
 * to the dso (map-relative plus the mapping's file offset: a file offset,
 * what perf 6.1 prints even when it has no symbol); on a sample printed on
 * one line (no call chain), the run-time address. A run-time address is
 * turned into a file offset with the PERF_RECORD_MMAP/MMAP2 records of
 * `perf script --show-mmap-events` (for that pid and dso); without them it
 * is used as a file offset only when it falls in the file's executable
 * segments (or, for a non-PIE executable, in their addresses), else it is
 * not resolved. When an MMAP2 record carries a build-id and the local file's
 * differs, nothing in that file is resolved. */
#ifndef HS_REPORT_PERFSYM_H
#define HS_REPORT_PERFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolize/symbolize.h"

typedef struct hs_psym hs_psym;

hs_psym *hs_psym_new(void);
void hs_psym_free(hs_psym *ps);

/* Remember an executable mapping of a side-band line (PERF_RECORD_MMAP or
 * MMAP2; other records are ignored). 0, or -1 when out of memory. */
int hs_psym_mmap_line(hs_psym *ps, const char *line, size_t len);

/* The frames (innermost first, at most max) of address addr that perf
 * printed for dso in process pid; leaf: the sampled instruction, else a
 * return address (looked up at addr - 1). Returns their number, 0 when it
 * cannot be resolved (no such file, not ELF, outside its code, build-id
 * differs). Strings live until hs_psym_free. */
int hs_psym_lookup(hs_psym *ps, int64_t pid, const char *dso, uint64_t addr, bool leaf,
                   hs_frame *out, int max);

/* How many dsos were refused for a build-id that differs from perf's. */
size_t hs_psym_build_id_mismatches(const hs_psym *ps);

#endif
