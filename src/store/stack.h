/* stack.h — stacks as the store keeps them: the stack record format, its
 * hash, the decomposition of a pprof profile into stacks and samples, and
 * the way back (merged rows + records -> a pprof profile).
 *
 * Used by every backend (they store records as opaque blobs named by their
 * hash) and by the server (decompose on ingest, rebuild on query).
 *
 * A stack is the expanded frames of one sample, leaf first, plus the
 * sample's labels. A pprof location with n lines (an inline chain,
 * innermost first) becomes n frames; every frame but the location's last
 * (outermost) one has the "inlined" flag: it was inlined into the next
 * frame. Addresses are not kept (ASLR makes them differ between processes):
 * a location without lines (or whose function has no name) gets a stable
 * name "BASENAME+0xOFFSET", BASENAME the mapping file's basename and OFFSET
 * the address in the file (address - memory_start + file_offset), or
 * "[unknown]" without a mapping. Its system_name is "" or, when the
 * mapping has a build ID, the build-id form below.
 *
 * Record format, version 1 (all integers LEB128 varints; "svarint" is
 * zigzag-encoded; a string is varint length + bytes, no terminator):
 *
 *   byte     version (1)
 *   varint   S, the number of strings in the record's string table
 *   S x      string                    (distinct, in first-use order)
 *   varint   F, the number of frames, leaf first
 *   F x      varint flags              (bit 0: inlined into the next frame)
 *            varint function           (string ref: 0 = "", i = table[i-1])
 *            varint system_name        (string ref)
 *            varint file               (string ref)
 *            varint mapping            (string ref: the object's file name)
 *            svarint line
 *            svarint start_line        (the function's first line)
 *   varint   L, the number of labels, sorted by (key, str, num, num_unit)
 *   L x      varint key, varint str    (string refs)
 *            svarint num
 *            varint num_unit           (string ref)
 *
 * The encoding is canonical (string table in first-use order, labels
 * sorted), so one stack always gives the same bytes and the same hash,
 * whatever process or profile it came from.
 *
 * Hash: XXH3 64-bit (libxxhash) of the record bytes, seed 0. XXH3's output
 * is frozen since xxHash 0.8.0, so hashes stay valid across upgrades.
 */
#ifndef HS_STORE_STACK_H
#define HS_STORE_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "store/store.h"

#define HS_STACK_RECORD_VERSION 1
#define HS_STACK_DEFAULT_MAX_DEPTH 1024
#define HS_STACK_DEFAULT_MAX_SAMPLES 1000000

/* A frame without a name whose mapping has a build ID (a profile sent
 * with addresses, HOTSPUR_SYMBOLIZE=server) keeps what is needed to name it
 * later in its system_name: "build-id:HEX:MAPOFF:REL", HEX the lowercase
 * build ID, MAPOFF the mapping's file_offset and REL the address minus the
 * mapping's start, both in hex. Its function stays "BASENAME+0xOFFSET".
 * The server names such frames at query time once their debug info is
 * there (server/names.h). */
#define HS_STACK_UNNAMED_PREFIX "build-id:"
#define HS_BUILD_ID_MAX 128 /* hex digits */
/* 0, or -1 when build_id is not 1..128 lowercase hex digits or out is too small. */
int hs_stack_unnamed_format(char *out, size_t cap, const char *build_id, uint64_t map_offset, uint64_t rel);
/* Whether sys is such a name; fills its parts. */
bool hs_stack_unnamed_parse(const char *sys, char build_id[HS_BUILD_ID_MAX + 1], uint64_t *map_offset,
                            uint64_t *rel);

/* The hash that names stack records (XXH3 64-bit, seed 0). */
uint64_t hs_stack_hash(const void *data, size_t len);

/* ---- decomposition ---- */

/* A memo of decompositions: strings, expanded locations and the records
 * and hashes of stacks seen before, so a stack that repeats across
 * profiles is encoded and hashed once. Results are identical with or
 * without it. Thread-safe (decompositions sharing one memo take turns);
 * emptied when it holds more than max_bytes (checked as a decomposition
 * starts, so it can exceed that by one profile's stacks). */
typedef struct hs_stack_memo hs_stack_memo;
hs_stack_memo *hs_stack_memo_new(size_t max_bytes);
void hs_stack_memo_free(hs_stack_memo *c);

/* The labels not stored unless asked: {"tid"}. Kept, each thread's stacks
 * are records of their own, and a process's tids are its own: on
 * bench/store.sh's profiles 23x the bytes per profile, a tenth of the
 * ingest rate (docs/server.md). */
extern const char *const hs_stack_default_drop[];
extern const size_t hs_stack_n_default_drop;

typedef struct {
    const char *const *drop_labels; /* sample label keys to drop; NULL: hs_stack_default_drop */
    size_t n_drop_labels;           /* (non-NULL with 0: drop none) */
    size_t max_depth;               /* frames per stack after expansion (0: default) */
    size_t max_samples;             /* samples of the input profile (0: default) */
    hs_stack_memo *memo;           /* shared memo of strings, locations, stacks (NULL: none) */
} hs_stack_options;

/* What a decomposition allocated; free with hs_stack_parts_free. */
typedef struct hs_stack_parts hs_stack_parts;

/* Turn p into the samples, stacks, types and totals of out (the caller
 * fills id, service, type, version, labels, start_ns, duration_ns; out's
 * other members are overwritten). Samples with identical stacks (frames
 * and kept labels) are merged, values summed; samples whose values are
 * all 0 are dropped. opt may be NULL (defaults). Everything out points to
 * lives in *parts (p may be freed after). 0, or -1 with a message: too
 * many sample types (> HS_STORE_MAX_VALUES) or none, a stack deeper than
 * max_depth, more samples than max_samples, out of memory. */
int hs_stack_decompose(const hs_profile *p, const hs_stack_options *opt, hs_store_profile *out,
                       hs_stack_parts **parts, char *err, size_t errlen);
void hs_stack_parts_free(hs_stack_parts *parts);

/* ---- records ---- */

typedef struct {
    const char *function, *system_name, *file, *mapping;
    int64_t line, start_line;
    bool inlined; /* inlined into the next frame (its caller) */
} hs_stack_frame;

typedef struct {
    const char *key, *str, *num_unit; /* "" when absent */
    int64_t num;
} hs_stack_label;

/* One decoded record; strings point into `buf` (owned). */
typedef struct {
    hs_stack_frame *frames; /* leaf first */
    size_t n_frames;
    hs_stack_label *labels;
    size_t n_labels;
    void *buf;
} hs_stack_decoded;

/* Decode a record. 0, or -1 with a message when it is malformed (records
 * come from a database: they are validated like any input). */
int hs_stack_decode(const void *data, size_t len, hs_stack_decoded *out, char *err, size_t errlen);
void hs_stack_decoded_free(hs_stack_decoded *d);

/* Encode frames + labels into a malloc'd record (labels are sorted into
 * canonical order; the inputs are not modified). 0, or -1. */
int hs_stack_encode(const hs_stack_frame *frames, size_t n_frames, const hs_stack_label *labels,
                    size_t n_labels, void **out, size_t *outlen, char *err, size_t errlen);

/* ---- records as string references (decoding many records) ---- */

/* A frame or a label of a record as references into its string table
 * (0 = "", i = strings[i]); what hs_stack_read fills. */
typedef struct {
    uint32_t fn, sys, file, map; /* function, system_name, file, mapping */
    int64_t line, start_line;
    bool inlined; /* inlined into the next frame (its caller) */
} hs_stack_ref_frame;

typedef struct {
    uint32_t key, str, unit;
    int64_t num;
} hs_stack_ref_label;

/* One record read by an hs_stack_reader: strings[0] is "", strings[i]
 * NUL-terminated copies. Valid until the reader's next read or its free. */
typedef struct {
    const char *const *strings;
    const uint32_t *string_lens; /* strlen of each */
    size_t n_strings;
    const hs_stack_ref_frame *frames; /* leaf first */
    size_t n_frames;
    const hs_stack_ref_label *labels;
    size_t n_labels;
} hs_stack_refs;

/* Buffers reused from one record to the next, so reading many records
 * allocates only when one is larger than all before it. */
typedef struct hs_stack_reader hs_stack_reader;
hs_stack_reader *hs_stack_reader_new(void);
void hs_stack_reader_free(hs_stack_reader *r);

/* Read a record (validated as hs_stack_decode does). 0, or -1 with a
 * message. */
int hs_stack_read(hs_stack_reader *r, const void *data, size_t len, hs_stack_refs *out, char *err, size_t errlen);

/* ---- rebuilding a profile ---- */

/* Returns the record of a stack hash (data valid until the next call or
 * until build_profile returns), or NULL if unknown. */
typedef const void *(*hs_stack_lookup_fn)(void *arg, uint64_t hash, size_t *len);

/* The merged profile: sample types, period and default from m->types, one
 * sample per row (rows whose record is unknown are skipped and counted in
 * *missing, which may be NULL), locations shared by identical frame runs
 * (an inline run folds back into one multi-line location), functions with
 * file and start_line, mappings by file name, sample labels back,
 * time_nanos = m->min_start_ns, duration = m->max_end_ns - min_start_ns. */
hs_profile *hs_stack_build_profile(const hs_store_merged *m, hs_stack_lookup_fn lookup, void *arg,
                                   size_t *missing, char *err, size_t errlen);

/* ---- profile ids ---- */

/* An id for a profile uploaded without one: 32 lowercase hex digits, the
 * XXH3 128-bit hash of body and the metadata (service, type, version,
 * labels, start_ns, duration_ns) of meta. */
void hs_stack_profile_id(const void *body, size_t len, const hs_store_profile *meta, char out[33]);

#endif
