/* gen_large_profile.c — writes a large, deterministic CPU profile for the
 * analysis benchmark (bench/large_profile.sh): SAMPLES samples (default
 * 1 000 000) over LOCATIONS locations (default 200 000; every 8th has an
 * inlined frame) in 50 000 functions across 400 files. Samples draw (with
 * a skew: hot stacks and a long tail) from SAMPLES/5 distinct stacks 4-30
 * deep, made by random walks so they share prefixes as real call trees do;
 * each sample is its own record, as in profiles with labels.
 * Sample types as Go's CPU profiles: samples/count, cpu/nanoseconds.
 *   gen_large_profile OUT.pb.gz [SAMPLES [LOCATIONS]]
 * Built by the bench script against the static profile library. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "profile/profile.h"

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gen_large_profile OUT.pb.gz [SAMPLES [LOCATIONS]]\n");
        return 2;
    }
    size_t n_samples = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
    size_t n_locs = argc > 3 ? strtoull(argv[3], NULL, 10) : 200000;
    size_t n_funcs = n_locs / 4 ? n_locs / 4 : 1;
    char err[256], name[128], file[64];
    hs_profile *p = hs_profile_new();
    uint64_t *fids = malloc(n_funcs * sizeof *fids), *lids = malloc(n_locs * sizeof *lids);
    if (!p || !fids || !lids) {
        fprintf(stderr, "gen_large_profile: out of memory\n");
        return 1;
    }
    if (hs_profile_add_sample_type(p, "samples", "count") < 0 ||
        hs_profile_add_sample_type(p, "cpu", "nanoseconds") < 0) {
        fprintf(stderr, "gen_large_profile: out of memory\n");
        return 1;
    }
    hs_profile_set_period(p, "cpu", "nanoseconds", 10000000);
    p->duration_nanos = 10000000000LL;
    uint64_t m = hs_profile_add_mapping(p, 0x400000, 0x4000000, 0, "/usr/bin/bigserver", "");
    for (size_t f = 0; f < n_funcs; f++) {
        snprintf(name, sizeof name, "bigserver/pkg%zu.(*Type%zu).Method%zu", f % 997, f % 131, f);
        snprintf(file, sizeof file, "src/pkg%zu/file%zu.go", f % 997, f % 400);
        if (!(fids[f] = hs_profile_add_function(p, name, name, file, (int64_t)(f % 900) + 1))) {
            fprintf(stderr, "gen_large_profile: out of memory\n");
            return 1;
        }
    }
    for (size_t l = 0; l < n_locs; l++) {
        hs_line lines[2] = {
            {.function_id = fids[(l * 7919) % n_funcs], .line = (int64_t)(l % 3000) + 1},
            {.function_id = fids[(l * 104729 + 1) % n_funcs], .line = (int64_t)(l % 500) + 1},
        };
        if (!(lids[l] = hs_profile_add_location(p, m, 0x400000 + 16 * l, lines, l % 8 ? 1 : 2))) {
            fprintf(stderr, "gen_large_profile: out of memory\n");
            return 1;
        }
    }
    /* A pool of distinct stacks (root-first random walks, so they share
     * prefixes like real call trees do); samples draw from it with a skew
     * (a few hot stacks, a long tail), as CPU profiles look. */
    size_t n_pool = n_samples / 5 ? n_samples / 5 : 1;
    uint64_t (*pool)[40] = malloc(n_pool * sizeof *pool);
    uint8_t *pool_depth = malloc(n_pool);
    if (!pool || !pool_depth) {
        fprintf(stderr, "gen_large_profile: out of memory\n");
        return 1;
    }
    for (size_t k = 0; k < n_pool; k++) {
        size_t depth = 4 + next() % 27, cur = next() % 16;
        uint64_t walk[40];
        for (size_t d = 0; d < depth; d++) {
            walk[d] = lids[cur];
            cur = (cur * 31 + 1 + next() % (d < 4 ? 4 : 48)) % n_locs;
        }
        for (size_t d = 0; d < depth; d++) /* leaf first */
            pool[k][d] = walk[depth - 1 - d];
        pool_depth[k] = (uint8_t)depth;
    }
    for (size_t s = 0; s < n_samples; s++) {
        double u = (double)(next() % 1000000) / 1e6;
        size_t k = (size_t)((double)n_pool * u * u * u);
        int64_t values[2] = {1, 10000000};
        if (hs_profile_add_sample(p, pool[k], pool_depth[k], values, NULL, 0) != 0) {
            fprintf(stderr, "gen_large_profile: out of memory\n");
            return 1;
        }
    }
    free(pool);
    free(pool_depth);
    if (hs_profile_write_file(p, argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "gen_large_profile: %s\n", err);
        return 1;
    }
    fprintf(stderr, "gen_large_profile: wrote %s: %zu samples, %zu locations, %zu functions\n",
            argv[1], n_samples, n_locs, n_funcs);
    hs_profile_free(p);
    free(fids);
    free(lids);
    return 0;
}
