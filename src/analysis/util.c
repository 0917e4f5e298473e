/* util.c — small helpers for src/analysis: error formatting, a
 * string intern table and path cleaning. Nothing here knows about profiles. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis_internal.h"

void hs_an_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int hs_an_strtab_init(hs_an_strtab *t)
{
    memset(t, 0, sizeof *t);
    return hs_an_map_init(&t->map, 256);
}

void hs_an_strtab_free(hs_an_strtab *t)
{
    while (t->chunks) {
        char *next;
        memcpy(&next, t->chunks, sizeof next);
        free(t->chunks);
        t->chunks = next;
    }
    free(t->strs);
    hs_an_map_free(&t->map);
    memset(t, 0, sizeof *t);
}

/* A copy of s[0..len] in t's chunks: one malloc per 64 KiB of strings, not
 * one per string (whose header and rounding cost as much as a short name). */
static char *strtab_store(hs_an_strtab *t, const char *s, size_t len)
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
    memcpy(d, s, len + 1);
    t->free_at += len + 1;
    t->free_left -= len + 1;
    return d;
}

const char *hs_an_strtab_keep(hs_an_strtab *t, const char *s)
{
    return strtab_store(t, s, strlen(s));
}

uint32_t hs_an_strtab_intern(hs_an_strtab *t, const char *s)
{
    size_t len = strlen(s);
    uint64_t h = hs_hmap_hash_bytes(s, len, 0);
    size_t slot = (size_t)-1;
    uint32_t id;
    while ((id = hs_an_map_next(&t->map, h, &slot)) != UINT32_MAX)
        if (strcmp(t->strs[id], s) == 0)
            return id;
    if (t->n >= UINT32_MAX - 1)
        return UINT32_MAX;
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 256;
        char **ns = realloc(t->strs, nc * sizeof *ns);
        if (!ns)
            return UINT32_MAX;
        t->strs = ns;
        t->cap = nc;
    }
    char *copy = strtab_store(t, s, len); /* on failure below, left unused in its chunk */
    id = (uint32_t)t->n;
    if (!copy || hs_an_map_put(&t->map, h, id) < 0)
        return UINT32_MAX;
    t->strs[t->n++] = copy;
    return id;
}

void hs_an_strtab_seal(hs_an_strtab *t)
{
    hs_an_map_free(&t->map);
}

/* Go's filepath.Clean, in place (the write index never passes the read). */
void hs_analysis_clean_path(char *p)
{
    size_t n = strlen(p);
    int rooted = n > 0 && p[0] == '/';
    size_t w = rooted, r = rooted, dotdot = rooted;
    while (r < n) {
        if (p[r] == '/') {
            r++;
        } else if (p[r] == '.' && (r + 1 == n || p[r + 1] == '/')) {
            r++;
        } else if (p[r] == '.' && p[r + 1] == '.' && (r + 2 == n || p[r + 2] == '/')) {
            r += 2;
            if (w > dotdot) {
                w--;
                while (w > dotdot && p[w] != '/')
                    w--;
            } else if (!rooted) {
                if (w > 0)
                    p[w++] = '/';
                p[w++] = '.';
                p[w++] = '.';
                dotdot = w;
            }
        } else {
            if ((rooted && w != 1) || (!rooted && w != 0))
                p[w++] = '/';
            while (r < n && p[r] != '/')
                p[w++] = p[r++];
        }
    }
    if (w == 0)
        p[w++] = '.';
    p[w] = '\0';
}

/* pprof's report.trimPath (source.go): a configured prefix, else a search
 * directory's base name found in the path, and always /proc/self/cwd/. */
const char *hs_analysis_trim_path(const char *path, const char *trim, const char *source_path)
{
    if ((!trim || !*trim) && source_path && *source_path) {
        for (const char *d = source_path; *d;) {
            const char *e = strchr(d, ':');
            size_t len = e ? (size_t)(e - d) : strlen(d);
            /* filepath.Base: trailing slashes dropped, last element */
            while (len > 1 && d[len - 1] == '/')
                len--;
            const char *b = d + len;
            while (b > d && b[-1] != '/')
                b--;
            size_t bl = (size_t)(d + len - b);
            char want[4096];
            if (bl == 0 && len > 0) /* "/" */
                snprintf(want, sizeof want, "///");
            else
                snprintf(want, sizeof want, "/%.*s/", (int)(bl ? bl : 1), bl ? b : ".");
            const char *f = strstr(path, want);
            if (f)
                return f + strlen(want);
            d = e ? e + 1 : d + strlen(d);
        }
    }
    const char *t = trim && *trim ? trim : "";
    for (;;) {
        const char *e = strchr(t, ':');
        size_t len = e ? (size_t)(e - t) : strlen(t);
        if (len > 0) {
            bool slash = t[len - 1] == '/';
            if (strncmp(path, t, len) == 0 && (slash || path[len] == '/'))
                return path + len + (slash ? 0 : 1);
        }
        if (!e)
            break;
        t = e + 1;
    }
    static const char *const cwd[] = {"/proc/self/cwd/./", "/proc/self/cwd/"};
    for (size_t i = 0; i < 2; i++)
        if (strncmp(path, cwd[i], strlen(cwd[i])) == 0)
            return path + strlen(cwd[i]);
    return path;
}

const char *hs_an_simplify_func(const char *name, char *buf, size_t len)
{
    if (*name == '.')
        name++;
    snprintf(buf, len, "%s", name);
    for (char *q = buf; (q = strchr(q, '(')) != NULL;) {
        if (strncmp(q, "(anonymous namespace)", 21) == 0) {
            q += 21;
            continue;
        }
        if (q >= buf + 8 && strncmp(q - 8, "operator()", 10) == 0) {
            q += 2;
            continue;
        }
        *q = '\0';
        break;
    }
    return buf;
}
