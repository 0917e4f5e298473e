/* codec.c — pprof profile.proto <-> hs_profile (see profile.h).
 *
 * Decoding: optional gunzip (gunzip.c's bounded one, detected by magic, bounded in size
 * and ratio; a large input by ISA-L on a thread of its own, decoded while it
 * inflates: hs_decode_feed and decode_feed.c), then decode.c reads the wire format straight
 * into the model and validates every string index and id reference. Any
 * failure returns NULL with a one-line reason. Encoding: encode.c writes the wire format in
 * parts, gzipped here (libdeflate; a large profile part by part on every
 * core with ISA-L, see hs_profile_encode; zlib for the agent), and the file
 * plumbing. */
#define _GNU_SOURCE /* mremap */
#include "profile/profile_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <isa-l/igzip_lib.h>
#include <libdeflate.h>
#include <pthread.h>
#include <stdatomic.h>
#include <zlib.h>

#include "base/fs.h"
#include "base/vec.h"

/* Decoded size limits: never more than 2 GiB of protobuf; above 256 MiB the
 * gzip expansion ratio must stay under 200 (real profiles compress ~3-20x). */
#define HS_MAX_DECODED ((size_t)2 << 30)
#define HS_RATIO_FREE ((size_t)256 << 20)
#define HS_MAX_RATIO 200

#define HS_ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)

/* ---- gzip ---- */

static bool hs_is_gzip(const unsigned char *d, size_t len)
{
    return len >= 2 && d[0] == 0x1f && d[1] == 0x8b;
}

/* The codec's gunzip bounds (gunzip.c): 2 GiB, and above 256 MiB less
 * than HS_MAX_RATIO times the input. */
static const hs_gunzip_limits hs_codec_gunzip = {HS_MAX_DECODED, HS_MAX_RATIO, HS_RATIO_FREE};

/* The gunzip output: an anonymous mapping (pages cost nothing until
 * written, growth is mremap, and the decoder may hand back the pages it has
 * read: see hs_profile_decode_pb). */
typedef struct {
    unsigned char *p;
    size_t cap;
} hs_mbuf;

static int hs_mbuf_reserve(hs_mbuf *b, size_t cap)
{
    void *n = b->p ? mremap(b->p, b->cap, cap, MREMAP_MAYMOVE)
                   : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (n == MAP_FAILED)
        return -1;
    b->p = n;
    b->cap = cap;
    return 0;
}

static void hs_mbuf_free(hs_mbuf *b)
{
    if (b->p)
        (void)munmap(b->p, b->cap);
    b->p = NULL;
    b->cap = 0;
}

/* The size the gzip trailer at the end of in[0..len) gives (ISIZE: of its
 * last member, modulo 4 GiB), 0 when too short to hold one. */
static size_t hs_gz_isize(const unsigned char *in, size_t len)
{
    if (len < 18)
        return 0;
    const unsigned char *t = in + len - 4;
    return (size_t)t[0] | (size_t)t[1] << 8 | (size_t)t[2] << 16 | (size_t)t[3] << 24;
}

/* Gunzip in[0..len) whole, then decode it; `owner` (or NULL: borrowed)
 * holds the gzip bytes and is released once they are inflated. */
static hs_profile *hs_decode_whole(const unsigned char *in, size_t len, hs_profile_input *owner,
                                   char *err, size_t errlen)
{
    unsigned char *raw = NULL;
    size_t rawlen;
    hs_profile *p = NULL;
    int rc = hs_gunzip_bounded(in, len, &hs_codec_gunzip, &raw, &rawlen, err, errlen);
    if (owner)
        hs_profile_input_free(owner);
    if (rc == 0) /* malloc'd: its pages are not handed back as they are read */
        p = hs_profile_decode_pb(raw, rawlen, false, err, errlen);
    free(raw);
    return p;
}

/* ---- gunzip on a thread, decoded while it inflates (hs_feed) ----
 * A large gzip input is inflated by a thread of its own with ISA-L, which
 * streams (libdeflate inflates a whole buffer at once), into a mapping
 * reserved at the size limit so that it never moves; the bytes ready so far
 * are published as they come, and decode_feed.c decodes the samples (the first
 * ~85% of a profile as encoders write it) behind the inflate instead of
 * after it. Errors are libdeflate's: its header checks (hs_gz_header), a
 * deflate stream and trailer that do not check out are "corrupt", and the
 * size limits apply at the same output sizes. */

/* Below this many gzip bytes the whole-buffer gunzip, then the decode: a
 * thread costs more than the overlap gains. */
#ifndef HS_FEED_MIN /* (a build for tests may set it) */
#define HS_FEED_MIN ((size_t)1 << 20)
#endif
/* Output bytes inflated between two publications of the bytes ready. */
#define HS_FEED_STEP ((size_t)256 << 10)

/* The length of the gzip member header at in[0..n) as libdeflate reads it
 * (libdeflate_gzip_decompress_ex: the checks, in its order), 0 when it is
 * refused; the deflate data and the trailer follow it. */
static size_t hs_gz_header(const unsigned char *in, size_t n)
{
    if (n < 18 || in[0] != 0x1f || in[1] != 0x8b || in[2] != 8)
        return 0;
    unsigned flg = in[3];
    size_t i = 10; /* ID1 ID2 CM FLG MTIME(4) XFL OS */
    if (flg & 0xe0)
        return 0;
    if (flg & 0x04) { /* FEXTRA */
        size_t xlen = (size_t)in[i] | (size_t)in[i + 1] << 8;
        i += 2;
        if (n - i < xlen + 8)
            return 0;
        i += xlen;
    }
    for (unsigned bit = 0x08; bit <= 0x10; bit <<= 1) /* FNAME, FCOMMENT: to a NUL */
        if (flg & bit) {
            while (in[i++] != 0 && i != n)
                ;
            if (n - i < 8)
                return 0;
        }
    if (flg & 0x02) { /* FHCRC: skipped, not checked */
        i += 2;
        if (n - i < 8)
            return 0;
    }
    return i;
}

struct hs_feed {
    const unsigned char *in; /* the gzip bytes */
    size_t in_len;
    hs_profile_input *owner; /* freed once inflated (NULL: borrowed) */
    size_t in_released;      /* its bytes handed back so far */
    size_t step;             /* output bytes between publications */
    hs_mbuf out;
    _Atomic size_t ready;    /* bytes of out inflated so far */
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* ready grew, or ended */
    bool ended;              /* under mu */
    int rc;                  /* after ended: 0, or -1 with err */
    char err[128];
    pthread_t tid;
    bool joinable; /* tid runs hs_feed_main (else it ran here, first) */
};

static void hs_feed_publish(hs_feed *f, size_t used, bool end)
{
    atomic_store_explicit(&f->ready, used, memory_order_release);
    pthread_mutex_lock(&f->mu);
    f->ended = end;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

#define HS_FEED_ERR(...) (snprintf(f->err, sizeof f->err, __VA_ARGS__), -1)

/* The gzip bytes before `upto` were read (the inflate reads them once):
 * when they are our own mapping, their pages go back a few MiB at a time,
 * so that the input and the model decoded meanwhile do not peak together. */
static void hs_feed_release_in(hs_feed *f, size_t upto)
{
    long page = sysconf(_SC_PAGESIZE);
    if (!f->owner || !f->owner->map_len || page <= 0)
        return;
    upto &= ~((size_t)page - 1);
    if (upto >= f->in_released + ((size_t)4 << 20) &&
        madvise((void *)(uintptr_t)(f->in + f->in_released), upto - f->in_released, MADV_DONTNEED) == 0)
        f->in_released = upto;
}

/* Every member of the input, as hs_gunzip_bounded does it, into f->out. */
static int hs_feed_inflate(hs_feed *f)
{
    size_t limit = hs_gunzip_max(f->in_len, &hs_codec_gunzip), used = 0, consumed = 0;
    struct inflate_state *s = malloc(sizeof *s);
    if (!s)
        return HS_FEED_ERR("out of memory");
    int rc = 0;
    while (rc == 0) {
        size_t rem = f->in_len - consumed, h = hs_gz_header(f->in + consumed, rem);
        if (!h || rem > UINT32_MAX) {
            rc = HS_FEED_ERR("corrupt or truncated gzip data");
            break;
        }
        isal_inflate_init(s);
        s->crc_flag = ISAL_GZIP_NO_HDR_VER; /* ISA-L checks the trailer's CRC-32 and size */
        s->next_in = (uint8_t *)(uintptr_t)(f->in + consumed + h);
        s->avail_in = (uint32_t)(rem - h);
        while (rc == 0 && s->block_state != ISAL_BLOCK_FINISH) {
            size_t room = limit + 1 - used; /* as libdeflate's last buffer */
            if (room == 0) {
                rc = (hs_gunzip_refuse(f->in_len, &hs_codec_gunzip, f->err, sizeof f->err), -1);
                break;
            }
            uint32_t give = (uint32_t)(room < f->step ? room : f->step);
            uint32_t in_before = s->avail_in;
            s->next_out = f->out.p + used;
            s->avail_out = give;
            int r = isal_inflate(s);
            used += give - s->avail_out;
            hs_feed_release_in(f, (size_t)(s->next_in - f->in));
            if (r != ISAL_DECOMP_OK || (s->block_state != ISAL_BLOCK_FINISH &&
                                        s->avail_out == give && s->avail_in == in_before))
                rc = HS_FEED_ERR("corrupt or truncated gzip data"); /* no progress: the input ended */
            else
                hs_feed_publish(f, used, false);
        }
        if (rc != 0)
            break;
        consumed = f->in_len - s->avail_in;
        if (used > limit)
            rc = (hs_gunzip_refuse(f->in_len, &hs_codec_gunzip, f->err, sizeof f->err), -1);
        else if (consumed == f->in_len || !hs_is_gzip(f->in + consumed, f->in_len - consumed))
            break; /* trailing garbage after the last member is ignored, as gzip does */
    }
    free(s);
    return rc;
}

static void *hs_feed_main(void *arg)
{
    hs_feed *f = arg;
    f->rc = hs_feed_inflate(f);
    if (f->owner) /* the gzip bytes are not needed any more */
        hs_profile_input_free(f->owner);
    hs_feed_publish(f, atomic_load_explicit(&f->ready, memory_order_relaxed), true);
    return NULL;
}

size_t hs_feed_wait(hs_feed *f, size_t want)
{
    size_t r = atomic_load_explicit(&f->ready, memory_order_acquire);
    if (r >= want)
        return r;
    pthread_mutex_lock(&f->mu);
    while (!f->ended && (r = atomic_load_explicit(&f->ready, memory_order_acquire)) < want)
        pthread_cond_wait(&f->cv, &f->mu);
    r = atomic_load_explicit(&f->ready, memory_order_acquire);
    pthread_mutex_unlock(&f->mu);
    return r;
}

int hs_feed_end(hs_feed *f, size_t *len, char *err, size_t errlen)
{
    if (f->joinable)
        pthread_join(f->tid, NULL);
    f->joinable = false;
    if (f->rc != 0)
        return HS_ERR("%s", f->err);
    *len = atomic_load_explicit(&f->ready, memory_order_acquire);
    return 0;
}

/* Gunzip in[0..len) on a thread, decoded behind it; owner as hs_decode.
 * step: output bytes between publications (0: HS_FEED_STEP). */
static hs_profile *hs_decode_feed(const unsigned char *in, size_t len, hs_profile_input *owner,
                                  size_t step, char *err, size_t errlen)
{
    hs_feed f = {.in = in, .in_len = len, .owner = owner, .step = step ? step : HS_FEED_STEP,
                 .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    /* (the trailer's size, if larger than the input: a guess for the tables) */
    size_t limit = hs_gunzip_max(len, &hs_codec_gunzip), isize = hs_gz_isize(in, len), hint = isize > len ? isize : len;
    atomic_init(&f.ready, 0);
    /* reserved, never moved: pages cost nothing until inflated into */
    f.out.p = mmap(NULL, limit + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (f.out.p == MAP_FAILED) /* no room for that much address space (a limit on it) */
        return hs_decode_whole(in, len, owner, err, errlen);
    f.out.cap = limit + 1;
    f.joinable = pthread_create(&f.tid, NULL, hs_feed_main, &f) == 0;
    if (!f.joinable) /* no thread: inflated here, first */
        hs_feed_main(&f);
    hs_profile *p = hs_profile_decode_feed(&f, f.out.p, hint, err, errlen); /* ends f */
    pthread_cond_destroy(&f.cv);
    pthread_mutex_destroy(&f.mu);
    hs_mbuf_free(&f.out);
    return p;
}

/* Decode gzipped (or not) bytes; `owner` (or NULL: borrowed) holds them and
 * is released as soon as they have been inflated. feed: 1 gunzip on a
 * thread (hs_decode_feed), 0 whole first, -1 by size. */
static hs_profile *hs_decode(const unsigned char *d, size_t len, hs_profile_input *owner, int feed,
                             size_t step, char *err, size_t errlen)
{
    hs_profile *p = NULL;
    if (len > HS_MAX_DECODED) {
        snprintf(err, errlen, "profile larger than 2 GiB");
    } else if (!hs_is_gzip(d, len)) {
        p = hs_profile_decode_pb(d, len, false, err, errlen);
    } else {
        return feed > 0 || (feed < 0 && len >= HS_FEED_MIN)
                   ? hs_decode_feed(d, len, owner, step, err, errlen)
                   : hs_decode_whole(d, len, owner, err, errlen);
    }
    if (owner)
        hs_profile_input_free(owner);
    return p;
}

hs_profile *hs_profile_decode(const void *data, size_t len, char *err, size_t errlen)
{
    return hs_decode(data, len, NULL, -1, 0, err, errlen);
}

hs_profile *hs_profile_decode_gz_mode(const void *data, size_t len, bool feed, size_t step,
                                      char *err, size_t errlen)
{
    return hs_decode(data, len, NULL, feed ? 1 : 0, step, err, errlen);
}

hs_profile *hs_profile_decode_input(hs_profile_input *in, char *err, size_t errlen)
{
    return hs_decode(in->data, in->len, in, -1, 0, err, errlen);
}

/* ---- files ---- */

/* The whole of fd, read into an anonymous mapping (hs_mbuf): a regular
 * file's size first, prefaulted in one go (MAP_POPULATE: cheaper than a
 * fault per page), grown by doubling for a pipe or a file that grows
 * meanwhile. Read, not mapped: a mapped file truncated by another process
 * while we read the mapping ends us with SIGBUS; read(2) just sees the
 * shorter file (then the decoder's "truncated" error). */
static int hs_read_all(int fd, hs_profile_input *in, char *err, size_t errlen)
{
    struct stat st;
    size_t cap = 1 << 16, used = 0;
    int populate = 0;
    int have_st = fstat(fd, &st) == 0;
    if (have_st && S_ISDIR(st.st_mode))
        return HS_ERR("is a directory");
    if (have_st && S_ISREG(st.st_mode) && st.st_size > 0) {
        if ((uint64_t)st.st_size > HS_MAX_DECODED)
            return HS_ERR("file larger than 2 GiB");
        cap = (size_t)st.st_size + 1; /* + 1: the end shows as a read of 0 */
        populate = MAP_POPULATE;
    }
    hs_mbuf b = {mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | populate, -1, 0), cap};
    if (b.p == MAP_FAILED)
        return HS_ERR("out of memory");
    for (;;) {
        if (used == b.cap) {
            if (b.cap > HS_MAX_DECODED) {
                hs_mbuf_free(&b);
                return HS_ERR("file larger than 2 GiB");
            }
            if (hs_mbuf_reserve(&b, b.cap * 2 > HS_MAX_DECODED + 1 ? HS_MAX_DECODED + 1 : b.cap * 2) != 0) {
                hs_mbuf_free(&b);
                return HS_ERR("out of memory");
            }
        }
        ssize_t n = read(fd, b.p + used, b.cap - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            hs_mbuf_free(&b);
            return HS_ERR("%s", strerror(e));
        }
        if (n == 0)
            break;
        used += (size_t)n;
    }
    *in = (hs_profile_input){b.p, used, b.cap};
    return 0;
}

int hs_profile_input_read(const char *path, hs_profile_input *in, char *err, size_t errlen)
{
    bool is_stdin = strcmp(path, "-") == 0;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return HS_ERR("%s", strerror(errno));
    int rc = hs_read_all(fd, in, err, errlen);
    if (!is_stdin)
        close(fd);
    return rc;
}

void hs_profile_input_free(hs_profile_input *in)
{
    if (in->map_len)
        (void)munmap((void *)(uintptr_t)in->data, in->map_len);
    else
        free((void *)(uintptr_t)in->data);
    *in = (hs_profile_input){NULL, 0, 0};
}

hs_profile *hs_profile_read_file(const char *path, char *err, size_t errlen)
{
    hs_profile_input in;
    if (hs_profile_input_read(path, &in, err, errlen) != 0)
        return NULL;
    return hs_profile_decode_input(&in, err, errlen);
}

/* ---- model -> gzipped protobuf ---- */

/* An encoding that fits one 4 KiB filesystem block as it is (the profile
 * of a process without samples: ~1 KB) is stored, not compressed: it takes
 * that block either way, and zlib's Huffman trees cost ~200 000
 * instructions, a third of such a process's start under the agent. */
#define HS_STORED_MAX (4096 - 64)

/* zlib, in the calling thread (hs_profile_encode_zlib: the agent's). */
static int hs_gzip(const unsigned char *in, size_t len, void **out, size_t *outlen, char *err,
                   size_t errlen)
{
    z_stream z = {0};
    /* A window (and hash table) no larger than the input: a small profile
     * (each process's under `record -- make`) compresses as well (the same
     * size on the agent's profiles of 5-7 KB), without zlib setting up and
     * clearing 256 KiB for it. */
    int wbits = 9;
    while (wbits < MAX_WBITS && ((size_t)1 << wbits) < len)
        wbits++;
    int mem_level = wbits - 7 < 8 ? wbits - 7 : 8;
    int level = len <= HS_STORED_MAX ? 0 : 6;
    if (deflateInit2(&z, level, Z_DEFLATED, 16 + wbits, mem_level, Z_DEFAULT_STRATEGY) != Z_OK)
        return HS_ERR("zlib init failed");
    size_t cap = deflateBound(&z, len) + 64;
    unsigned char *buf = malloc(cap);
    if (!buf) {
        deflateEnd(&z);
        return HS_ERR("out of memory");
    }
    size_t done_in = 0, used = 0;
    int zr = Z_OK;
    while (zr != Z_STREAM_END) {
        size_t in_chunk = len - done_in > UINT32_MAX ? UINT32_MAX : len - done_in;
        size_t out_chunk = cap - used > UINT32_MAX ? UINT32_MAX : cap - used;
        z.next_in = (unsigned char *)in + done_in;
        z.avail_in = (uInt)in_chunk;
        z.next_out = buf + used;
        z.avail_out = (uInt)out_chunk;
        zr = deflate(&z, done_in + in_chunk == len ? Z_FINISH : Z_NO_FLUSH);
        done_in += in_chunk - z.avail_in;
        used += out_chunk - z.avail_out;
        if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
            free(buf);
            deflateEnd(&z);
            return HS_ERR("gzip compression failed");
        }
    }
    deflateEnd(&z);
    *out = buf;
    *outlen = used;
    return 0;
}

int hs_profile_encode_zlib(const hs_profile *p, void **out, size_t *outlen, char *err, size_t errlen)
{
    unsigned char *raw;
    size_t len;
    if (hs_profile_encode_part(p, 0, SIZE_MAX, &raw, &len) != 0)
        return HS_ERR("out of memory");
    int rc = hs_gzip(raw, len, out, outlen, err, errlen);
    free(raw);
    return rc;
}

/* hs_profile_encode: libdeflate for one part, ISA-L and every core for a
 * large profile.
 *
 * The encoding is cut into parts of about HS_PART bytes (encode.c). One
 * part becomes one gzip member at libdeflate's level 6 (stored when it fits
 * a block), in the calling thread. Several are encoded and compressed at
 * ISA-L's level HS_ISAL_LEVEL by the calling thread and up to
 * HS_MAX_THREADS - 1 threads (one per other core) at once, each part taken
 * by one thread and made a gzip member of its own: several members are one
 * valid gzip file (gzip, Go and our readers read them all). On the
 * 1M-sample benchmark profile (65.3 MB encoded; gzip -6 of it 39.82 MB)
 * ISA-L level 2 takes 145 ms CPU for 41.28 MB (+3.7%), where libdeflate's
 * level 1 took 404 ms for 40.75 MB (+2.3%) and level 3 ISA-L 238 ms for
 * 41.15 MB (+3.3%). Compressed parts go to the sink as soon as those
 * before them have: a thread that finds the next parts ready passes them
 * on (outside the lock) while the others compress the later ones, so the
 * output is written while it is made, and the raw encoding is never held
 * whole (each thread reuses one raw buffer; compressed parts wait only
 * while an earlier one is still being compressed). */
#define HS_PART ((size_t)2 << 20)
#define HS_MAX_THREADS 4
#define HS_ISAL_LEVEL 2
#define HS_ISAL_BUF ISAL_DEF_LVL2_DEFAULT

typedef struct {
    unsigned char *gz; /* compressed, waiting for the parts before it */
    size_t gz_len;
} hs_gz_part;

enum { HS_GZ_OK, HS_GZ_NOMEM, HS_GZ_SINK };

typedef struct {
    const hs_profile *p;
    hs_profile_sink sink;
    void *ctx;
    pthread_mutex_t mu;
    size_t *cuts; /* part i is fields [cuts[i-1], cuts[i]) (cuts[-1] = 0) */
    hs_gz_part *parts;
    size_t n;
    size_t next_job; /* the first part no thread has taken */
    size_t next_out; /* the first part not yet given to sink */
    bool writing;    /* a thread is giving parts to sink */
    int failed;      /* HS_GZ_* */
} hs_gz;

/* A gzip member of raw[0..len) (libdeflate) into a malloc'd buffer; NULL
 * when out of memory. */
static unsigned char *hs_deflate_member(struct libdeflate_compressor *c, const unsigned char *raw,
                                        size_t len, size_t *gz_len)
{
    size_t bound = libdeflate_gzip_compress_bound(c, len);
    unsigned char *gz = malloc(bound);
    if (!gz)
        return NULL;
    *gz_len = libdeflate_gzip_compress(c, raw, len, gz, bound);
    if (*gz_len == 0) { /* cannot happen with the bound's room */
        free(gz);
        return NULL;
    }
    return gz;
}

/* The same with ISA-L (level_buf: HS_ISAL_BUF bytes of the thread's).
 * Data that does not compress is stored: 5 bytes a 64 KiB block more, well
 * within the room given. */
static unsigned char *hs_isal_member(unsigned char *level_buf, const unsigned char *raw, size_t len,
                                     size_t *gz_len)
{
    if (len > UINT32_MAX / 2) /* parts are ~2 MiB; one field is never this large */
        return NULL;
    size_t cap = len + len / 1024 + 256;
    unsigned char *gz = malloc(cap);
    if (!gz)
        return NULL;
    struct isal_zstream z;
    isal_deflate_stateless_init(&z);
    z.level = HS_ISAL_LEVEL;
    z.level_buf = level_buf;
    z.level_buf_size = HS_ISAL_BUF;
    z.gzip_flag = IGZIP_GZIP;
    z.end_of_stream = 1;
    z.next_in = (uint8_t *)(uintptr_t)raw;
    z.avail_in = (uint32_t)len;
    z.next_out = gz;
    z.avail_out = (uint32_t)cap;
    if (isal_deflate_stateless(&z) != COMP_OK) {
        free(gz);
        return NULL;
    }
    *gz_len = z.total_out;
    return gz;
}

/* Gives the compressed parts that are next in order to sink, unless a
 * thread already does (called and returns under mu; sink runs outside). */
static void hs_gz_flush(hs_gz *g)
{
    if (g->writing)
        return;
    g->writing = true;
    while (!g->failed && g->next_out < g->n && g->parts[g->next_out].gz) {
        hs_gz_part pc = g->parts[g->next_out];
        pthread_mutex_unlock(&g->mu);
        int rc = g->sink(g->ctx, pc.gz, pc.gz_len);
        pthread_mutex_lock(&g->mu);
        free(pc.gz);
        g->parts[g->next_out].gz = NULL;
        if (rc != 0)
            g->failed = HS_GZ_SINK;
        else
            g->next_out++;
    }
    g->writing = false;
}

/* One thread's loop: take the next part, encode and compress it, pass on
 * what is ready. */
static void *hs_gz_work(void *arg)
{
    hs_gz *g = arg;
    unsigned char *level_buf = malloc(HS_ISAL_BUF), *raw = NULL;
    size_t raw_cap = 0;
    pthread_mutex_lock(&g->mu);
    if (!level_buf)
        g->failed = HS_GZ_NOMEM;
    while (!g->failed && g->next_job < g->n) {
        size_t i = g->next_job++;
        pthread_mutex_unlock(&g->mu);
        unsigned char *gz = NULL;
        size_t raw_len, gz_len = 0;
        if (hs_profile_encode_part_into(g->p, i ? g->cuts[i - 1] : 0, g->cuts[i], &raw, &raw_cap,
                                        &raw_len) == 0)
            gz = hs_isal_member(level_buf, raw, raw_len, &gz_len);
        pthread_mutex_lock(&g->mu);
        if (!gz) {
            if (!g->failed)
                g->failed = HS_GZ_NOMEM;
            break;
        }
        g->parts[i] = (hs_gz_part){gz, gz_len};
        hs_gz_flush(g);
    }
    pthread_mutex_unlock(&g->mu);
    free(raw);
    free(level_buf);
    return NULL;
}

/* The one-part case: one member, level 6 or stored. */
static int hs_gz_one(const hs_profile *p, hs_gz *g)
{
    unsigned char *raw, *gz = NULL;
    size_t len, gz_len = 0;
    if (hs_profile_encode_part(p, 0, SIZE_MAX, &raw, &len) != 0)
        return HS_GZ_NOMEM;
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(len <= HS_STORED_MAX ? 0 : 6);
    gz = c ? hs_deflate_member(c, raw, len, &gz_len) : NULL;
    libdeflate_free_compressor(c);
    free(raw);
    int rc = !gz ? HS_GZ_NOMEM : g->sink(g->ctx, gz, gz_len) != 0 ? HS_GZ_SINK : HS_GZ_OK;
    free(gz);
    return rc;
}

int hs_profile_encode_gz(const hs_profile *p, size_t part, int threads, hs_profile_sink sink,
                         void *ctx, char *err, size_t errlen)
{
    hs_gz g = {.p = p, .sink = sink, .ctx = ctx, .mu = PTHREAD_MUTEX_INITIALIZER};
    int rc = HS_GZ_NOMEM;
    if (!(g.cuts = hs_profile_pb_plan(p, part, &g.n)))
        return HS_ERR("out of memory");
    if (g.n == 1) {
        rc = hs_gz_one(p, &g);
    } else if ((g.parts = calloc(g.n, sizeof *g.parts))) {
        long ncpu = threads > 0 ? threads : sysconf(_SC_NPROCESSORS_ONLN);
        size_t want = ncpu < 2 ? 0 : ncpu >= HS_MAX_THREADS ? HS_MAX_THREADS - 1 : (size_t)ncpu - 1;
        if (want > g.n - 1)
            want = g.n - 1;
        pthread_t tids[HS_MAX_THREADS - 1];
        size_t started = 0;
        while (started < want && pthread_create(&tids[started], NULL, hs_gz_work, &g) == 0)
            started++;
        (void)hs_gz_work(&g); /* this thread works too (alone if none started) */
        for (size_t i = 0; i < started; i++)
            pthread_join(tids[i], NULL);
        rc = g.failed ? g.failed : g.next_out != g.n ? HS_GZ_NOMEM : HS_GZ_OK;
        for (size_t i = 0; i < g.n; i++) /* what a failure left */
            free(g.parts[i].gz);
        free(g.parts);
    }
    free(g.cuts);
    pthread_mutex_destroy(&g.mu);
    if (rc == HS_GZ_SINK)
        return HS_ERR("write error");
    return rc == HS_GZ_OK ? 0 : HS_ERR("out of memory");
}

int hs_profile_encode_to(const hs_profile *p, hs_profile_sink sink, void *ctx, char *err,
                         size_t errlen)
{
    return hs_profile_encode_gz(p, HS_PART, 0, sink, ctx, err, errlen);
}

typedef struct {
    unsigned char *buf;
    size_t len, cap;
} hs_gz_mem;

static int hs_gz_mem_sink(void *ctx, const void *buf, size_t len)
{
    hs_gz_mem *m = ctx;
    if (HS_VEC_RESERVE(m->buf, m->cap, m->len + len) != 0)
        return -1;
    memcpy(m->buf + m->len, buf, len);
    m->len += len;
    return 0;
}

int hs_profile_encode(const hs_profile *p, void **out, size_t *outlen, char *err, size_t errlen)
{
    hs_gz_mem m = {NULL, 0, 0};
    if (hs_profile_encode_to(p, hs_gz_mem_sink, &m, err, errlen) != 0) {
        free(m.buf);
        return HS_ERR("out of memory"); /* the sink's failure too */
    }
    *out = m.buf;
    *outlen = m.len;
    return 0;
}

/* Write buf to a temp file beside path, then rename it over path: a reader
 * (or a crash of the writer) never sees half a file. No fsync: a profile is
 * worth keeping across the crash of its process, not of the machine, and an
 * fsync per file cost ~10 ms each (most of a short process's cost under the
 * agent; `hotspur record -- make` writes hundreds of files). */
static int hs_write_atomic(const char *path, const unsigned char *buf, size_t len, char *err,
                           size_t errlen)
{
    size_t n = strlen(path) + sizeof ".tmp.XXXXXX";
    char *tmp = malloc(n);
    if (!tmp)
        return HS_ERR("out of memory");
    snprintf(tmp, n, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return HS_ERR("%s", strerror(e));
    }
    int rc = 0;
    if (fchmod(fd, 0644) != 0 || hs_write_all(fd, buf, len) != 0)
        rc = HS_ERR("%s", strerror(errno));
    if (close(fd) != 0 && rc == 0)
        rc = HS_ERR("%s", strerror(errno));
    if (rc == 0 && rename(tmp, path) != 0)
        rc = HS_ERR("%s", strerror(errno));
    if (rc != 0)
        (void)unlink(tmp);
    free(tmp);
    return rc;
}

int hs_profile_write_encoded(const void *buf, size_t len, const char *path, char *err, size_t errlen)
{
    if (strcmp(path, "-") == 0)
        return hs_write_all(STDOUT_FILENO, buf, len) == 0 ? 0 : HS_ERR("%s", strerror(errno));
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* a device or FIFO (/dev/null, a pipe): written in place, since a
         * rename would replace it with a regular file */
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return HS_ERR("%s", strerror(errno));
        int rc = hs_write_all(fd, buf, len) == 0 ? 0 : HS_ERR("%s", strerror(errno));
        if (close(fd) != 0 && rc == 0)
            rc = HS_ERR("%s", strerror(errno));
        return rc;
    }
    return hs_write_atomic(path, buf, len, err, errlen);
}

int hs_profile_write_file(const hs_profile *p, const char *path, char *err, size_t errlen)
{
    void *buf;
    size_t len;
    if (hs_profile_encode(p, &buf, &len, err, errlen) != 0)
        return -1;
    int rc = hs_profile_write_encoded(buf, len, path, err, errlen);
    free(buf);
    return rc;
}
