/* ksyms.h — kernel symbol table from /proc/kallsyms: a kernel address to the
 * name of the function containing it (as perf names kernel frames). */
#ifndef HS_LIVE_KSYMS_H
#define HS_LIVE_KSYMS_H

#include <stdint.h>

typedef struct hs_ksyms hs_ksyms;

/* Read /proc/kallsyms (path NULL) or another file in its format. NULL when
 * it cannot be read or every address is 0 (kptr_restrict hides them). */
hs_ksyms *hs_ksyms_load(const char *path);
void hs_ksyms_free(hs_ksyms *k);
/* The function containing addr, or NULL. Owned by k. */
const char *hs_ksyms_lookup(const hs_ksyms *k, uint64_t addr);

#endif
