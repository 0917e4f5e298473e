/* modules.h — the code objects loaded in this process (executable, shared
 * libraries, the vDSO), as mappings for the profile and modules for the
 * symbolizer. Not async-signal-safe: used at write time. */
#ifndef HS_AGENT_MODULES_H
#define HS_AGENT_MODULES_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char path[PATH_MAX];
    uint64_t bias;        /* dlpi_addr */
    uint64_t start, end;  /* lowest and highest PT_LOAD address, run time */
    uint64_t file_offset; /* file offset of start */
    const void *image;    /* vDSO: its ELF image in memory, else NULL */
    size_t image_size;
    char build_id[41];    /* hex, "" if none */
} hs_module;

/* All loaded modules, and those unloaded earlier (see remember), sorted by
 * start; free() the array. 0 or -1. */
int hs_modules_collect(hs_module **mods, size_t *n);
/* In a fork child: the lock may have been held by a thread that is gone. */
void hs_modules_after_fork(void);
/* What to do when a module at [lo, hi) is found unloaded: move the frames
 * recorded in it to [to, to + hi - lo) in every table, so that a module
 * loaded later at the same addresses is not mistaken for it (the agent's
 * life cycle, which owns the tables, gives it: hs_agent_relocate_frames). */
void hs_modules_on_unload(void (*relocate)(uint64_t lo, uint64_t hi, uint64_t to));
/* The kernel's (absolute) name of the file mapped at addr, from
 * /proc/self/maps, into path: 0, or -1 (not found, not a file, or longer
 * than len: path unchanged or cut). */
int hs_modules_mapped_file(uint64_t addr, char *path, size_t len);
/* The module containing addr, or NULL. */
const hs_module *hs_modules_find(const hs_module *mods, size_t n, uint64_t addr);

#endif
