/* test_stack_memo.c — decomposition with a shared hs_stack_memo
 * (src/store/stack_decompose.c) on realistic profiles (bench/store_gen.h): the same
 * samples, values, records and hashes as without one, whether the memo is
 * warm, emptied before every profile (a tiny bound) or shared by threads;
 * records of a decomposition stay valid after the memo is emptied; every
 * record is the canonical encoding of its own frames (hs_stack_encode),
 * and each sample's stack is the one computed here from the pprof model
 * by stack.h's rules, independently of the decomposer;
 * an error leaves the memo usable. */
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../bench/store_gen.h"
#include "profile/profile.h"
#include "store/stack.h"

#define N_PROFILES 24

typedef struct {
    hs_store_profile sp;
    hs_stack_parts *parts;
} decomposed;

static hs_profile *profile_n(gen_model *m, size_t i)
{
    /* ingest_load's profiles: 400 samples over the model's paths, a few new stacks */
    hs_profile *p = gen_profile(m, 1000003 * (uint64_t)i + 7, (int)(i % 100), 400, 4);
    assert_non_null(p);
    return p;
}

static void decompose(const hs_profile *p, hs_stack_memo *memo, decomposed *d)
{
    char err[256];
    hs_stack_options o = {.memo = memo};
    memset(d, 0, sizeof *d);
    int rc = hs_stack_decompose(p, &o, &d->sp, &d->parts, err, sizeof err);
    if (rc != 0)
        fail_msg("decompose: %s", err);
}

static void assert_same(const decomposed *a, const decomposed *b)
{
    assert_int_equal(a->sp.n_samples, b->sp.n_samples);
    assert_int_equal(a->sp.n_stacks, b->sp.n_stacks);
    assert_true(a->sp.n_samples > 100); /* the profiles are not trivial */
    for (size_t i = 0; i < a->sp.n_samples; i++) {
        assert_true(a->sp.samples[i].stack == b->sp.samples[i].stack);
        assert_memory_equal(a->sp.samples[i].values, b->sp.samples[i].values, sizeof a->sp.samples[i].values);
    }
    for (size_t i = 0; i < a->sp.n_stacks; i++) {
        assert_true(a->sp.stacks[i].hash == b->sp.stacks[i].hash);
        assert_int_equal(a->sp.stacks[i].len, b->sp.stacks[i].len);
        assert_memory_equal(a->sp.stacks[i].data, b->sp.stacks[i].data, a->sp.stacks[i].len);
    }
    assert_memory_equal(a->sp.totals, b->sp.totals, sizeof a->sp.totals);
    assert_int_equal(a->sp.types.n, b->sp.types.n);
}

/* Each record is what hs_stack_encode makes of its decoded frames, its
 * hash is the hash of its bytes, and distinct stacks have distinct hashes. */
static void assert_canonical(const decomposed *d)
{
    char err[256];
    for (size_t i = 0; i < d->sp.n_stacks; i++) {
        const hs_store_stack *s = &d->sp.stacks[i];
        assert_true(s->hash == hs_stack_hash(s->data, s->len));
        hs_stack_decoded dec;
        assert_int_equal(hs_stack_decode(s->data, s->len, &dec, err, sizeof err), 0);
        assert_true(dec.n_frames >= 20);
        void *rec;
        size_t len;
        assert_int_equal(hs_stack_encode(dec.frames, dec.n_frames, dec.labels, dec.n_labels, &rec, &len, err,
                                         sizeof err),
                         0);
        assert_int_equal(len, s->len);
        assert_memory_equal(rec, s->data, len);
        free(rec);
        hs_stack_decoded_free(&dec);
        for (size_t j = 0; j < i; j++)
            assert_true(d->sp.stacks[j].hash != s->hash);
    }
}

/* The stacks of p as stack.h defines them, computed here from the pprof
 * model and encoded with hs_stack_encode: each sample's hash and values
 * must be among d's (summed over samples with the same stack). */
static void assert_reference(const hs_profile *p, const decomposed *d)
{
    char err[256];
    int64_t *sum = calloc(d->sp.n_samples, 2 * sizeof *sum);
    assert_non_null(sum);
    for (size_t si = 0; si < p->n_samples; si++) {
        const hs_sample *s = &p->samples[si];
        hs_stack_frame f[256];
        char names[64][96];
        size_t nf = 0, nn = 0;
        for (size_t k = 0; k < s->n_locations; k++) {
            const hs_location *l = hs_profile_location(p, s->location_ids[k]);
            const hs_mapping *m = l->mapping_id ? hs_profile_mapping(p, l->mapping_id) : NULL;
            const char *map = m ? hs_profile_string(p, m->filename) : "";
            if (l->n_lines == 0) {
                const char *base = strrchr(map, '/') ? strrchr(map, '/') + 1 : map;
                assert_true(nn < 64);
                snprintf(names[nn], sizeof names[nn], "%s+0x%" PRIx64, base,
                         l->address - m->memory_start + m->file_offset);
                f[nf++] = (hs_stack_frame){names[nn++], "", "", map, 0, 0, false};
                continue;
            }
            for (size_t i = 0; i < l->n_lines; i++) {
                const hs_function *fn = hs_profile_function(p, l->lines[i].function_id);
                assert_true(nf < 256);
                f[nf++] = (hs_stack_frame){hs_profile_string(p, fn->name), hs_profile_string(p, fn->system_name),
                                           hs_profile_string(p, fn->filename), map, l->lines[i].line,
                                           fn->start_line, i + 1 < l->n_lines};
            }
        }
        hs_stack_label lb[8];
        size_t nl = 0;
        for (size_t k = 0; k < s->n_labels && nl < 8; k++) {
            const char *key = hs_profile_string(p, s->labels[k].key);
            if (strcmp(key, "tid") != 0)
                lb[nl++] = (hs_stack_label){key, hs_profile_string(p, s->labels[k].str),
                                            hs_profile_string(p, s->labels[k].num_unit), s->labels[k].num};
        }
        void *rec;
        size_t len;
        assert_int_equal(hs_stack_encode(f, nf, lb, nl, &rec, &len, err, sizeof err), 0);
        uint64_t h = hs_stack_hash(rec, len);
        size_t at = d->sp.n_samples;
        for (size_t i = 0; i < d->sp.n_stacks; i++)
            if (d->sp.stacks[i].hash == h) {
                assert_int_equal(d->sp.stacks[i].len, len);
                assert_memory_equal(d->sp.stacks[i].data, rec, len);
            }
        for (size_t i = 0; i < d->sp.n_samples; i++)
            if (d->sp.samples[i].stack == h)
                at = i;
        free(rec);
        assert_true(at < d->sp.n_samples);
        sum[2 * at] += s->values[0];
        sum[2 * at + 1] += s->values[1];
    }
    for (size_t i = 0; i < d->sp.n_samples; i++) {
        assert_int_equal(sum[2 * i], d->sp.samples[i].values[0]);
        assert_int_equal(sum[2 * i + 1], d->sp.samples[i].values[1]);
    }
    free(sum);
}

static void test_memo_same_answers(void **state)
{
    (void)state;
    gen_model *m = gen_model_new(7, 400);
    assert_non_null(m);
    hs_stack_memo *warm = hs_stack_memo_new((size_t)64 << 20);
    hs_stack_memo *tiny = hs_stack_memo_new(1); /* emptied before every profile */
    assert_non_null(warm);
    assert_non_null(tiny);
    decomposed first_tiny; /* kept across the resets that follow */
    hs_profile *first = NULL;
    for (size_t i = 0; i < N_PROFILES; i++) {
        hs_profile *p = profile_n(m, i);
        decomposed none, w, t;
        decompose(p, NULL, &none);
        decompose(p, warm, &w);
        decompose(p, tiny, &t);
        assert_same(&none, &w);
        assert_same(&none, &t);
        if (i < 3) {
            assert_canonical(&w);
            assert_reference(p, &w);
            assert_reference(p, &t);
        }
        hs_stack_parts_free(none.parts);
        hs_stack_parts_free(w.parts);
        if (i == 0) {
            first_tiny = t;
            first = p;
        } else {
            hs_stack_parts_free(t.parts);
            hs_profile_free(p);
        }
    }
    /* the first decomposition's records survived N_PROFILES - 1 resets */
    decomposed again;
    decompose(first, NULL, &again);
    assert_same(&again, &first_tiny);
    hs_stack_parts_free(again.parts);
    hs_stack_parts_free(first_tiny.parts);
    hs_profile_free(first);
    hs_stack_memo_free(warm);
    hs_stack_memo_free(tiny);
    gen_model_free(m);
}

/* Stacks repeat across profiles of one program, so a warm memo is what
 * makes decomposition cheap; different programs share nothing and must
 * not be confused (same ids, other strings). */
static void test_memo_two_programs(void **state)
{
    (void)state;
    gen_model *a = gen_model_new(11, 300), *b = gen_model_new(12, 300);
    assert_non_null(a);
    assert_non_null(b);
    hs_stack_memo *memo = hs_stack_memo_new((size_t)64 << 20);
    assert_non_null(memo);
    for (size_t i = 0; i < 8; i++) {
        hs_profile *p = profile_n(i % 2 ? a : b, i);
        decomposed none, w;
        decompose(p, NULL, &none);
        decompose(p, memo, &w);
        assert_same(&none, &w);
        assert_reference(p, &w);
        hs_stack_parts_free(none.parts);
        hs_stack_parts_free(w.parts);
        hs_profile_free(p);
    }
    hs_stack_memo_free(memo);
    gen_model_free(a);
    gen_model_free(b);
}

/* A failed decomposition (a stack over max_depth) leaves the memo usable. */
static void test_memo_after_error(void **state)
{
    (void)state;
    gen_model *m = gen_model_new(5, 200);
    assert_non_null(m);
    hs_stack_memo *memo = hs_stack_memo_new((size_t)64 << 20);
    assert_non_null(memo);
    hs_profile *p = profile_n(m, 1);
    char err[256];
    hs_store_profile sp;
    hs_stack_parts *parts = NULL;
    hs_stack_options shallow = {.max_depth = 10, .memo = memo};
    assert_int_equal(hs_stack_decompose(p, &shallow, &sp, &parts, err, sizeof err), -1);
    assert_non_null(strstr(err, "deeper than 10"));
    assert_null(parts);
    decomposed none, w;
    decompose(p, NULL, &none);
    decompose(p, memo, &w);
    assert_same(&none, &w);
    assert_reference(p, &w);
    hs_stack_parts_free(none.parts);
    hs_stack_parts_free(w.parts);
    hs_profile_free(p);
    hs_stack_memo_free(memo);
    gen_model_free(m);
}

typedef struct {
    gen_model *m;
    hs_stack_memo *memo;
    size_t first;
    int bad;
} worker_arg;

static void *worker(void *arg)
{
    worker_arg *w = arg;
    char err[256];
    for (size_t i = w->first; i < w->first + 6; i++) {
        hs_profile *p = gen_profile(w->m, 1000003 * (uint64_t)i + 7, (int)(i % 100), 400, 4);
        hs_store_profile a, b;
        hs_stack_parts *pa = NULL, *pb = NULL;
        hs_stack_options o = {.memo = w->memo};
        if (!p || hs_stack_decompose(p, NULL, &a, &pa, err, sizeof err) != 0 ||
            hs_stack_decompose(p, &o, &b, &pb, err, sizeof err) != 0 || a.n_stacks != b.n_stacks) {
            w->bad++;
        } else {
            for (size_t k = 0; k < a.n_stacks; k++)
                if (a.stacks[k].hash != b.stacks[k].hash || a.stacks[k].len != b.stacks[k].len ||
                    memcmp(a.stacks[k].data, b.stacks[k].data, a.stacks[k].len) != 0)
                    w->bad++;
        }
        hs_stack_parts_free(pa);
        hs_stack_parts_free(pb);
        hs_profile_free(p);
    }
    return NULL;
}

/* Threads share one memo (small enough to be emptied now and then). */
static void test_memo_threads(void **state)
{
    (void)state;
    gen_model *m = gen_model_new(9, 400);
    assert_non_null(m);
    hs_stack_memo *memo = hs_stack_memo_new((size_t)2 << 20);
    assert_non_null(memo);
    pthread_t t[3];
    worker_arg w[3];
    for (int i = 0; i < 3; i++) {
        w[i] = (worker_arg){m, memo, (size_t)i * 3, 0};
        assert_int_equal(pthread_create(&t[i], NULL, worker, &w[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(w[i].bad, 0);
    }
    hs_stack_memo_free(memo);
    gen_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memo_same_answers),
        cmocka_unit_test(test_memo_two_programs),
        cmocka_unit_test(test_memo_after_error),
        cmocka_unit_test(test_memo_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
