/* stacks.h — small containers shared by the exporters and importers in
 * report/: a hash map from a pair of uint64 to a
 * dense index, a pre-order walk of analysis' call tree, saturating adds, a
 * buffered writer (optionally with a writer thread of its own, or into
 * memory) and JSON string output. Nothing here knows a file format.
 */
#ifndef HS_REPORT_STACKS_H
#define HS_REPORT_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/analysis.h"
#include "base/hashmap.h"
#include "base/strtab.h" /* the string intern table the exporters use */

/* ---- a hash map from a pair of uint64 to a dense index 0,1,2,... ----
 * The caller keeps its records in its own array indexed by the result.
 * (base/hashmap.h's multimap from the pair's hash, the pairs kept here.) */
typedef struct {
    hs_idmap ids;   /* hash of (a, b) -> index */
    uint64_t *keys; /* (a, b) of index i at 2i, 2i + 1 */
    size_t n, cap;  /* cap: of keys, in uint64s */
} hs_map;

int hs_map_init(hs_map *m);
void hs_map_free(hs_map *m);
/* Index of (a, b); a new key gets index m->n (then *is_new = 1).
 * UINT32_MAX on out of memory. */
uint32_t hs_map_get(hs_map *m, uint64_t a, uint64_t b, int *is_new);

/* ---- walking analysis' call tree ---- */

/* The node after i in pre-order (children before siblings); 0 when the walk
 * is over. Start with t->t[0].first_child. */
static inline uint32_t hs_calltree_next(const hs_calltree *t, uint32_t i)
{
    if (t->t[i].first_child)
        return t->t[i].first_child;
    while (i && !t->t[i].next_sibling)
        i = t->t[i].parent;
    return i ? t->t[i].next_sibling : 0;
}

/* ---- small helpers shared by the writers ---- */

/* Saturating addition: hostile profiles carry arbitrary int64 values. */
static inline int64_t hs_sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/* A buffered writer for millions of numbers and short strings (stdio's
 * fprintf and putc are slow at that rate). Flush before using out directly;
 * write errors show in ferror(out). With hs_wbuf_thread, a thread of its
 * own does the writing: hs_wflush hands it the full buffer and the caller
 * fills a second one meanwhile (write(2) off the caller's path: the
 * collapsed stacks of bench's large profile are 136 MB); out is then the
 * thread's until hs_wbuf_end. */
#define HS_WBUF_SIZE (1 << 16)
typedef struct hs_wthread hs_wthread;
typedef struct {
    FILE *out;
    size_t n, cap;
    char *buf;       /* being filled: own, or one of the thread's two */
    hs_wthread *thr; /* NULL: hs_wflush writes itself */
    bool mem;        /* hs_wbuf_mem's */
    bool failed;     /* in memory: out of memory (what was written is dropped) */
    char own[HS_WBUF_SIZE];
} hs_wbuf;

void hs_wbuf_init(hs_wbuf *w, FILE *out);
/* A writer into memory (a piece of a split walk's output): the buffer
 * grows to hold all that is written, buf[0..n) (failed: out of memory,
 * what was written is lost). hs_wbuf_mem_free frees it; the thread and
 * hs_wflush are not for it. */
void hs_wbuf_mem(hs_wbuf *w);
void hs_wbuf_mem_free(hs_wbuf *w);
/* Start the writer thread. 0, or -1 (out of memory or no thread: then w
 * stays as it was and hs_wflush writes itself). */
int hs_wbuf_thread(hs_wbuf *w);
/* Wait for the thread to write what it was given and end it (nothing when
 * there is none); what is still in the buffer is dropped: hs_wflush first
 * to keep it. After a failed write errno is that write's. Call on every
 * path once hs_wbuf_thread succeeded. */
void hs_wbuf_end(hs_wbuf *w);
void hs_wflush(hs_wbuf *w);
/* v in decimal */
void hs_wint(hs_wbuf *w, int64_t v);
void hs_wmem(hs_wbuf *w, const void *p, size_t len);
static inline void hs_wchar(hs_wbuf *w, char c)
{
    if (w->n == w->cap)
        hs_wflush(w);
    w->buf[w->n++] = c;
}

/* ---- a walk's path text and output (collapsed and speedscope) ----
 * The text of the path from the root down to the node a walk is at, kept
 * per depth (a node adds its frame to its parent's text), and the writer
 * its output goes to. A piece of a split walk (hs_calltree_walk_split)
 * is forked from it where the piece starts, its output in memory. */
typedef struct {
    hs_wbuf *w;
    char *path;
    size_t path_cap;
    size_t *off; /* depth d: the path's text is path[0..off[d]) */
    size_t off_cap;
    uint32_t depth; /* of the node visited last */
} hs_wpath;

/* piece: from's path (down to from's depth), an empty writer in memory.
 * 0, or -1 (out of memory; nothing to free). */
int hs_wpath_fork(hs_wpath *piece, const hs_wpath *from);
/* piece's output after to's: 0, or 1 (the piece ran out of memory). */
int hs_wpath_join(hs_wpath *to, const hs_wpath *piece);
/* Free the path (and a piece's writer; any other writer is the caller's). */
void hs_wpath_free(hs_wpath *p);
/* A walk's path with a writer of its own to out (an export's whole file):
 * 0, or -1 (out of memory; nothing to free but with hs_wpath_close). */
int hs_wpath_open(hs_wpath *p, FILE *out);
/* hs_wpath_open's end: the writer ended (hs_wbuf_end) and freed, the
 * path freed. */
void hs_wpath_close(hs_wpath *p);

/* Write s as a JSON string literal (with quotes), escaping '<' too so that
 * the output can sit inside an HTML <script> element. */
void hs_json_string(FILE *out, const char *s);
/* The same through a writer. */
void hs_wjson_string(hs_wbuf *w, const char *s);

/* The end of writing a file: out flushed, and no write to it failed. 0, or
 * -1 with "write error: ..." in err. */
int hs_out_finish(FILE *out, char *err, size_t errlen);

#endif
