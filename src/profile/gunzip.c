/* gunzip.c — the one bounded gunzip (profile.h, hs_gunzip_bounded): every
 * gzip member of a buffer inflated into a capped one, for the codec's
 * whole-buffer decode and the server's uploads alike, under the caller's
 * limits (the output size, and above a floor its ratio to the input).
 *
 * The largest output the limits allow is the room libdeflate is given, so
 * whatever it inflates is within them. The gzip trailer's size (mod 2^32:
 * the last member's) is only the first guess of the room: exact for one
 * member; for several (hs_profile_encode writes a member per ~2 MiB) the
 * room grows by doubling. Anything libdeflate refuses (over a limit,
 * corrupt, truncated) takes the streaming path (zlib), which counts the
 * output as it grows and names the error. libdeflate is 2-3x faster than
 * zlib's inflate on whole buffers. The codec's threaded inflate of large
 * files (codec.c, hs_feed) streams with ISA-L under the same limits
 * (hs_gunzip_max) and messages (hs_gunzip_refuse). */
#include <libdeflate.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#include "profile/profile.h"

static bool is_gzip(const unsigned char *d, size_t len)
{
    return len >= 2 && d[0] == 0x1f && d[1] == 0x8b;
}

size_t hs_gunzip_max(size_t len, const hs_gunzip_limits *lim)
{
    size_t by_ratio = len && lim->max_ratio > SIZE_MAX / len ? SIZE_MAX : len * lim->max_ratio;
    by_ratio = by_ratio > lim->ratio_floor + 1 ? by_ratio - 1 : lim->ratio_floor;
    return lim->max_out < by_ratio ? lim->max_out : by_ratio;
}

int hs_gunzip_refuse(size_t len, const hs_gunzip_limits *lim, char *err, size_t errlen)
{
    if (hs_gunzip_max(len, lim) == lim->max_out)
        snprintf(err, errlen, "decompressed data is over the limit of %zu bytes", lim->max_out);
    else
        snprintf(err, errlen, "gzip data expands more than %ux (a decompression bomb?)", lim->max_ratio);
    return HS_GUNZIP_TOO_LARGE;
}

/* The streaming path: zlib into a buffer grown up to the limit, every
 * error named. */
static int gunzip_stream(const unsigned char *in, size_t len, size_t hint, const hs_gunzip_limits *lim,
                         unsigned char **out, size_t *outlen, char *err, size_t errlen)
{
    size_t max = hs_gunzip_max(len, lim);
    size_t cap = hint > len * 4 ? hint + 64 : len * 4;
    if (cap < ((size_t)1 << 16))
        cap = (size_t)1 << 16;
    if (cap > max + 1)
        cap = max + 1;
    unsigned char *buf = malloc(cap);
    z_stream z = {0};
    if (!buf || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
        free(buf);
        snprintf(err, errlen, "out of memory");
        return HS_GUNZIP_NOMEM;
    }
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)(len > UINT32_MAX ? UINT32_MAX : len);
    size_t used = 0;
    int status = 0;
    for (;;) {
        if (used == cap) {
            if (cap > max) {
                status = hs_gunzip_refuse(len, lim, err, errlen);
                break;
            }
            size_t nc = cap * 2 > max + 1 ? max + 1 : cap * 2;
            unsigned char *nb = realloc(buf, nc);
            if (!nb) {
                snprintf(err, errlen, "out of memory");
                status = HS_GUNZIP_NOMEM;
                break;
            }
            buf = nb;
            cap = nc;
        }
        z.next_out = buf + used;
        z.avail_out = (uInt)(cap - used > UINT32_MAX ? UINT32_MAX : cap - used);
        size_t before = z.avail_out;
        int zr = inflate(&z, Z_NO_FLUSH);
        used += before - z.avail_out;
        if (used > max) {
            status = hs_gunzip_refuse(len, lim, err, errlen);
            break;
        }
        if (zr == Z_STREAM_END) {
            size_t consumed = (size_t)(z.next_in - in);
            if (consumed == len || !is_gzip(in + consumed, len - consumed))
                break; /* trailing bytes after the last member are ignored, as gzip does */
            if (inflateReset(&z) != Z_OK) {
                snprintf(err, errlen, "gzip: inflateReset failed");
                status = HS_GUNZIP_NOMEM;
                break;
            }
        } else if (zr == Z_BUF_ERROR && z.avail_in == 0) {
            snprintf(err, errlen, "truncated gzip data");
            status = HS_GUNZIP_BAD;
            break;
        } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
            snprintf(err, errlen, "corrupt gzip data (%s)", z.msg ? z.msg : "inflate failed");
            status = HS_GUNZIP_BAD;
            break;
        }
    }
    inflateEnd(&z);
    if (status) {
        free(buf);
        return status;
    }
    *out = buf;
    *outlen = used;
    return 0;
}

/* libdeflate, member after member, into a buffer of `guess` bytes grown up
 * to `max` (a member that does not fit is inflated again into a larger
 * one). NULL on any failure: the streaming path then names it. */
static unsigned char *gunzip_whole(const unsigned char *in, size_t len, size_t guess, size_t max, size_t *outlen)
{
    struct libdeflate_decompressor *dd = libdeflate_alloc_decompressor();
    size_t cap = guess < max ? guess : max;
    unsigned char *buf = dd ? malloc(cap ? cap : 1) : NULL;
    size_t used = 0, consumed = 0;
    bool ok = buf != NULL;
    while (ok) {
        size_t in_n, out_n;
        enum libdeflate_result r =
            libdeflate_gzip_decompress_ex(dd, in + consumed, len - consumed, buf + used, cap - used, &in_n, &out_n);
        if (r == LIBDEFLATE_INSUFFICIENT_SPACE && cap < max) {
            size_t nc = cap > max / 2 ? max : cap * 2;
            unsigned char *nb = realloc(buf, nc);
            ok = nb != NULL;
            buf = nb ? nb : buf;
            cap = nc;
            continue;
        }
        if (r != LIBDEFLATE_SUCCESS)
            break;
        consumed += in_n;
        used += out_n;
        /* trailing bytes that are not gzip are ignored, as gzip does */
        if (consumed == len || !is_gzip(in + consumed, len - consumed)) {
            libdeflate_free_decompressor(dd);
            *outlen = used;
            return buf;
        }
    }
    if (dd)
        libdeflate_free_decompressor(dd);
    free(buf);
    return NULL;
}

int hs_gunzip_bounded(const void *data, size_t len, const hs_gunzip_limits *lim, unsigned char **out,
                      size_t *outlen, char *err, size_t errlen)
{
    const unsigned char *in = data;
    size_t hint = 0;
    if (len >= 18) {
        const unsigned char *t = in + len - 4;
        hint = (size_t)t[0] | (size_t)t[1] << 8 | (size_t)t[2] << 16 | (size_t)t[3] << 24;
    }
    size_t max = hs_gunzip_max(len, lim);
    /* one member: its size; several: the last one's is small, the whole
     * ~4x the input (profiles compress 1.5-20x) */
    size_t guess = hint > len ? hint : len * 4 > ((size_t)1 << 16) ? len * 4 : (size_t)1 << 16;
    unsigned char *buf = gunzip_whole(in, len, guess, max, outlen);
    if (buf) {
        *out = buf;
        return 0;
    }
    return gunzip_stream(in, len, hint, lim, out, outlen, err, errlen);
}
