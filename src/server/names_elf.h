/* names_elf.h — the ELF side of the server's naming (names_elf.c): what
 * names.c learns of a debug file before it trusts it with a build ID. */
#ifndef HS_SERVER_NAMES_ELF_H
#define HS_SERVER_NAMES_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/stack.h" /* HS_BUILD_ID_MAX */

/* One PT_LOAD segment. */
typedef struct {
    uint64_t offset, filesz, vaddr;
    bool exec;
} load_t;

typedef struct {
    char bid[HS_BUILD_ID_MAX + 1];
    load_t loads[16];
    size_t n_loads;
    bool complete, debug;
} elf_info;

/* Inspect the regular file at path: its GNU build ID (hex, "" if none), up
 * to 16 loadable segments; debug: it has .debug_info, .symtab or is a
 * vDSO image; complete: its code is in the file (not a .debug file). 0, or
 * -1 (not a readable ELF file). */
int hs_names_inspect(const char *path, elf_info *out);

#endif
