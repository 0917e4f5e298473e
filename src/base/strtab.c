/* strtab.c — the string intern table (strtab.h). */
#include "base/strtab.h"
#include "base/vec.h"

#include <stdlib.h>
#include <string.h>

int hs_strtab_init(hs_strtab *t)
{
    memset(t, 0, sizeof *t);
    return hs_idmap_init(&t->map, 256);
}

void hs_strtab_free(hs_strtab *t)
{
    while (t->chunks) {
        char *next;
        memcpy(&next, t->chunks, sizeof next);
        free(t->chunks);
        t->chunks = next;
    }
    free(t->strs);
    free(t->lens);
    hs_idmap_free(&t->map);
    memset(t, 0, sizeof *t);
}

hs_strtab *hs_strtab_new(void)
{
    hs_strtab *t = malloc(sizeof *t);
    if (t && hs_strtab_init(t) < 0) {
        free(t);
        return NULL;
    }
    return t;
}

void hs_strtab_delete(hs_strtab *t)
{
    if (t) {
        hs_strtab_free(t);
        free(t);
    }
}

/* A copy of s[0..len) and a NUL in t's chunks: one malloc per 64 KiB of
 * strings, not one per string (whose header and rounding cost as much as a
 * short name). */
static char *store(hs_strtab *t, const char *s, size_t len)
{
    if (t->free_left < len + 1) {
        size_t size = sizeof(char *) + (len + 1 > 65536 ? len + 1 : 65536);
        char *c = malloc(size);
        if (!c)
            return NULL;
        memcpy(c, &t->chunks, sizeof t->chunks); /* the chunk before it */
        t->chunks = c;
        t->free_at = c + sizeof(char *);
        t->free_left = size - sizeof(char *);
    }
    char *d = t->free_at;
    memcpy(d, s, len);
    d[len] = '\0';
    t->free_at += len + 1;
    t->free_left -= len + 1;
    return d;
}

const char *hs_strtab_keep(hs_strtab *t, const char *s)
{
    return store(t, s, strlen(s));
}

/* The id of s[0..len) (hash h), or UINT32_MAX when not interned. */
static uint32_t lookup(const hs_strtab *t, const char *s, size_t len, uint64_t h)
{
    size_t slot = HS_HMAP_START;
    uint32_t id;
    while ((id = hs_idmap_next(&t->map, h, &slot)) != UINT32_MAX)
        if (t->lens[id] == len && memcmp(t->strs[id], s, len) == 0)
            return id;
    return UINT32_MAX;
}

uint32_t hs_strtab_intern_len(hs_strtab *t, const char *s, size_t len)
{
    if (len > UINT32_MAX - 1)
        return UINT32_MAX;
    uint64_t h = hs_hmap_hash_bytes(s, len, 0);
    uint32_t id = lookup(t, s, len, h);
    if (id != UINT32_MAX)
        return id;
    if (t->n >= UINT32_MAX - 1)
        return UINT32_MAX;
    if (t->n == t->cap) { /* strs and lens side by side: one capacity */
        size_t nc = hs_vec_grown(t->cap, t->n + 1, sizeof *t->strs);
        if (!nc || HS_VEC_RESIZE(t->strs, nc) || HS_VEC_RESIZE(t->lens, nc))
            return UINT32_MAX;
        t->cap = nc;
    }
    char *copy = store(t, s, len); /* on failure below, left unused in its chunk */
    id = (uint32_t)t->n;
    if (!copy || hs_idmap_put(&t->map, h, id) < 0)
        return UINT32_MAX;
    t->strs[t->n] = copy;
    t->lens[t->n++] = (uint32_t)len;
    return id;
}

uint32_t hs_strtab_find(const hs_strtab *t, const char *s)
{
    size_t len = strlen(s);
    return lookup(t, s, len, hs_hmap_hash_bytes(s, len, 0));
}

uint32_t hs_strtab_intern(hs_strtab *t, const char *s)
{
    return hs_strtab_intern_len(t, s, strlen(s));
}

void hs_strtab_seal(hs_strtab *t)
{
    hs_idmap_free(&t->map);
}
