/* stats.c — summaries, Student-t, Mann-Whitney U and the bootstrap ratio
 * interval used by the benchmark harness and `hotspur bench compare`
 * (stats.h). The t quantile inverts the CDF, which is computed from the
 * regularized incomplete beta function (continued fraction, modified Lentz). */
#include "harness/stats.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Linear interpolation between order statistics (type 7, as R's default). */
static double quantile_sorted(const double *s, size_t n, double p)
{
    if (n == 1)
        return s[0];
    double h = p * (double)(n - 1);
    size_t i = (size_t)h;
    if (i + 1 >= n)
        return s[n - 1];
    return s[i] + (h - (double)i) * (s[i + 1] - s[i]);
}

static double *sorted_copy(const double *x, size_t n)
{
    double *s = malloc(n * sizeof *s);
    if (!s)
        return NULL;
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    return s;
}

double hs_bstat_median(const double *x, size_t n)
{
    double *s = sorted_copy(x, n);
    if (!s)
        return NAN; /* no memory */
    double m = quantile_sorted(s, n, 0.5);
    free(s);
    return m;
}

void hs_bstat_summarize(const double *x, size_t n, hs_bstat_summary *o)
{
    memset(o, 0, sizeof *o);
    o->n = n;
    if (n == 0)
        return;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    o->mean = sum / (double)n;
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - o->mean) * (x[i] - o->mean);
    o->stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
    o->ci_lo = o->ci_hi = o->mean;
    if (n > 1) {
        double t = hs_bstat_t_quantile(1.0 - (1.0 - HS_BSTAT_CONFIDENCE) / 2.0, (double)(n - 1));
        double half = t * o->stddev / sqrt((double)n);
        o->ci_lo = o->mean - half;
        o->ci_hi = o->mean + half;
    }
    double *s = sorted_copy(x, n);
    if (!s) { /* no memory: what needs the order is unknown */
        o->min = o->max = o->median = o->q1 = o->q3 = NAN;
        return;
    }
    o->min = s[0];
    o->max = s[n - 1];
    o->median = quantile_sorted(s, n, 0.5);
    o->q1 = quantile_sorted(s, n, 0.25);
    o->q3 = quantile_sorted(s, n, 0.75);
    double iqr = o->q3 - o->q1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < o->q1 - 1.5 * iqr || s[i] > o->q3 + 1.5 * iqr)
            o->outliers++;
        if (s[i] < o->q1 - 3.0 * iqr || s[i] > o->q3 + 3.0 * iqr)
            o->extreme_outliers++;
    }
    free(s);
}

/* Continued fraction of I_x(a,b) (valid for x < (a+1)/(a+b+2)). */
static double beta_cf(double x, double a, double b)
{
    const double tiny = 1e-300, eps = 1e-15;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
    if (fabs(d) < tiny)
        d = tiny;
    d = 1.0 / d;
    double f = d;
    for (int m = 1; m <= 1000; m++) {
        double m2 = 2.0 * m;
        double num = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
        d = 1.0 + num * d;
        d = fabs(d) < tiny ? 1.0 / tiny : 1.0 / d;
        c = 1.0 + num / c;
        if (fabs(c) < tiny)
            c = tiny;
        f *= d * c;
        num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
        d = 1.0 + num * d;
        d = fabs(d) < tiny ? 1.0 / tiny : 1.0 / d;
        c = 1.0 + num / c;
        if (fabs(c) < tiny)
            c = tiny;
        double delta = d * c;
        f *= delta;
        if (fabs(delta - 1.0) < eps)
            break;
    }
    return f;
}

double hs_bstat_ibeta(double x, double a, double b)
{
    if (x <= 0.0)
        return 0.0;
    if (x >= 1.0)
        return 1.0;
    double lbeta = lgamma(a + b) - lgamma(a) - lgamma(b);
    double front = exp(lbeta + a * log(x) + b * log1p(-x));
    if (x < (a + 1.0) / (a + b + 2.0))
        return front * beta_cf(x, a, b) / a;
    return 1.0 - front * beta_cf(1.0 - x, b, a) / b;
}

double hs_bstat_t_cdf(double t, double df)
{
    double tail = 0.5 * hs_bstat_ibeta(df / (df + t * t), df / 2.0, 0.5);
    return t >= 0 ? 1.0 - tail : tail;
}

double hs_bstat_t_quantile(double p, double df)
{
    if (p <= 0.0)
        return -INFINITY;
    if (p >= 1.0)
        return INFINITY;
    if (p < 0.5)
        return -hs_bstat_t_quantile(1.0 - p, df);
    double lo = 0.0, hi = 1.0;
    while (hs_bstat_t_cdf(hi, df) < p && hi < 1e12)
        hi *= 2.0;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (hs_bstat_t_cdf(mid, df) < p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

typedef struct {
    double v;
    int group;
} tagged;

static int cmp_tagged(const void *x, const void *y)
{
    return cmp_double(&((const tagged *)x)->v, &((const tagged *)y)->v);
}

/* P(U <= u) and P(U >= u) for U of sample a (size m) among N = m+n, no ties:
 * counts of m-subsets of ranks 1..N by rank sum. */
static int exact_tails(size_t m, size_t n, double u, double *le, double *ge)
{
    size_t N = m + n, maxs = m * N;
    double *cnt = calloc((m + 1) * (maxs + 1), sizeof *cnt);
    if (!cnt)
        return -1;
#define C(k, s) cnt[(k) * (maxs + 1) + (s)]
    C(0, 0) = 1.0;
    for (size_t r = 1; r <= N; r++)
        for (size_t k = (r < m ? r : m); k >= 1; k--)
            for (size_t s = maxs; s >= r; s--)
                C(k, s) += C(k - 1, s - r);
    double total = 0, below = 0, above = 0;
    double base = (double)m * (double)(m + 1) / 2.0; /* U = R - m(m+1)/2 */
    for (size_t s = 0; s <= maxs; s++) {
        double c = C(m, s);
        if (c == 0)
            continue;
        double us = (double)s - base;
        total += c;
        if (us <= u + 1e-9)
            below += c;
        if (us >= u - 1e-9)
            above += c;
    }
#undef C
    free(cnt);
    *le = below / total;
    *ge = above / total;
    return 0;
}

double hs_bstat_mann_whitney(const double *a, size_t na, const double *b, size_t nb)
{
    if (na == 0 || nb == 0)
        return 1.0;
    size_t N = na + nb;
    tagged *t = malloc(N * sizeof *t);
    if (!t)
        return 1.0;
    for (size_t i = 0; i < na; i++)
        t[i] = (tagged){a[i], 0};
    for (size_t i = 0; i < nb; i++)
        t[na + i] = (tagged){b[i], 1};
    qsort(t, N, sizeof *t, cmp_tagged);
    /* Mid-ranks; tie term sum(t^3 - t). */
    double ra = 0, ties = 0;
    for (size_t i = 0; i < N;) {
        size_t j = i;
        while (j < N && t[j].v == t[i].v)
            j++;
        double rank = ((double)i + 1.0 + (double)j) / 2.0;
        double k = (double)(j - i);
        ties += k * k * k - k;
        for (size_t q = i; q < j; q++)
            if (t[q].group == 0)
                ra += rank;
        i = j;
    }
    free(t);
    double m = (double)na, n = (double)nb;
    double u = ra - m * (m + 1.0) / 2.0;
    if (ties == 0 && N <= 60) {
        double le, ge;
        if (exact_tails(na, nb, u, &le, &ge) == 0) {
            double p = 2.0 * (le < ge ? le : ge);
            return p > 1.0 ? 1.0 : p;
        }
    }
    double mu = m * n / 2.0;
    double var = m * n / 12.0 * ((m + n + 1.0) - ties / ((m + n) * (m + n - 1.0)));
    if (var <= 0)
        return 1.0;
    double z = fabs(u - mu) - 0.5;
    if (z < 0)
        z = 0;
    z /= sqrt(var);
    double p = erfc(z / sqrt(2.0));
    return p > 1.0 ? 1.0 : p;
}

static uint64_t next_rand(uint64_t *s)
{
    uint64_t x = *s += 0x9e3779b97f4a7c15ull; /* splitmix64 */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static double resample_median(const double *x, size_t n, double *buf, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = x[next_rand(seed) % n];
    qsort(buf, n, sizeof *buf, cmp_double);
    return quantile_sorted(buf, n, 0.5);
}

int hs_bstat_ratio_ci(const double *a, size_t na, const double *b, size_t nb, double confidence,
                      int rounds, double *lo, double *hi)
{
    if (na == 0 || nb == 0 || rounds < 10)
        return -1;
    double *buf = malloc((na > nb ? na : nb) * sizeof *buf);
    double *r = malloc((size_t)rounds * sizeof *r);
    if (!buf || !r) {
        free(buf);
        free(r);
        return -1;
    }
    uint64_t seed = 0x5eed;
    int rc = 0;
    for (int i = 0; i < rounds && rc == 0; i++) {
        double ma = resample_median(a, na, buf, &seed);
        double mb = resample_median(b, nb, buf, &seed);
        if (ma == 0)
            rc = -1;
        else
            r[i] = mb / ma;
    }
    if (rc == 0) {
        qsort(r, (size_t)rounds, sizeof *r, cmp_double);
        *lo = quantile_sorted(r, (size_t)rounds, (1.0 - confidence) / 2.0);
        *hi = quantile_sorted(r, (size_t)rounds, 1.0 - (1.0 - confidence) / 2.0);
    }
    free(buf);
    free(r);
    return rc;
}
