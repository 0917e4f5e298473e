/* stats.h — the statistics of the benchmark harness and of
 * `hotspur bench compare`: summaries with a 99.9% Student-t confidence
 * interval (as JMH), Tukey's outlier fences, the Mann-Whitney U test and a
 * bootstrap interval for the ratio of two medians. Pure functions, no I/O;
 * the CLI links this module alone (hs_benchstat), the harness compiles it in. */
#ifndef HS_HARNESS_STATS_H
#define HS_HARNESS_STATS_H

#include <stddef.h>

typedef struct {
    size_t n;
    double mean, median, stddev, min, max;
    double ci_lo, ci_hi; /* 99.9% Student-t interval of the mean (n >= 2) */
    double q1, q3;
    size_t outliers;         /* outside Tukey's fences Q1-1.5 IQR, Q3+1.5 IQR */
    size_t extreme_outliers; /* outside Q1-3 IQR, Q3+3 IQR */
} hs_bstat_summary;

#define HS_BSTAT_CONFIDENCE 0.999

/* Summarize x[0..n) (n >= 1; with n == 1 the interval is [x, x]). */
void hs_bstat_summarize(const double *x, size_t n, hs_bstat_summary *out);

/* Median of x[0..n) (n >= 1; NAN without memory); x is not changed. */
double hs_bstat_median(const double *x, size_t n);

/* Student-t distribution with df degrees of freedom: CDF and quantile. */
double hs_bstat_t_cdf(double t, double df);
double hs_bstat_t_quantile(double p, double df);

/* Regularized incomplete beta function I_x(a, b). */
double hs_bstat_ibeta(double x, double a, double b);

/* Two-sided p-value of the Mann-Whitney U test of a against b: exact
 * distribution when there are no ties and na + nb <= 60, else the normal
 * approximation with tie and continuity corrections. 1.0 when every value
 * is equal or a side is empty. */
double hs_bstat_mann_whitney(const double *a, size_t na, const double *b, size_t nb);

/* Bootstrap (percentile, `rounds` resamples, fixed seed: reproducible)
 * interval at `confidence` of median(b)/median(a). Returns -1 when a
 * median of a resample is 0 in a (no ratio), else 0. */
int hs_bstat_ratio_ci(const double *a, size_t na, const double *b, size_t nb, double confidence,
                      int rounds, double *lo, double *hi);

#endif
