/* ingest_internal.h — what the upload endpoints share: ingest.c (the
 * checks, gzip, decomposition and batched put; our endpoint and the C
 * entry point) and ingest_pyroscope.c (Pyroscope's /ingest). */
#ifndef HS_SERVER_INGEST_INTERNAL_H
#define HS_SERVER_INGEST_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/ingest.h"
#include "server/server.h"
#include "store/stack.h"

#define HS_MAX_PARTS 8                   /* multipart parts */
#define HS_MAX_PART_HEADER 4096
#define HS_MAX_TYPE_LEN 64
#define HS_MAX_STC 65536 /* sample_type_config bytes */

/* One request's state. */
typedef struct {
    const hs_limits *lim;
    hs_stack_memo *memo;
    hs_names *namer; /* names frames sent as addresses with build IDs (names.h), or NULL */
    const hs_http_request *rq; /* Pyroscope's endpoint: its parameters */
    hs_ingest_result *res;     /* the outcome, for every way in */
    const void *body;
    size_t body_len;
    const char *content_encoding;
    void *scratch[4]; /* decompressed buffers, freed at the end */
    size_t n_scratch;
    char *names;      /* label keys and values point into this copy */
    hs_store_label *labels;
    size_t n_labels;
    const char *service, *type, *version, *id;
    bool have_from, have_until;
    int64_t from_ns, until_ns;
} hs_ingest;

typedef struct {
    hs_store_profile prof;
    hs_stack_parts *parts;
    hs_store_sample *samples; /* a projection's own arrays (else NULL) */
    hs_store_stack *stacks;
} hs_decomposed;

/* Add a profile label after checking it. 0, or the status answered. */
int hs_add_label(hs_ingest *in, const char *key, const char *value);

/* Decode a pprof body (plain: after hs_unwrap_gzip). NULL: answered. */
hs_profile *hs_decode_pprof(hs_ingest *in, const void *data, size_t len);

/* Decompose p into d with in's bounds. 0, or the status answered. */
int hs_decompose(hs_ingest *in, const hs_profile *p, hs_decomposed *d);

void hs_decomposed_free(hs_decomposed *d);

/* hs_ing_err with one piece of untrusted text, shown bounded. */
int hs_fail(hs_ingest *in, hs_ingest_code code, const char *fmt, const char *a);

/* Fill the metadata of d from in; the id is computed from the body and
 * the metadata when the request gave none. */
void hs_fill_meta(hs_ingest *in, hs_decomposed *d, const char *type, const void *body, size_t len,
                         const hs_profile *p, bool prefer_profile);

bool hs_has_type(const hs_store_types *t, const char *type, const char *unit);

/* The profile type its sample types say: cpu, wall, heap, lock, or the
 * last sample type's name. */
const char *hs_infer_type(const hs_store_types *t);

int hs_ingest_begin(hs_ingest *in, hs_batcher *b, const hs_limits *lim, const void *body, size_t len,
                           const char *content_encoding, hs_ingest_result *res);

/* The body without its Content-Encoding. 0, or the hs_ingest_code. */
int hs_ingest_body(hs_ingest *in, const void **data, size_t *len);

void hs_ingest_free(hs_ingest *in);

/* The HTTP answer of r. Returns its status. */
int hs_ingest_respond(hs_http_response *rs, const hs_ingest_result *r);

/* The times of m into in, checked. 0, or the hs_ingest_code. */
int hs_ingest_times(hs_ingest *in, const hs_ingest_meta *m);

int hs_label_cmp(const void *a, const void *b);

bool hs_name_char(int c, bool dots);

/* from/until parameters (unix seconds, NULL: not given) into m. 0, or the
 * hs_ingest_code in r. */
int hs_parse_times(const char *from, const char *until, hs_ingest_meta *m, hs_ingest_result *r);

/* out = the columns cols[0..ncols) of src: its samples with a value in
 * them, the stacks those use. 0, or -1 (out of memory). */
int hs_project(const hs_store_profile *src, const int *cols, size_t ncols, hs_decomposed *out);

/* Parameter key given more than once (other than `repeatable`), or NULL. */
const char *hs_repeated_param(const hs_http_request *rq, const char *repeatable);

/* Submit d[0..n) as one put. 0, or the hs_ingest_code. */
int hs_submit(hs_ingest *in, hs_batcher *b, hs_decomposed *d, size_t n);

/* text of at most max bytes, no control characters. */
bool hs_text_ok(const char *s, size_t max);

bool hs_type_ok(const char *t);

/* The first parameter of rq not in allowed, or NULL. */
const char *hs_unknown_param(const hs_http_request *rq, const char *const *allowed);

/* A gzipped payload (at most twice) to plain bytes. 0, or the status answered. */
int hs_unwrap_gzip(hs_ingest *in, const void **data, size_t *len);

/* r fails with code and a message. Returns code. */
__attribute__((format(printf, 3, 4))) int hs_res_err(hs_ingest_result *r, hs_ingest_code code, const char *fmt,
                                                            ...);
#define hs_ing_err(in, ...) hs_res_err((in)->res, __VA_ARGS__)

/* A printable, bounded copy of untrusted text for an error message. */
const char *hs_shown(const char *s, char *buf, size_t cap);

#endif
