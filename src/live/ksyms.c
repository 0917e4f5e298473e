/* ksyms.c — /proc/kallsyms loaded into a sorted array, looked up by binary
 * search (the symbol with the greatest address <= addr). The names live in
 * one buffer (not a string each: 120k of them on a distribution kernel). */
#define _GNU_SOURCE
#include "live/ksyms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t addr;
    size_t name; /* offset in names */
} ksym;

struct hs_ksyms {
    ksym *v;
    size_t n;
    char *names;
    size_t n_names, cap_names;
};

static int cmp_ksym(const void *a, const void *b)
{
    uint64_t x = ((const ksym *)a)->addr, y = ((const ksym *)b)->addr;
    return x < y ? -1 : x > y;
}

hs_ksyms *hs_ksyms_load(const char *path)
{
    FILE *f = fopen(path ? path : "/proc/kallsyms", "r");
    if (!f)
        return NULL;
    hs_ksyms *k = calloc(1, sizeof *k);
    size_t cap = 0;
    char line[512];
    int nonzero = 0;
    while (k && fgets(line, sizeof line, f)) {
        /* "ADDR TYPE NAME[\t[MODULE]]" */
        char *end;
        unsigned long long a = strtoull(line, &end, 16);
        if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ')
            continue;
        char type = end[1];
        if (type != 't' && type != 'T' && type != 'w' && type != 'W')
            continue;
        char *name = end + 3;
        size_t len = strcspn(name, " \t\n");
        if (len == 0)
            continue;
        if (len > 255)
            len = 255;
        if (a)
            nonzero = 1;
        if (k->n == cap) {
            size_t nc = cap ? cap * 2 : 65536;
            ksym *nv = realloc(k->v, nc * sizeof *nv);
            if (!nv)
                break;
            k->v = nv;
            cap = nc;
        }
        if (k->n_names + len + 1 > k->cap_names) {
            size_t nc = k->cap_names ? k->cap_names * 2 : 1 << 21;
            while (nc < k->n_names + len + 1)
                nc *= 2;
            char *nn = realloc(k->names, nc);
            if (!nn)
                break;
            k->names = nn;
            k->cap_names = nc;
        }
        memcpy(k->names + k->n_names, name, len);
        k->names[k->n_names + len] = 0;
        k->v[k->n++] = (ksym){a, k->n_names};
        k->n_names += len + 1;
    }
    fclose(f);
    if (!k)
        return NULL;
    if (!nonzero || k->n == 0) {
        hs_ksyms_free(k);
        return NULL;
    }
    qsort(k->v, k->n, sizeof *k->v, cmp_ksym);
    return k;
}

void hs_ksyms_free(hs_ksyms *k)
{
    if (!k)
        return;
    free(k->names);
    free(k->v);
    free(k);
}

const char *hs_ksyms_lookup(const hs_ksyms *k, uint64_t addr)
{
    if (!k || k->n == 0 || addr < k->v[0].addr)
        return NULL;
    size_t lo = 0, hi = k->n; /* answer in [lo, hi) */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (k->v[mid].addr <= addr)
            lo = mid;
        else
            hi = mid;
    }
    return k->names + k->v[lo].name;
}
