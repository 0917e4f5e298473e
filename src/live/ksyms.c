/* ksyms.c — /proc/kallsyms loaded into a sorted array, looked up by binary
 * search (the symbol with the greatest address <= addr). */
#define _GNU_SOURCE
#include "live/ksyms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t addr;
    char *name;
} ksym;

struct hs_ksyms {
    ksym *v;
    size_t n;
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
        unsigned long long a;
        char type, name[256];
        if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3)
            continue;
        if (type != 't' && type != 'T' && type != 'w' && type != 'W')
            continue;
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
        k->v[k->n].addr = a;
        k->v[k->n].name = strdup(name);
        if (k->v[k->n].name)
            k->n++;
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
    for (size_t i = 0; i < k->n; i++)
        free(k->v[i].name);
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
    return k->v[lo].name;
}
