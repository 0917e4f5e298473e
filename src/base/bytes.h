/* bytes.h — the growable byte buffer every layer uses (the stack record
 * codec, the SQLite blobs, the ClickHouse requests): out of memory is
 * sticky in b->oom and later writes do nothing; after every hs_bytes_*
 * write the bytes are followed by a NUL that n does not count, so a
 * buffer of text is a C string (b->s). Also unsigned LEB128 varints, zigzag for signed values,
 * and a bounded reader (a short or malformed input sets bad, and later
 * reads return 0). A zeroed hs_bytes is empty. */
#ifndef HS_BASE_BYTES_H
#define HS_BASE_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    union {
        unsigned char *p; /* the bytes */
        char *s;          /* the same, as text */
    };
    size_t n, cap;
    int oom;
} hs_bytes;

/* Room for more bytes after n, and the NUL after them. 0, or -1 (and
 * b->oom) on out of memory. */
static inline int hs_bytes_reserve(hs_bytes *b, size_t more)
{
    if (b->oom)
        return -1;
    if (b->n + more + 1 <= b->cap)
        return 0;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->n + more + 1)
        nc *= 2;
    unsigned char *np = realloc(b->p, nc);
    if (!np) {
        b->oom = 1;
        return -1;
    }
    b->p = np;
    b->cap = nc;
    return 0;
}

static inline void hs_bytes_put(hs_bytes *b, const void *d, size_t n)
{
    if (hs_bytes_reserve(b, n) < 0)
        return;
    if (n)
        memcpy(b->p + b->n, d, n);
    b->n += n;
    b->p[b->n] = 0;
}

static inline void hs_bytes_str(hs_bytes *b, const char *s)
{
    hs_bytes_put(b, s, strlen(s));
}

/* printf at the end of the buffer. */
void hs_bytes_printf(hs_bytes *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline void hs_bytes_free(hs_bytes *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

static inline uint64_t hs_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t hs_unzigzag(uint64_t u) { return (int64_t)(u >> 1) ^ -(int64_t)(u & 1); }

/* Unchecked writers for hot loops (at most 10 bytes, reserved first). */
static inline unsigned char *hs_uv_write(unsigned char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

static inline unsigned char *hs_sv_write(unsigned char *p, int64_t v) { return hs_uv_write(p, hs_zigzag(v)); }

static inline void hs_bytes_uv(hs_bytes *b, uint64_t v)
{
    if (hs_bytes_reserve(b, 10) < 0)
        return;
    b->n = (size_t)(hs_uv_write(b->p + b->n, v) - b->p);
    b->p[b->n] = 0;
}

/* A varint from *pp (not past end), advancing *pp; 0 and *bad = 1 when it
 * is cut short or longer than 64 bits (*pp is then left as it was). */
static inline uint64_t hs_get_uv(const unsigned char **pp, const unsigned char *end, int *bad)
{
    const unsigned char *p = *pp;
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && p < end; shift += 7) {
        unsigned char c = *p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *pp = p;
            return v;
        }
    }
    *bad = 1;
    return 0;
}

typedef struct {
    const unsigned char *p, *end;
    int bad;
} hs_reader;

static inline uint64_t hs_read_uv(hs_reader *r) { return hs_get_uv(&r->p, r->end, &r->bad); }
static inline int64_t hs_read_sv(hs_reader *r) { return hs_unzigzag(hs_read_uv(r)); }

#endif
