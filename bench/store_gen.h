/* store_gen.h — realistic CPU profiles for the store's benchmark
 * (bench/store_bench.c) and tests (tests/unit/test_store.c). Header only.
 *
 * A "program" is a fixed set of call paths (stacks of 20-40 sites drawn
 * from one call tree, so paths share prefixes) over ~400 functions in ~40
 * files; some sites are inline chains (a location with 2-3 lines), some are
 * frames of a stripped library (no lines: the store names them by file
 * offset). Each profile is one process's 10 s at 100 Hz: it uses a subset
 * of the paths with Zipf-like weights (hundreds of samples over a few
 * hundred distinct stacks), a few never-seen-before stacks, its own ASLR
 * base (addresses differ between profiles, frames do not), and per-thread
 * labels: thread_name (kept) and tid (dropped by the store). Values are
 * samples/count and cpu/nanoseconds (count x 10 ms). Deterministic for a
 * seed. */
#ifndef HS_BENCH_STORE_GEN_H
#define HS_BENCH_STORE_GEN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"

#define GEN_SITES 3000
#define GEN_FUNCS 400
#define GEN_FILES 40
#define GEN_PERIOD 10000000LL

typedef struct {
    int func, line;       /* func < 0: a stripped library frame (no lines) */
    int inl[2], inl_line[2], n_inl; /* functions inlined into this site, innermost first */
    uint64_t offset;      /* the site's address offset in its object */
} gen_site;

typedef struct {
    gen_site sites[GEN_SITES];
    int parent[GEN_SITES]; /* the call tree: site -> its caller (-1: root) */
    int depth[GEN_SITES];  /* frames from the site to the root, minus one */
    int **paths;           /* leaf first */
    int *path_len;
    size_t n_paths;
    uint64_t rng;
} gen_model;

static inline uint64_t gen_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline int gen_between(uint64_t *s, int lo, int hi) /* [lo, hi] */
{
    return lo + (int)(gen_rand(s) % (uint64_t)(hi - lo + 1));
}

/* A new path: a site 20-40 deep and its callers up to the root. */
static inline int gen_path(gen_model *m, uint64_t *rng, int *out)
{
    int cur;
    do
        cur = gen_between(rng, 1, GEN_SITES - 1);
    while (m->depth[cur] < 19 || m->depth[cur] > 39);
    int n = 0;
    while (cur >= 0 && n < 64) {
        out[n++] = cur;
        cur = m->parent[cur];
    }
    return n;
}

static inline gen_model *gen_model_new(uint64_t seed, size_t n_paths)
{
    gen_model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->rng = seed * 7919 + 1;
    /* call tree: site i's parent is a recent earlier site (so the tree is
     * deep), at most 39 deep (so paths are 20-40 frames) */
    for (int i = 0; i < GEN_SITES; i++) {
        gen_site *s = &m->sites[i];
        int par = -1;
        if (i > 0) {
            par = i - 1 - (int)(gen_rand(&m->rng) % (uint64_t)(i < 12 ? i : 12));
            while (m->depth[par] >= 39)
                par = gen_between(&m->rng, 0, i - 1);
        }
        m->parent[i] = par;
        m->depth[i] = par < 0 ? 0 : m->depth[par] + 1;
        s->func = i < 5 ? i : gen_between(&m->rng, 5, GEN_FUNCS - 1);
        s->line = gen_between(&m->rng, 10, 900);
        s->offset = 0x1000 + (uint64_t)i * 0x40 + gen_rand(&m->rng) % 0x30;
        int r = gen_between(&m->rng, 0, 99);
        if (r < 8 && i > 5) {
            s->func = -1; /* stripped library frame */
        } else if (r < 25) {
            s->n_inl = r < 15 ? 1 : 2;
            for (int k = 0; k < s->n_inl; k++) {
                s->inl[k] = gen_between(&m->rng, 5, GEN_FUNCS - 1);
                s->inl_line[k] = gen_between(&m->rng, 10, 900);
            }
        }
    }
    m->paths = calloc(n_paths, sizeof *m->paths);
    m->path_len = calloc(n_paths, sizeof *m->path_len);
    if (!m->paths || !m->path_len)
        return NULL;
    for (size_t i = 0; i < n_paths; i++) {
        int tmp[64];
        int n = gen_path(m, &m->rng, tmp);
        m->paths[i] = malloc((size_t)n * sizeof(int));
        if (!m->paths[i])
            return NULL;
        memcpy(m->paths[i], tmp, (size_t)n * sizeof(int));
        m->path_len[i] = n;
    }
    m->n_paths = n_paths;
    return m;
}

static inline void gen_model_free(gen_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_paths; i++)
        free(m->paths[i]);
    free(m->paths);
    free(m->path_len);
    free(m);
}

typedef struct {
    hs_profile *p;
    uint64_t exe, lib;      /* mapping ids */
    uint64_t base_exe, base_lib;
    uint64_t site_loc[GEN_SITES];
} gen_build;

static inline uint64_t gen_loc(gen_model *m, gen_build *b, int site)
{
    if (b->site_loc[site])
        return b->site_loc[site];
    const gen_site *s = &m->sites[site];
    char name[64], file[64];
    uint64_t id;
    if (s->func < 0) {
        id = hs_profile_add_location(b->p, b->lib, b->base_lib + s->offset, NULL, 0);
    } else {
        hs_line lines[3];
        int n = 0;
        for (int k = 0; k < s->n_inl; k++) {
            snprintf(name, sizeof name, "inl_fn_%d", s->inl[k]);
            snprintf(file, sizeof file, "src/file%d.h", s->inl[k] % GEN_FILES);
            lines[n++] = (hs_line){hs_profile_add_function(b->p, name, name, file, s->inl_line[k] - 3),
                                   s->inl_line[k], 0};
        }
        if (s->func == 0)
            snprintf(name, sizeof name, "main");
        else
            snprintf(name, sizeof name, "ns::Worker::function_%d(int, char const*)", s->func);
        snprintf(file, sizeof file, "src/module%d/file%d.cc", s->func % 7, s->func % GEN_FILES);
        lines[n++] = (hs_line){hs_profile_add_function(b->p, name, name, file, s->line - 5), s->line, 0};
        id = hs_profile_add_location(b->p, b->exe, b->base_exe + s->offset, lines, (size_t)n);
    }
    b->site_loc[site] = id;
    return id;
}

/* One profile of instance `instance` using n_used paths of m (and n_fresh
 * stacks never seen before, from seed). NULL on out of memory. */
static inline hs_profile *gen_profile(gen_model *m, uint64_t seed, int instance, size_t n_used, size_t n_fresh)
{
    gen_build *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    uint64_t rng = seed * 0x100000001b3ULL + 12345;
    b->p = hs_profile_new();
    hs_profile *p = b->p;
    if (!p) {
        free(b);
        return NULL;
    }
    hs_profile_add_sample_type(p, "samples", "count");
    hs_profile_add_sample_type(p, "cpu", "nanoseconds");
    hs_profile_set_period(p, "cpu", "nanoseconds", GEN_PERIOD);
    b->base_exe = 0x555500000000ULL + (gen_rand(&rng) % 0x10000) * 0x1000;
    b->base_lib = 0x7f0000000000ULL + (gen_rand(&rng) % 0x10000) * 0x1000;
    b->exe = hs_profile_add_mapping(p, b->base_exe, b->base_exe + 0x100000, 0, "/usr/bin/shakesapp", "abc123");
    b->lib = hs_profile_add_mapping(p, b->base_lib, b->base_lib + 0x100000, 0x2000, "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13", "");
    static const char *const threads[] = {"main", "worker", "worker", "io"};
    int64_t tid0 = 1000 + (int64_t)instance * 100 + (int64_t)(gen_rand(&rng) % 50);
    uint64_t locs[64];
    for (size_t i = 0; i < n_used + n_fresh; i++) {
        int tmp[64], n;
        const int *path;
        if (i < n_used) {
            /* Zipf-like: low path indices are hot */
            double u = (double)(gen_rand(&rng) % 1000000) / 1000000.0;
            size_t k = (size_t)((double)m->n_paths * u * u * u);
            if (k >= m->n_paths)
                k = m->n_paths - 1;
            path = m->paths[k];
            n = m->path_len[k];
        } else {
            n = gen_path(m, &rng, tmp);
            path = tmp;
        }
        for (int j = 0; j < n; j++)
            locs[j] = gen_loc(m, b, path[j]);
        int th = (int)(gen_rand(&rng) % 4);
        hs_label labels[2] = {
            {hs_profile_str(p, "thread_name"), hs_profile_str(p, threads[th]), 0, 0},
            {hs_profile_str(p, "tid"), 0, tid0 + th, 0},
        };
        int64_t count = 1 + (int64_t)(gen_rand(&rng) % 4);
        int64_t vals[2] = {count, count * GEN_PERIOD};
        hs_profile_add_sample(p, locs, (size_t)n, vals, labels, 2);
    }
    p->time_nanos = 1700000000000000000LL;
    p->duration_nanos = 10000000000LL;
    free(b);
    return p;
}

#endif
