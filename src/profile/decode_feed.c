/* decode_feed.c — a large gzip input decoded while it is inflated
 * (hs_profile_decode_feed, the inflate on a thread of codec.c's): the
 * samples after the leading sample types are decoded as their bytes come,
 * with pass 1's checks of their framing, until a field of another kind or a
 * sample that fails; pass 1 (decode.c) then walks the rest and pass 2
 * passes over the samples done. The result and the errors are those of the
 * decode after a whole gunzip.
 * Errors: NULL with one line, as hs_profile_decode_pb. */
#include "profile/decode_internal.h"
#include "base/vec.h"

#include <stdio.h>
#include <unistd.h>

/* Samples a block of values holds while their number is not known. */
#define HS_FEED_VALUES 4096
/* Bytes behind the inflate's output that it may still read (its window). */
#define HS_FEED_WINDOW ((size_t)64 << 10)

/* The field at data[pos..) as the inflate makes it: 0x0a (sample_type) or
 * 0x12 (sample) and a length whose bytes are all there, as pass 1 would
 * accept it; its bytes in *sub. 0, or 1 when it is another field, is not
 * whole, or the input ended first (pass 1 then walks it). */
static int hs_feed_field(hs_feed *f, const unsigned char *data, size_t pos, size_t *ready, hs_rd *sub)
{
    if (pos + 11 > *ready) /* the tag and a length of up to 10 bytes */
        *ready = hs_feed_wait(f, pos + 11);
    if (pos >= *ready || (data[pos] != 0x0a && data[pos] != 0x12))
        return 1;
    hs_rd r = {data + pos + 1, data + *ready};
    uint64_t flen;
    if (hs_rd_varint(NULL, &r, &flen) != 0)
        return 1;
    size_t at = (size_t)(r.p - data);
    if (flen > SIZE_MAX - at)
        return 1;
    size_t end = at + (size_t)flen;
    if (end > *ready && (*ready = hs_feed_wait(f, end)) < end)
        return 1;
    *sub = (hs_rd){data + at, data + end};
    return 0;
}

/* Before the input is whole: its leading sample_type fields are counted
 * and the samples after them decoded as the inflate makes them, their
 * pages handed back as they are read. Stops at the first field of another
 * kind, or sample that fails (a sample with labels does: the strings are
 * not counted yet), which is left as it is (a failed sample adds nothing).
 * c: the counts; *walked: the bytes walked. 0, or -1 (out of memory). */
static int hs_feed_samples(hs_dec *d, hs_feed *f, hs_counts *c, size_t hint, size_t *walked)
{
    const unsigned char *data = d->base;
    size_t pos = 0, ready = 0, stack_cap = 0, values_end = 0;
    hs_rd sub;
    while (hs_feed_field(f, data, pos, &ready, &sub) == 0) {
        size_t end = (size_t)(sub.end - data), index = c->samples;
        if (data[pos] == 0x0a) { /* a sample type: pass 2 decodes it */
            if (index)
                break; /* after samples: pass 1 counts it */
            c->types++;
            pos = end;
            continue;
        }
        if (!index) { /* the first sample */
            d->spec_types = d->n_types = c->types;
            d->released = (pos + d->page - 1) & ~(d->page - 1); /* the types stay */
            if (hs_stack_index_init(&d->stacks, hint / 128) != 0)
                return HS_FAIL(d, "out of memory");
        }
        if (index == values_end) { /* the next block of values */
            size_t nv = HS_FEED_VALUES * d->n_types;
            if (nv / HS_FEED_VALUES != d->n_types || nv > SIZE_MAX / 8 ||
                !(d->values = hs_arena_alloc(d->arena, nv * 8)))
                return HS_FAIL(d, "out of memory");
            d->values_first = index;
            values_end = index + HS_FEED_VALUES;
        }
        if (hs_profile_reserve_samples(d->p, index + 1) != 0 ||
            HS_VEC_RESERVE(d->stack_of, stack_cap, index + 1) < 0)
            return HS_FAIL(d, "out of memory");
        d->stack_of[index] = UINT32_MAX; /* none, unless its ids are shared */
        hs_prefetch_samples(d, index, sub.end, data + ready);
        if (hs_dec_sample(d, sub, index) != 0) {
            /* labels (their strings are not counted yet), or an error: pass 2
             * decodes it again and reports what it finds (out of memory too) */
            d->failed = false;
            d->err[0] = '\0';
            break;
        }
        c->samples++;
        if (!index)
            d->skip_from = data + pos;
        pos = end;
        d->skip_to = data + pos;
        if (index % 1024 == 0) {
            d->keep_from = ready > HS_FEED_WINDOW ? ready - HS_FEED_WINDOW : 0;
            hs_release_read(d, data + pos);
        }
    }
    *walked = pos;
    return 0;
}

hs_profile *hs_profile_decode_feed(hs_feed *f, const unsigned char *data, size_t hint, char *err,
                                   size_t errlen)
{
    long page = sysconf(_SC_PAGESIZE);
    hs_dec d = {.base = data, .err = err, .errlen = errlen, .release = page > 0,
                .page = page > 0 ? (size_t)page : 4096};
    hs_counts c = {0};
    size_t walked = 0, len = 0;
    int rc = (d.p = hs_profile_new()) ? 0 : HS_FAIL(&d, "out of memory");
    if (rc == 0) {
        d.arena = hs_profile_arena(d.p);
        rc = hs_feed_samples(&d, f, &c, hint, &walked);
    }
    /* the gunzip's error first, as when it ran before the decoding */
    if (hs_feed_end(f, &len, err, errlen) != 0 || rc != 0)
        goto fail;
    d.keep_from = SIZE_MAX;
    if (len == 0) {
        snprintf(err, errlen, "empty profile");
        goto fail;
    }
    /* pass 1 over the rest: the fields walked were checked as it checks them */
    if (hs_pass1(&d, (hs_rd){data + walked, data + len}, &c) != 0)
        goto fail;
    return hs_decode_rest(&d, (hs_rd){data, data + len}, &c, 0);
fail:
    hs_dec_free(&d);
    free(d.stack_of);
    hs_profile_free(d.p);
    return NULL;
}
