/* test_heap_draw.c — the heap profiler's sampling draw (agent/draw.h): its
 * inline natural log against libm's, and the intervals it draws: mean,
 * variance and shape of an exponential of mean 512 KiB over 10^6 draws of
 * the agent's own generator (a fixed seed, so the run is reproducible). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "agent/draw.h"

#define DRAWS 1000000
#define RATE 524288.0

/* The log against libm's: on random u, on the edges of the range (2^-53,
 * 1), and on both sides of the split at sqrt(2) and of each power of 2. */
static void test_log_unit(void **state)
{
    (void)state;
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    double worst = 0, worst_u = 0;
    for (int i = 0; i < 4 * DRAWS; i++) {
        double u;
        if (i < DRAWS)
            u = (double)((hs_draw_random(&rng) >> 11) + 1) * 0x1p-53;
        else if (i < 2 * DRAWS) /* small u: the long tail of the intervals */
            u = ldexp((double)((hs_draw_random(&rng) >> 11) + 1) * 0x1p-53, -(i % 53));
        else if (i < 3 * DRAWS) /* around sqrt(2) * 2^-k */
            u = ldexp(1.4142135623730951 * (1.0 + ((double)(i % 2001) - 1000.0) * 1e-9), -1 - (i % 52));
        else /* around powers of 2 */
            u = ldexp(1.0 + ((double)(i % 2001) - 1000.0) * 1e-12, -(i % 53));
        if (u > 1.0)
            u = 1.0;
        double want = log(u), got = hs_draw_log_unit(u);
        double err = fabs(got - want) / (fabs(want) > 1e-300 ? fabs(want) : 1.0);
        if (want == 0.0)
            err = fabs(got);
        if (err > worst) {
            worst = err;
            worst_u = u;
        }
    }
    printf("hs_draw_log_unit: worst relative error %.3g (u = %.17g)\n", worst, worst_u);
    assert_true(worst < 1e-13);
    assert_true(hs_draw_log_unit(1.0) == 0.0);
    assert_true(fabs(hs_draw_log_unit(0x1p-53) - -53 * log(2.0)) < 1e-12);
}

/* 10^6 intervals of mean RATE: the sample mean within 0.5% (5 standard
 * errors: 0.1% each), the variance within 2% of RATE^2 (its standard error
 * is sqrt(8 / n) = 0.28%), and a chi-square over 40 equiprobable bins of
 * the exponential below 73.4 (39 degrees of freedom, p = 0.001). A draw
 * off by a factor, a uniform or a normal draw, or a log with an error of
 * a per cent fail one of these. */
static void test_intervals(void **state)
{
    (void)state;
    enum { BINS = 40 };
    double bound[BINS]; /* upper bounds of bins 0..BINS-2 */
    for (int k = 1; k < BINS; k++)
        bound[k - 1] = -log(1.0 - (double)k / BINS) * RATE;
    uint64_t rng = 0x2545f4914f6cdd1dull;
    long count[BINS] = {0};
    double sum = 0, sum2 = 0;
    int64_t min = INT64_MAX;
    for (int i = 0; i < DRAWS; i++) {
        int64_t v = hs_draw_interval(hs_draw_random(&rng), RATE);
        if (v < min)
            min = v;
        double x = (double)v + 0.5; /* the integer part of a continuous draw: its middle */
        sum += x;
        sum2 += x * x;
        int lo = 0, hi = BINS - 1; /* first bin whose bound is above x */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (x < bound[mid])
                hi = mid;
            else
                lo = mid + 1;
        }
        count[lo]++;
    }
    double mean = sum / DRAWS, var = sum2 / DRAWS - mean * mean;
    double chi2 = 0, expect = (double)DRAWS / BINS;
    for (int k = 0; k < BINS; k++)
        chi2 += ((double)count[k] - expect) * ((double)count[k] - expect) / expect;
    printf("intervals: mean %.1f (rate %.0f, %+.3f%%), variance / rate^2 %.4f, chi-square %.1f (%d bins), min %lld\n",
           mean, RATE, (mean / RATE - 1) * 100, var / (RATE * RATE), chi2, BINS, (long long)min);
    assert_true(fabs(mean / RATE - 1) < 0.005);
    assert_true(fabs(var / (RATE * RATE) - 1) < 0.02);
    assert_true(chi2 < 73.4);
    assert_true(min >= 1);
    /* the smallest u gives the longest interval: 53 ln 2 rates */
    assert_int_equal(hs_draw_interval(0, RATE), (int64_t)(53 * log(2.0) * RATE));
    /* u = 1: no bytes to wait is still one byte */
    assert_int_equal(hs_draw_interval(~0ull, RATE), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_unit),
        cmocka_unit_test(test_intervals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
