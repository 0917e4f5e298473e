/* labels.h — the program's own sample labels (hotspur_set_label): each
 * thread's current set of key=value pairs is interned once, outside any
 * signal handler, into a small id that samples carry (stacktab key). */
#ifndef HS_AGENT_LABELS_H
#define HS_AGENT_LABELS_H

#include <stddef.h>
#include <stdint.h>

#define HS_LABELS_MAX 8
#define HS_LABEL_LEN 64

typedef struct {
    char key[HS_LABEL_LEN], value[HS_LABEL_LEN];
} hs_label_pair;

/* Set or replace key on the calling thread (updates hs_self.labels).
 * 0, or -1 with errno (EINVAL, ENOSPC: too many, ENOMEM). */
int hs_labels_set(const char *key, const char *value);
/* In a fork child: the lock may have been held by a thread that is gone. */
void hs_labels_after_fork(void);
/* The calling thread has no labels any more. */
void hs_labels_clear(void);
/* The pairs of label set id; returns their number (0 for id 0 or unknown).
 * The pointer stays valid for the life of the process. */
size_t hs_labels_get(uint32_t id, const hs_label_pair **pairs);

#endif
