/* wordfreq.c — the demo program: counts word frequencies in generated text
 * with a deliberately naive table (linear search), so a profile has a clear
 * story: most time in lookup() and strcmp, some in generating text and in
 * qsort. `make demo` profiles it with hotspur. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 4096

typedef struct {
    char word[16];
    long count;
} entry;

static entry table[MAX_WORDS];
static int n_entries;

static int lookup(const char *w)
{
    for (int i = 0; i < n_entries; i++) /* the hotspot: O(n) per word */
        if (strcmp(table[i].word, w) == 0)
            return i;
    return -1;
}

static void count_word(const char *w)
{
    int i = lookup(w);
    if (i < 0) {
        if (n_entries == MAX_WORDS)
            return;
        i = n_entries++;
        snprintf(table[i].word, sizeof table[i].word, "%s", w);
    }
    table[i].count++;
}

static void make_word(unsigned *seed, char *w)
{
    unsigned v = (*seed = *seed * 1103515245u + 12345u) >> 8;
    int len = 3 + (int)(v % 3);
    for (int k = 0; k < len; k++) { /* words from a small alphabet repeat */
        v = (*seed = *seed * 1103515245u + 12345u) >> 8;
        w[k] = (char)('a' + v % 4);
    }
    w[len] = 0;
}

static int by_count(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    return (y->count > x->count) - (y->count < x->count);
}

int main(int argc, char **argv)
{
    long words = argc > 1 ? atol(argv[1]) : 400000;
    unsigned seed = 42;
    char w[16];
    for (long i = 0; i < words; i++) {
        make_word(&seed, w);
        count_word(w);
    }
    qsort(table, (size_t)n_entries, sizeof *table, by_count);
    printf("%d distinct words; most frequent:", n_entries);
    for (int i = 0; i < 3 && i < n_entries; i++)
        printf(" %s (%ld)", table[i].word, table[i].count);
    printf("\n");
    return 0;
}
