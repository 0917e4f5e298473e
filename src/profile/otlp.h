/* otlp.h — OpenTelemetry profiles (OTLP, opentelemetry.proto.profiles.
 * v1development; proto/otlp/) to and from the pprof model (profile.h).
 *
 * Out (otlp_encode.c, in hs_profile: the agent uses it, no protobuf-c):
 * pprof profiles become one ExportProfilesServiceRequest, one OTLP Profile
 * per sample type, every table in the request's shared dictionary (entry 0
 * of each the zero value), samples that carry string labels trace_id (32
 * hex digits) and span_id (16) as a Link.
 *
 * In (otlp_decode.c and otlp_json.c, library hs_otlp: protobuf-c and
 * jansson): a request in protobuf or in OTLP/JSON (lowerCamelCase keys,
 * hex trace/span ids, 64-bit integers as strings or numbers, unknown keys
 * ignored) is checked index by index (a bad reference names its table and
 * index, e.g. "location_table[7].mapping_index 12 is out of range: 3
 * mappings") and turned into pprof profiles: the OTLP profiles of one
 * resource and scope taken at the same time with the same period are one
 * pprof profile with a sample type each (samples joined by stack,
 * attributes and link), so pprof -> OTLP -> pprof gives back every
 * function, line, label and value.
 *
 * What pprof has and OTLP has not travels as attributes (hs_otlp_attr_*):
 * a mapping's build ID and has_* flags, a location's is_folded, a profile's
 * comments, drop/keep_frames and default sample type. A sample's values
 * are summed (a timestamp without a value counts 1): the pprof model has
 * no time per sample, so timestamps are kept as time slices (below). */
#ifndef HS_PROFILE_OTLP_H
#define HS_PROFILE_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bytes.h"
#include "profile/profile.h"

#define HS_OTLP_PATH "/v1development/profiles"

/* Per-sample timestamps are kept to a time slice: a group whose samples
 * fall in several 10 s slices (Pyroscope's resolution) is a profile per
 * slice; wider slices past 64 of them. */
#define HS_OTLP_SLICE_NS 10000000000LL
#define HS_OTLP_MAX_SLICES 64

/* Attribute keys (OpenTelemetry semantic conventions where they have one). */
#define HS_OTLP_ATTR_BUILD_ID "process.executable.build_id.gnu"
#define HS_OTLP_ATTR_HAS_FUNCTIONS "pprof.mapping.has_functions"
#define HS_OTLP_ATTR_HAS_FILENAMES "pprof.mapping.has_filenames"
#define HS_OTLP_ATTR_HAS_LINE_NUMBERS "pprof.mapping.has_line_numbers"
#define HS_OTLP_ATTR_HAS_INLINE_FRAMES "pprof.mapping.has_inline_frames"
#define HS_OTLP_ATTR_IS_FOLDED "pprof.location.is_folded"
#define HS_OTLP_ATTR_COMMENT "pprof.profile.comment"
#define HS_OTLP_ATTR_DROP_FRAMES "pprof.profile.drop_frames"
#define HS_OTLP_ATTR_KEEP_FRAMES "pprof.profile.keep_frames"
#define HS_OTLP_ATTR_DEFAULT_TYPE "pprof.profile.default_sample_type"
/* the sample labels that are an OTLP Link */
#define HS_OTLP_LABEL_TRACE_ID "trace_id"
#define HS_OTLP_LABEL_SPAN_ID "span_id"

/* The resource of encoded profiles: each NULL/0 when not set. */
typedef struct {
    const char *service, *version;    /* service.name, service.version */
    const char *const *attrs;         /* more attributes, "KEY=VALUE" (string values) */
    size_t n_attrs;
    const char *original_format;      /* with original: Profile.original_payload_format */
    const void *original;             /* Profile.original_payload of every profile */
    size_t original_len;
} hs_otlp_resource;

/* ps[0..n) as one ExportProfilesServiceRequest (protobuf, not gzipped),
 * appended to out. 0, or -1 with a message. */
int hs_otlp_encode(const hs_profile *const *ps, size_t n, const hs_otlp_resource *res, hs_bytes *out, char *err,
                   size_t errlen);

/* ---- in: hs_otlp library ---- */

/* One pprof profile of a request, and what the request says about it. */
typedef struct {
    hs_profile *profile;
    char *service;      /* service.name, or "unknown_service" */
    char *version;      /* service.version, or NULL */
    char **labels;      /* "KEY=VALUE": resource and profile attributes */
    size_t n_labels;
    char id[33];        /* the first OTLP profile's profile_id in hex, "" when unset */
    const char *type;   /* a profile type when the sample types do not say it ("cpu" for
                           samples/count with a cpu period, as the eBPF profiler sends), or NULL */
    unsigned char *original; /* original_payload when its format is "pprof", else NULL */
    size_t original_len;
    size_t n_otlp;      /* the OTLP profiles it was made of */
    size_t group;       /* which of the request's groups (profiles of one time slice of a
                           group share it) */
} hs_otlp_profile;

typedef struct {
    hs_otlp_profile *p;
    size_t n;
    size_t n_otlp; /* OTLP profiles in the request */
} hs_otlp_batch;

enum { HS_OTLP_BAD = 1, HS_OTLP_NOMEM = 2 };

/* A plain (not gzipped) request body: JSON when json, else protobuf.
 * 0, or HS_OTLP_BAD (malformed; err names the table and index) or
 * HS_OTLP_NOMEM; out is empty then. max_samples bounds the samples of one
 * profile (0: no bound). */
int hs_otlp_decode(const void *data, size_t len, bool json, size_t max_samples, hs_otlp_batch *out, char *err,
                   size_t errlen);
void hs_otlp_batch_free(hs_otlp_batch *b);

/* Whether a body looks like OTLP/JSON (first non-space byte '{'). */
bool hs_otlp_is_json(const void *data, size_t len);

#endif
