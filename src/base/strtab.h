/* strtab.h — the string intern table every layer uses: a string gets a dense
 * id (0, 1, 2, ... in the order first seen) and a stable pointer; the same
 * bytes always get the same id. Strings live in 64 KiB chunks (one malloc
 * per chunk, not per string) and never move.
 *
 * Embed an hs_strtab (hs_strtab_init / hs_strtab_free), or allocate one
 * (hs_strtab_new / hs_strtab_delete). Functions that allocate return
 * UINT32_MAX (ids), NULL (pointers) or -1 on out of memory. */
#ifndef HS_BASE_STRTAB_H
#define HS_BASE_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "base/hashmap.h"

typedef struct {
    char **strs;      /* id -> NUL-terminated string */
    uint32_t *lens;   /* id -> its length */
    size_t n, cap;
    hs_idmap map;     /* hash of the bytes -> candidate ids */
    char *chunks;     /* the strings, packed in malloc'd chunks (a list) */
    char *free_at;    /* the next string's place in the newest chunk */
    size_t free_left;
} hs_strtab;

int hs_strtab_init(hs_strtab *t);
void hs_strtab_free(hs_strtab *t);
hs_strtab *hs_strtab_new(void);
void hs_strtab_delete(hs_strtab *t);

/* id of s (NUL-terminated), interned if new */
uint32_t hs_strtab_intern(hs_strtab *t, const char *s);
/* id of s[0..len) (need not be NUL-terminated), interned if new */
uint32_t hs_strtab_intern_len(hs_strtab *t, const char *s, size_t len);
/* id of s (NUL-terminated) if interned, else UINT32_MAX (nothing added) */
uint32_t hs_strtab_find(const hs_strtab *t, const char *s);
/* the string of id, "" for an id not given out */
static inline const char *hs_strtab_get(const hs_strtab *t, uint32_t id)
{
    return id < t->n ? t->strs[id] : "";
}
static inline size_t hs_strtab_count(const hs_strtab *t)
{
    return t->n;
}
/* No more lookups: the table's map is freed, its strings stay (a later
 * intern still works but no longer finds the strings interned before). */
void hs_strtab_seal(hs_strtab *t);
/* A copy of s kept as long as the table, not interned (no id, never found
 * by hs_strtab_intern): for strings that are mostly distinct. */
const char *hs_strtab_keep(hs_strtab *t, const char *s);

#endif
