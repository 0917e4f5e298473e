/* profile.h — the in-memory profile model and the pprof codec.
 *
 * The spine of hotspur: every producer (the agent, importers, the store) builds
 * an hs_profile and every consumer (reports, exporters, the server) reads one.
 * It mirrors pprof's profile.proto one to one (string table, mappings,
 * locations with inline lines, functions, samples with several values and
 * labels) so that decoding and re-encoding a pprof file is lossless.
 *
 * Conventions, as in pprof:
 *  - every "int64_t name/filename/type/..." field is an index into strings[];
 *    strings[0] is always "";
 *  - ids (mapping, location, function) are nonzero and unique per kind; look
 *    them up with hs_profile_location() etc., which are O(1);
 *  - a sample's location_ids are leaf first; a location's lines[] are
 *    innermost (inlined callee) first, its last line is the outer function;
 *  - all arrays and strings are owned by the profile; the decoder lets
 *    samples with equal stacks share one location_ids array, so treat a
 *    sample's location_ids as read-only (point elsewhere, do not write).
 * Errors are return values (-1 / NULL) with a message written to err.
 */
#ifndef HS_PROFILE_H
#define HS_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t type; /* string index, e.g. "cpu" */
    int64_t unit; /* string index, e.g. "nanoseconds" */
} hs_value_type;

typedef struct {
    uint64_t id;
    uint64_t memory_start, memory_limit, file_offset;
    int64_t filename, build_id; /* string indices */
    bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
} hs_mapping;

typedef struct {
    uint64_t function_id;
    int64_t line;
    int64_t column;
} hs_line;

typedef struct {
    uint64_t id, mapping_id, address;
    hs_line *lines; /* innermost first */
    size_t n_lines;
    bool is_folded;
} hs_location;

typedef struct {
    uint64_t id;
    int64_t name, system_name, filename, start_line;
} hs_function;

typedef struct {
    int64_t key, str, num, num_unit; /* key/str/num_unit: string indices */
} hs_label;

typedef struct {
    uint64_t *location_ids; /* leaf first */
    size_t n_locations;
    int64_t *values; /* n_sample_types of them */
    hs_label *labels;
    size_t n_labels;
} hs_sample;

struct hs_profile_index; /* private: intern table, id maps, arena */

typedef struct hs_profile {
    hs_value_type *sample_types;
    size_t n_sample_types;
    hs_sample *samples;
    size_t n_samples;
    hs_mapping *mappings;
    size_t n_mappings;
    hs_location *locations;
    size_t n_locations;
    hs_function *functions;
    size_t n_functions;
    char **strings;
    size_t n_strings;
    int64_t drop_frames, keep_frames;
    int64_t time_nanos, duration_nanos;
    hs_value_type period_type;
    int64_t period;
    int64_t *comments;
    size_t n_comments;
    int64_t default_sample_type; /* string index of a sample type name, 0 = last */
    struct hs_profile_index *ix;
} hs_profile;

/* ---- building ---- */

/* A new, empty profile (string table holds ""). NULL on out of memory. */
hs_profile *hs_profile_new(void);
void hs_profile_free(hs_profile *p);

/* Intern s and return its string index (existing index if already present). */
int64_t hs_profile_str(hs_profile *p, const char *s);
/* The string at idx, "" when idx is out of range. */
const char *hs_profile_string(const hs_profile *p, int64_t idx);

/* Append a sample type; returns its index. Must precede adding samples. */
int hs_profile_add_sample_type(hs_profile *p, const char *type, const char *unit);
void hs_profile_set_period(hs_profile *p, const char *type, const char *unit, int64_t period);
void hs_profile_add_comment(hs_profile *p, const char *comment);

/* Add a mapping; returns its new id (0 on failure). */
uint64_t hs_profile_add_mapping(hs_profile *p, uint64_t start, uint64_t limit, uint64_t offset,
                                const char *filename, const char *build_id);
/* Add (or find an identical) function; returns its id (0 on failure). */
uint64_t hs_profile_add_function(hs_profile *p, const char *name, const char *system_name,
                                 const char *filename, int64_t start_line);
/* Add a location (never deduplicated: callers cache); lines are copied.
 * Returns its new id (0 on failure). */
uint64_t hs_profile_add_location(hs_profile *p, uint64_t mapping_id, uint64_t address,
                                 const hs_line *lines, size_t n_lines);
/* Replace the lines of an existing location (used by the symbolizer). */
int hs_profile_set_location_lines(hs_profile *p, uint64_t location_id, const hs_line *lines,
                                  size_t n_lines);
/* Append a sample; all arrays are copied; values has n_sample_types entries. */
int hs_profile_add_sample(hs_profile *p, const uint64_t *location_ids, size_t n_locations,
                          const int64_t *values, const hs_label *labels, size_t n_labels);

/* ---- reading ---- */

/* O(1) lookups by id; NULL when the id is unknown. */
const hs_location *hs_profile_location(const hs_profile *p, uint64_t id);
const hs_function *hs_profile_function(const hs_profile *p, uint64_t id);
const hs_mapping *hs_profile_mapping(const hs_profile *p, uint64_t id);
/* hs_profile_location without a call in the usual numbering (the location
 * at index i has id i + 1: ids are unique, so it is the one), else the map;
 * for the loops over every frame of every stack. */
static inline const hs_location *hs_profile_location_fast(const hs_profile *p, uint64_t id)
{
    return id - 1 < p->n_locations && p->locations[id - 1].id == id ? &p->locations[id - 1]
                                                                      : hs_profile_location(p, id);
}

/* Whether the location at index i has id i + 1 for every i (as decoders and
 * hs_profile_add_location leave them): then hs_profile_location_fast(p, id,
 * true) finds a location without reading the table, an id being valid
 * exactly when 1 <= id <= n_locations. Asked once per loop. */
bool hs_profile_locations_dense(const hs_profile *p);
/* hs_profile_location_fast, told what hs_profile_locations_dense said: in
 * the loops over every frame of every stack, the table is not read (a
 * cache miss per frame on a large profile). */
static inline const hs_location *hs_profile_location_at(const hs_profile *p, uint64_t id,
                                                        bool dense)
{
    if (dense)
        return id - 1 < p->n_locations ? &p->locations[id - 1] : NULL;
    return hs_profile_location_fast(p, id);
}

/* Samples of a decoded profile that share one location id array have the
 * same stack class, a number below *n_classes (set when not NULL), so a
 * consumer can group them with an array instead of hashing stacks.
 * UINT32_MAX when sample i has none (built in memory, added later). */
uint32_t hs_profile_sample_stack(const hs_profile *p, size_t i, size_t *n_classes);

/* Index of the sample type named by `spec`: a type name ("alloc_space") or a
 * decimal index ("2"). -1 when there is no such type. */
int hs_profile_sample_index(const hs_profile *p, const char *spec);
/* The index of the default sample type (default_sample_type, else the last). */
int hs_profile_default_index(const hs_profile *p);

/* ---- the bounded gunzip (gunzip.c): the codec's and the server's ---- */

/* What a gunzip may produce: at most max_out bytes, and once the output
 * passes ratio_floor, less than max_ratio times the input. */
typedef struct {
    size_t max_out;
    unsigned max_ratio;
    size_t ratio_floor;
} hs_gunzip_limits;
enum { HS_GUNZIP_BAD = 1, HS_GUNZIP_TOO_LARGE = 2, HS_GUNZIP_NOMEM = 3 };
/* Every gzip member of data[0..len) (trailing non-gzip bytes ignored, as
 * gzip does) into a malloc'd *out. 0, or HS_GUNZIP_BAD (corrupt,
 * truncated), HS_GUNZIP_TOO_LARGE (past a limit) or HS_GUNZIP_NOMEM, with a
 * one-line message in err. */
int hs_gunzip_bounded(const void *data, size_t len, const hs_gunzip_limits *lim, unsigned char **out,
                      size_t *outlen, char *err, size_t errlen);
/* The largest output lim allows for len input bytes. */
size_t hs_gunzip_max(size_t len, const hs_gunzip_limits *lim);
/* The refusal of an output past hs_gunzip_max (which limit, in err);
 * returns HS_GUNZIP_TOO_LARGE. */
int hs_gunzip_refuse(size_t len, const hs_gunzip_limits *lim, char *err, size_t errlen);

/* ---- codec: pprof profile.proto, gzipped or not ---- */

/* Decode a profile from memory; input may be gzipped (detected by magic).
 * Validates every reference (string indices, ids); returns NULL with a
 * one-line message in err on corrupt or hostile input. */
hs_profile *hs_profile_decode(const void *data, size_t len, char *err, size_t errlen);
/* Read and decode a file ("-" reads stdin). */
hs_profile *hs_profile_read_file(const char *path, char *err, size_t errlen);

/* A file's bytes, for the decoder or an importer: read (not mapped: a
 * file truncated meanwhile by another process is then only shorter, where
 * a mapping of it would end us with SIGBUS) into an anonymous mapping. */
typedef struct {
    const unsigned char *data;
    size_t len;
    size_t map_len; /* the mapping's length; 0: data is malloc'd */
} hs_profile_input;
/* 0, or -1 with a message (the file's error, "is a directory", ...). */
int hs_profile_input_read(const char *path, hs_profile_input *in, char *err, size_t errlen);
/* Release the bytes (unmap or free); *in is emptied. */
void hs_profile_input_free(hs_profile_input *in);
/* hs_profile_decode of the bytes, which are released as soon as they are
 * inflated (also on error): a large file is not held twice. */
hs_profile *hs_profile_decode_input(hs_profile_input *in, char *err, size_t errlen);
/* Encode as gzipped profile.proto into a malloc'd buffer. 0 on success.
 * A large profile (over 2 MiB encoded) is compressed by up to 3 threads
 * of its own (ISA-L) and written as several gzip members. */
int hs_profile_encode(const hs_profile *p, void **out, size_t *outlen, char *err, size_t errlen);
/* Where hs_profile_encode_to puts the encoded bytes: called with them in
 * order, by one thread at a time (not necessarily the caller's), while later
 * parts are still being compressed. 0, or -1 to stop the encoding. */
typedef int (*hs_profile_sink)(void *ctx, const void *buf, size_t len);
/* The bytes of hs_profile_encode, given to sink as each gzip member is
 * ready instead of gathered in one buffer. 0, or -1 with a message ("write
 * error" when sink failed); every thread is joined either way. */
int hs_profile_encode_to(const hs_profile *p, hs_profile_sink sink, void *ctx, char *err,
                         size_t errlen);
/* The same bytes gzipped by zlib as one member, in the calling thread only:
 * for the agent (no threads of ours in the host, no libdeflate loaded into
 * every process). */
int hs_profile_encode_zlib(const hs_profile *p, void **out, size_t *outlen, char *err, size_t errlen);
/* Encode and write to path atomically (temp file + rename; not fsync'd:
 * it survives the writer's crash, not the machine's). 0 on success. */
int hs_profile_write_file(const hs_profile *p, const char *path, char *err, size_t errlen);
/* Write an already encoded profile (buf) to path the same way ("-": stdout). */
int hs_profile_write_encoded(const void *buf, size_t len, const char *path, char *err, size_t errlen);

/* ---- file names ---- */

/* The file of one profile of a run writing several: with several types the
 * type goes in the name, a companion ("peak", "leaks") too, both before a
 * trailing ".pb.gz" (else appended): out.pb.gz -> out.cpu.pb.gz,
 * out.heap.peak.pb.gz, or (one type) out.peak.pb.gz. 0, or -1 if too long. */
int hs_profile_file_name(const char *base, const char *type, int several, const char *companion,
                         char *out, size_t outlen);

/* bits as lowercase hex, as build-ids are written in mappings
 * (NUL-terminated, cut to fit outlen). */
void hs_hex(const unsigned char *bits, size_t len, char *out, size_t outlen);

/* v in decimal at out (room for 20 chars, no NUL); returns the length */
size_t hs_int_dec(char *out, int64_t v);

#endif
