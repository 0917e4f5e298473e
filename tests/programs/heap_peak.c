/* heap_peak.c — a heap that ramps up to a known peak and then shrinks, for
 * tests/integration/heap_peak.sh.
 *
 *   heap_peak BLOCK_KIB
 *
 * site_ramp_a allocates 96 MiB and site_ramp_b 48 MiB in blocks of BLOCK_KIB
 * KiB, interleaved (a, a, b, a, a, b, ...), so that the in-use heap climbs to
 * its peak of 144 MiB with site_ramp_a holding two thirds of it. Then every
 * site_ramp_b block and 7 of 8 site_ramp_a blocks are freed, and site_after
 * allocates 60 MiB, which stays below the peak but makes site_after the
 * biggest site in the final in-use profile. Prints the program's own
 * figures:
 *
 *   peak_bytes N      the highest in-use total of this program's blocks
 *   peak SITE BYTES   what each site held at that moment
 *   final SITE BYTES  what each site holds at exit
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, noclone, no_icf)) /* no_icf: identical bodies stay apart */
#define MIB (1024L * 1024L)

static char *g_a[4096], *g_b[4096], *g_after[4096];
static long g_na, g_nb, g_nafter;

static void touch(char *p, size_t n)
{
    if (!p) {
        fprintf(stderr, "heap_peak: out of memory\n");
        exit(1);
    }
    p[0] = 1;
    p[n - 1] = 2;
}

static NOINLINE void site_ramp_a(size_t block)
{
    char *p = malloc(block);
    touch(p, block);
    g_a[g_na++] = p;
}

static NOINLINE void site_ramp_b(size_t block)
{
    char *p = malloc(block);
    touch(p, block);
    g_b[g_nb++] = p;
}

static NOINLINE void site_after(size_t block)
{
    char *p = malloc(block);
    touch(p, block);
    g_after[g_nafter++] = p;
}

int main(int argc, char **argv)
{
    long kib = argc == 2 ? atol(argv[1]) : 0;
    if (kib < 64 || kib > 8192) {
        fprintf(stderr, "usage: heap_peak BLOCK_KIB (64..8192)\n");
        return 2;
    }
    size_t block = (size_t)kib * 1024;
    long na = 96 * MIB / (long)block, nb = 48 * MIB / (long)block;
    long nafter = 60 * MIB / (long)block;
    printf("heap_peak %ld KiB blocks\n", kib);
    fflush(stdout);
    for (long i = 0; g_na < na || g_nb < nb; i++) {
        if (i % 3 == 2 && g_nb < nb)
            site_ramp_b(block);
        else if (g_na < na)
            site_ramp_a(block);
    }
    long peak_a = g_na * (long)block, peak_b = g_nb * (long)block;
    for (long i = 0; i < g_nb; i++)
        free(g_b[i]);
    long kept_a = 0;
    for (long i = 0; i < g_na; i++) {
        if (i % 8 == 0) {
            kept_a++;
        } else {
            free(g_a[i]);
            g_a[i] = NULL;
        }
    }
    for (long i = 0; i < nafter; i++)
        site_after(block);
    printf("peak_bytes %ld\n", peak_a + peak_b);
    printf("peak site_ramp_a %ld\npeak site_ramp_b %ld\npeak site_after 0\n", peak_a, peak_b);
    printf("final site_ramp_a %ld\nfinal site_ramp_b 0\nfinal site_after %ld\n",
           kept_a * (long)block, g_nafter * (long)block);
    return 0;
}
