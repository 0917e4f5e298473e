/* labels.c — interning of per-thread label sets (see labels.h). A thread's
 * labels live in a thread-local array; every change looks the resulting set
 * up in a process-wide list (mutex, never touched by signal handlers) and
 * stores its id in hs_self.labels, which the samplers copy into samples. */
#define _GNU_SOURCE
#include "agent/labels.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "agent/core.h"

typedef struct {
    hs_label_pair pairs[HS_LABELS_MAX];
    size_t n;
} label_set;

static __thread label_set t_mine; /* the calling thread's current labels */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static label_set **g_sets; /* id - 1 -> set */
static size_t g_n, g_cap;

static int same_set(const label_set *a, const label_set *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->pairs[i].key, b->pairs[i].key) || strcmp(a->pairs[i].value, b->pairs[i].value))
            return 0;
    return 1;
}

static int by_key(const void *x, const void *y)
{
    return strcmp(((const hs_label_pair *)x)->key, ((const hs_label_pair *)y)->key);
}

/* The id of set (copied on first sight); 0 on out of memory. */
static uint32_t intern(const label_set *set)
{
    if (set->n == 0)
        return 0;
    uint32_t id = 0;
    hs_self.in_agent++;
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_n && !id; i++)
        if (same_set(g_sets[i], set))
            id = (uint32_t)i + 1;
    if (!id && g_n < UINT32_MAX - 1) {
        if (g_n == g_cap) {
            size_t cap = g_cap ? 2 * g_cap : 64;
            label_set **ns = realloc(g_sets, cap * sizeof *ns);
            if (ns) {
                g_sets = ns;
                g_cap = cap;
            }
        }
        label_set *copy = g_n < g_cap ? malloc(sizeof *copy) : NULL;
        if (copy) {
            *copy = *set;
            g_sets[g_n++] = copy;
            id = (uint32_t)g_n;
        }
    }
    pthread_mutex_unlock(&g_lock);
    hs_self.in_agent--;
    return id;
}

int hs_labels_set(const char *key, const char *value)
{
    if (!key || !*key || !value || strlen(key) >= HS_LABEL_LEN || strlen(value) >= HS_LABEL_LEN) {
        errno = EINVAL;
        return -1;
    }
    label_set next = t_mine;
    size_t i = 0;
    while (i < next.n && strcmp(next.pairs[i].key, key) != 0)
        i++;
    if (i == next.n) {
        if (next.n == HS_LABELS_MAX) {
            errno = ENOSPC;
            return -1;
        }
        next.n++;
        strcpy(next.pairs[i].key, key);
    }
    strcpy(next.pairs[i].value, value);
    qsort(next.pairs, next.n, sizeof *next.pairs, by_key); /* same set, same id */
    uint32_t id = intern(&next);
    if (!id) {
        errno = ENOMEM;
        return -1;
    }
    t_mine = next;
    hs_self.labels = id;
    return 0;
}

void hs_labels_after_fork(void)
{
    pthread_mutex_init(&g_lock, NULL);
}

void hs_labels_clear(void)
{
    t_mine.n = 0;
    hs_self.labels = 0;
}

size_t hs_labels_get(uint32_t id, const hs_label_pair **pairs)
{
    size_t n = 0;
    pthread_mutex_lock(&g_lock);
    if (id >= 1 && id <= g_n) {
        *pairs = g_sets[id - 1]->pairs;
        n = g_sets[id - 1]->n;
    }
    pthread_mutex_unlock(&g_lock);
    return n;
}
