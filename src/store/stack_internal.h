/* stack_internal.h — what the stack record files share (private to
 * src/store/stack*.c): the encoder of records (frames and labels as
 * interned string ids), a record parsed in place, and the functions one
 * file calls in another. stack.h says what a record is. */
#ifndef HS_STORE_STACK_INTERNAL_H
#define HS_STORE_STACK_INTERNAL_H

#include "store/stack.h"

#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "base/err.h"
#include "base/hashmap.h"
#include "base/strtab.h"
#include "base/bytes.h"
#include "base/vec.h"

#define ERR(...) hs_err(err, errlen, __VA_ARGS__)


/* ---- the core encoder: frames and labels as interned string ids ---- */

typedef struct {
    uint32_t fn, sys, file, map;
    int64_t line, start_line;
    bool inlined;
} id_frame;

typedef struct {
    uint32_t key, str, unit;
    int64_t num;
} id_label;

typedef struct {
    hs_strtab strs;   /* id -> string; id 0 is "" */
    uint32_t *stamp;     /* per string id: the record it last got a ref in */
    uint32_t *ref;       /* per string id: its ref in that record */
    uint32_t *len1;      /* per string id: strlen + 1, 0 when not known yet */
    size_t n_stamp;
    uint32_t record_no;
    uint32_t *refs;      /* scratch: a record's local refs */
    size_t cap_refs;
    int oom;
    uint32_t *tab;       /* the string ids of the record's table, in order */
    size_t n_tab, cap_tab;
} encoder;


/* ---- decoding ---- */

/* A record parsed in place: its string table (NUL-terminated copies; s[0]
 * is "") and frames and labels referring to it. Reused across records. */
typedef hs_stack_ref_frame ref_frame;
typedef hs_stack_ref_label ref_label;

typedef struct {
    const char **s;
    uint32_t *slen; /* strlen of each s[i] */
    size_t ns, cap_s, cap_slen;
    char *bytes;
    size_t cap_bytes;
    ref_frame *f;
    size_t nf, cap_f;
    ref_label *l;
    size_t nl, cap_l;
} parsed;


/* ---- encoding, decoding (stack.c) ---- */

int st_encoder_init(encoder *e);
void st_encoder_free(encoder *e);
uint32_t st_intern(encoder *e, const char *s);
int st_label_cmp(const void *a, const void *b, void *arg);
int st_encode_ids(encoder *e, const id_frame *f, size_t nf, const id_label *l, size_t nl, hs_bytes *out);
void st_parsed_free(parsed *pr);
int st_resize(void **p, size_t n, size_t size);
int st_parse_record(const void *data, size_t len, parsed *pr, char *err, size_t errlen);

/* ---- decomposition (stack_decompose.c) ---- */

const char *st_basename_of(const char *path);

#endif
