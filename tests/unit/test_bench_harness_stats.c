/* test_bench_harness_stats.c — the harness's statistics (src/harness/stats.c)
 * against values from published tables and exact enumeration: Student-t
 * quantiles (the 99.9% interval JMH uses), the incomplete beta function, the
 * Mann-Whitney U test (exact and normal with ties), summaries with Tukey's
 * fences, and the bootstrap ratio interval on a known 2x change. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness/stats.h"

static void t_quantiles(void **state)
{
    (void)state;
    /* Two-sided 99.9%: t(0.9995, df), as in any t table. */
    assert_true(fabs(hs_bstat_t_quantile(0.9995, 1) - 636.619) < 0.01);
    assert_true(fabs(hs_bstat_t_quantile(0.9995, 4) - 8.610) < 0.001);
    assert_true(fabs(hs_bstat_t_quantile(0.9995, 14) - 4.140) < 0.001);
    assert_true(fabs(hs_bstat_t_quantile(0.9995, 29) - 3.659) < 0.001);
    assert_true(fabs(hs_bstat_t_quantile(0.975, 10) - 2.228) < 0.001);
    assert_true(fabs(hs_bstat_t_quantile(0.95, 5) - 2.015) < 0.001);
    assert_true(fabs(hs_bstat_t_quantile(0.025, 10) + 2.228) < 0.001);
    assert_true(fabs(hs_bstat_t_cdf(0, 7) - 0.5) < 1e-12);
    assert_true(fabs(hs_bstat_t_cdf(2.228, 10) - 0.975) < 1e-4);
    /* I_x(a,b) of Beta(2,3) at 0.5 is 11/16; symmetric case I_0.5(a,a) = 1/2. */
    assert_true(fabs(hs_bstat_ibeta(0.5, 2, 3) - 0.6875) < 1e-12);
    assert_true(fabs(hs_bstat_ibeta(0.5, 7.5, 7.5) - 0.5) < 1e-12);
}

static void mann_whitney_exact(void **state)
{
    (void)state;
    double a[] = {1, 2, 3, 4, 5}, b[] = {6, 7, 8, 9, 10};
    /* Complete separation: 2 of C(6,3) = 20 and 2 of C(10,5) = 252 orderings. */
    assert_true(fabs(hs_bstat_mann_whitney(a, 3, b, 3) - 2.0 / 20) < 1e-12);
    assert_true(fabs(hs_bstat_mann_whitney(a, 5, b, 5) - 2.0 / 252) < 1e-12);
    assert_true(fabs(hs_bstat_mann_whitney(b, 5, a, 5) - 2.0 / 252) < 1e-12);
    /* Interleaved 4+4: U = 6, P(U <= 6) = 24/70. */
    double c[] = {1, 3, 5, 7}, d[] = {2, 4, 6, 8};
    assert_true(fabs(hs_bstat_mann_whitney(c, 4, d, 4) - 48.0 / 70) < 1e-12);
}

static void mann_whitney_ties(void **state)
{
    (void)state;
    double ones[15], zeros[15];
    for (int i = 0; i < 15; i++) {
        ones[i] = 1.0;
        zeros[i] = 0.0;
    }
    /* allocs/op 1 -> 0: every value tied within its group. */
    double p = hs_bstat_mann_whitney(ones, 15, zeros, 15);
    assert_true(p < 1e-6);
    /* All equal: no evidence at all. */
    assert_true(hs_bstat_mann_whitney(ones, 15, ones, 15) == 1.0);
    assert_true(hs_bstat_mann_whitney(ones, 0, ones, 15) == 1.0);
    /* Ties with overlap: symmetric, in (0, 1]. */
    double x[] = {1, 2, 2, 3, 3, 3, 4}, y[] = {2, 3, 3, 4, 4, 5, 5};
    double pxy = hs_bstat_mann_whitney(x, 7, y, 7), pyx = hs_bstat_mann_whitney(y, 7, x, 7);
    assert_true(pxy > 0 && pxy <= 1 && fabs(pxy - pyx) < 1e-12);
}

/* Deterministic noise: a fixed LCG, uniform in [-1, 1). */
static double noise(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 4503599627370496.0 - 1.0;
}

static void synthetic_change(void **state)
{
    (void)state;
    double old[20], same[20], slow[20];
    uint64_t s = 42;
    for (int i = 0; i < 20; i++) {
        old[i] = 100 + 5 * noise(&s);
        same[i] = 100 + 5 * noise(&s);
        slow[i] = 200 + 10 * noise(&s);
    }
    assert_true(hs_bstat_mann_whitney(old, 20, slow, 20) < 1e-6);
    assert_true(hs_bstat_mann_whitney(old, 20, same, 20) > 0.05);
    double lo, hi;
    assert_int_equal(hs_bstat_ratio_ci(old, 20, slow, 20, 0.95, 2000, &lo, &hi), 0);
    assert_true(lo < 2.0 && hi > 2.0 && lo > 1.85 && hi < 2.15);
    assert_int_equal(hs_bstat_ratio_ci(old, 20, same, 20, 0.95, 2000, &lo, &hi), 0);
    assert_true(lo < 1.0 && hi > 1.0);
    /* Reproducible: the same input gives the same interval. */
    double lo2, hi2;
    assert_int_equal(hs_bstat_ratio_ci(old, 20, same, 20, 0.95, 2000, &lo2, &hi2), 0);
    assert_true(lo == lo2 && hi == hi2);
    double zeros[3] = {0, 0, 0};
    assert_int_equal(hs_bstat_ratio_ci(zeros, 3, old, 3, 0.95, 100, &lo, &hi), -1);
}

static void summaries(void **state)
{
    (void)state;
    double x[] = {5, 1, 4, 2, 3};
    hs_bstat_summary s;
    hs_bstat_summarize(x, 5, &s);
    assert_true(s.mean == 3 && s.median == 3 && s.min == 1 && s.max == 5);
    assert_true(fabs(s.stddev - sqrt(2.5)) < 1e-12);
    double half = 8.610302 * sqrt(2.5) / sqrt(5.0);
    assert_true(fabs(s.ci_hi - 3 - half) < 1e-4 && fabs(3 - s.ci_lo - half) < 1e-4);
    assert_int_equal(s.outliers, 0);
    double y[] = {1, 2, 3, 4, 100, 2.5, 3.5, 3};
    hs_bstat_summarize(y, 8, &s);
    assert_int_equal(s.outliers, 1);
    assert_int_equal(s.extreme_outliers, 1);
    assert_true(fabs(hs_bstat_median(y, 8) - 3) < 1e-12);
    double one = 7;
    hs_bstat_summarize(&one, 1, &s);
    assert_true(s.mean == 7 && s.ci_lo == 7 && s.ci_hi == 7 && s.stddev == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_quantiles),      cmocka_unit_test(mann_whitney_exact),
        cmocka_unit_test(mann_whitney_ties), cmocka_unit_test(synthetic_change),
        cmocka_unit_test(summaries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
