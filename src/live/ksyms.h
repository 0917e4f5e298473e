/* ksyms.h — kernel symbol table from /proc/kallsyms: a kernel address to the
 * name of the function containing it (as perf names kernel frames). */
#ifndef HS_LIVE_KSYMS_H
#define HS_LIVE_KSYMS_H

#include <stddef.h>
#include <stdint.h>

typedef struct hs_ksyms hs_ksyms;

/* Read /proc/kallsyms (path NULL) or another file in its format, now and
 * in full. NULL when it cannot be read or every address is 0
 * (kptr_restrict hides them). */
hs_ksyms *hs_ksyms_load(const char *path);
/* A table that reads nothing until the first lookup, then the core
 * kernel's symbols from the cache file (written there by the first full
 * read of this boot; cache NULL or "": no cache), and kallsyms in full only
 * for an address outside them (modules, BPF). NULL paths: /proc/kallsyms,
 * /proc/sys/kernel/random/boot_id. NULL out of memory. */
hs_ksyms *hs_ksyms_lazy(const char *kallsyms, const char *cache, const char *boot_id);
/* The cache file: $HOTSPUR_KSYMS_CACHE (set but empty: none), else
 * $XDG_CACHE_HOME/hotspur/kallsyms, else ~/.cache/hotspur/kallsyms; in
 * buf, or NULL for none. */
const char *hs_ksyms_cache_path(char *buf, size_t len);
void hs_ksyms_free(hs_ksyms *k);
/* The function containing addr, or NULL (also when nothing could be read).
 * Owned by k. */
const char *hs_ksyms_lookup(hs_ksyms *k, uint64_t addr);

#endif
