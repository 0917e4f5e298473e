/* profile_internal.h — private helpers shared by profile.c (the model) and
 * the pprof codec (codec.c, decode.c, decode_feed.c, encode.c): the bump
 * arena that owns every per-sample array and string, and raw "append with a
 * given id" operations used when decoding a file whose ids were chosen by
 * another producer.
 * Nothing outside src/profile includes this file. */
#ifndef HS_PROFILE_INTERNAL_H
#define HS_PROFILE_INTERNAL_H

#include "profile/profile.h"

/* Bump allocator: memory is released only as a whole. */
typedef struct hs_arena_chunk hs_arena_chunk;
typedef struct {
    hs_arena_chunk *head;
    size_t total;     /* bytes reserved in all chunks */
    size_t limit;     /* 0 = unlimited; allocations beyond fail */
} hs_arena;

void *hs_arena_alloc(hs_arena *a, size_t size);
void *hs_arena_memdup(hs_arena *a, const void *src, size_t size);
char *hs_arena_strdup(hs_arena *a, const char *s);
void hs_arena_free(hs_arena *a);
/* Move every chunk of `from` into `a` (which then frees them); from ends empty. */
void hs_arena_adopt(hs_arena *a, hs_arena *from);

/* The profile's own arena. */
hs_arena *hs_profile_arena(hs_profile *p);

/* Grow one of the profile's arrays so it can hold `need` elements. */
int hs_profile_reserve_samples(hs_profile *p, size_t need);
/* Room for that many strings, mappings, functions and locations (a decoder
 * knows the counts: one allocation each instead of repeated doubling). */
int hs_profile_reserve_tables(hs_profile *p, size_t strings, size_t mappings, size_t functions, size_t locations);

/* Append raw entries with caller-chosen ids; arrays must already live in the
 * profile's arena (they are not copied). The id maps are rebuilt by
 * hs_profile_reindex(), which fails on duplicate or zero ids. */
int hs_profile_push_string_raw(hs_profile *p, char *s);
int hs_profile_push_mapping_raw(hs_profile *p, const hs_mapping *m);
int hs_profile_push_location_raw(hs_profile *p, const hs_location *l);
int hs_profile_push_function_raw(hs_profile *p, const hs_function *f);
int hs_profile_push_sample_type_raw(hs_profile *p, int64_t type, int64_t unit);
int hs_profile_push_comment_raw(hs_profile *p, int64_t comment);
int hs_profile_reindex(hs_profile *p, char *err, size_t errlen);

/* Record the decoder's stack classes (see hs_profile_sample_stack): the
 * profile takes stack_of (malloc'd, n entries, values < n_classes or
 * UINT32_MAX). */
void hs_profile_set_stack_classes(hs_profile *p, uint32_t *stack_of, size_t n, size_t n_classes);

/* Decode un-gzipped profile.proto bytes (decode.c): NULL with a message.
 * `release`: data is a private anonymous mapping of the caller's that the
 * decoder may hand back to the kernel (MADV_DONTNEED) behind its cursor. */
hs_profile *hs_profile_decode_pb(const unsigned char *data, size_t len, bool release, char *err,
                                 size_t errlen);
/* The same on `threads` threads (1 or 2; 0: 2 for inputs of 1 MiB or more,
 * as hs_profile_decode_pb): the result, error included, is the same. */
hs_profile *hs_profile_decode_pb_threads(const unsigned char *data, size_t len, bool release,
                                         int threads, char *err, size_t errlen);

/* A gzip input inflated on a thread of its own (codec.c) while
 * decode_feed.c decodes what it has made so far. */
typedef struct hs_feed hs_feed;
/* The bytes inflated so far once there are `want`, or fewer when the
 * inflate has ended first (done, or failed). */
size_t hs_feed_wait(hs_feed *f, size_t want);
/* Once the inflate has ended: 0 with the inflated length, or -1 with the
 * message the whole-buffer gunzip would give. Called once. */
int hs_feed_end(hs_feed *f, size_t *len, char *err, size_t errlen);
/* hs_profile_decode_pb of the bytes f inflates at data (a private
 * anonymous mapping, handed back behind the cursor), decoded while they
 * are made; hint: a guess of their length. Ends f. */
hs_profile *hs_profile_decode_feed(hs_feed *f, const unsigned char *data, size_t hint, char *err,
                                   size_t errlen);
/* hs_profile_decode of gzip bytes with the gunzip chosen: `feed`, inflated
 * on a thread and decoded behind it, the bytes made published every `step`
 * (0: the default); else whole, then decoded. For tests: the result, error
 * included, is the same. */
hs_profile *hs_profile_decode_gz_mode(const void *data, size_t len, bool feed, size_t step,
                                      char *err, size_t errlen);

/* The encoder (encode.c). Its output is a sequence of top-level fields,
 * numbered from 0 in the order they are written; a part is a range of
 * them, encoded on its own (parts concatenate to the whole encoding). */
/* Cuts the fields into parts of about `size` encoded bytes (a guess): the
 * end of each part, increasing, the last the number of fields (at least
 * one part). A malloc'd array of *n_parts, or NULL when out of memory. */
size_t *hs_profile_pb_plan(const hs_profile *p, size_t size, size_t *n_parts);
/* profile.proto bytes (un-gzipped) of fields [from, to) (to may be
 * SIZE_MAX: to the end) into a malloc'd buffer. 0, or -1 when out of memory. Reads p only: parts of one profile
 * may be encoded by several threads at once. */
int hs_profile_encode_part(const hs_profile *p, size_t from, size_t to, unsigned char **out,
                           size_t *outlen);
/* The same into *buf (malloc'd, *cap bytes; NULL and 0 the first time),
 * grown as needed and kept by the caller (also on error): a thread encoding
 * part after part reuses one buffer. The bytes are (*buf)[0..*len). */
int hs_profile_encode_part_into(const hs_profile *p, size_t from, size_t to, unsigned char **buf,
                                size_t *cap, size_t *len);
/* hs_profile_encode_to with the part size (the planned bytes a part, see
 * hs_profile_pb_plan) and the number of threads (the caller's included; 0:
 * one per core, at most 4) given: for tests; the bytes after gunzip are the
 * same whatever they are. */
int hs_profile_encode_gz(const hs_profile *p, size_t part, int threads, hs_profile_sink sink,
                         void *ctx, char *err, size_t errlen);

#endif
