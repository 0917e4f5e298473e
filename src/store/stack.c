/* stack.c — stack records: encoding, hashing, decoding, and profile ids
 * (see stack.h for the record format). Decomposing a profile into stacks
 * and samples is stack_decompose.c's job, rebuilding a profile from merged
 * rows stack_profile.c's; what they share is in stack_internal.h. */
#define _GNU_SOURCE /* qsort_r */
#include "store/stack_internal.h"
#include "base/vec.h"

uint64_t hs_stack_hash(const void *data, size_t len)
{
    return (uint64_t)XXH3_64bits(data, len);
}

int st_encoder_init(encoder *e)
{
    memset(e, 0, sizeof *e);
    if (hs_strtab_init(&e->strs) < 0)
        return -1;
    if (hs_strtab_intern(&e->strs, "") != 0) {
        hs_strtab_free(&e->strs);
        return -1;
    }
    return 0;
}

void st_encoder_free(encoder *e)
{
    hs_strtab_free(&e->strs);
    free(e->stamp);
    free(e->ref);
    free(e->len1);
    free(e->refs);
    free(e->tab);
}

uint32_t st_intern(encoder *e, const char *s)
{
    if (!s || !*s)
        return 0;
    return hs_strtab_intern(&e->strs, s);
}

/* The record-local ref of string id: 0 for "", else 1 + its table slot. */
static uint32_t local_ref(encoder *e, uint32_t id)
{
    if (id == 0)
        return 0;
    if (e->stamp[id] == e->record_no)
        return e->ref[id];
    if (HS_VEC_RESERVE(e->tab, e->cap_tab, e->n_tab + 1)) {
        e->oom = 1;
        return 0;
    }
    e->tab[e->n_tab++] = id;
    e->stamp[id] = e->record_no;
    e->ref[id] = (uint32_t)e->n_tab;
    return e->ref[id];
}

int st_label_cmp(const void *a, const void *b, void *arg)
{
    const id_label *x = a, *y = b;
    const hs_strtab *t = arg;
    int c = strcmp(t->strs[x->key], t->strs[y->key]);
    if (c)
        return c;
    if ((c = strcmp(t->strs[x->str], t->strs[y->str])))
        return c;
    if (x->num != y->num)
        return x->num < y->num ? -1 : 1;
    return strcmp(t->strs[x->unit], t->strs[y->unit]);
}

/* Append the record to out (labels must already be sorted). 0, or -1 on
 * out of memory. */
int st_encode_ids(encoder *e, const id_frame *f, size_t nf, const id_label *l, size_t nl, hs_bytes *out)
{
    if (e->n_stamp < e->strs.n) {
        size_t nn = e->strs.n * 2;
        uint32_t *ns = realloc(e->stamp, nn * sizeof *ns);
        if (!ns)
            return -1;
        e->stamp = ns;
        uint32_t *nr = realloc(e->ref, nn * sizeof *nr);
        if (!nr)
            return -1;
        e->ref = nr;
        uint32_t *nl1 = realloc(e->len1, nn * sizeof *nl1);
        if (!nl1)
            return -1;
        e->len1 = nl1;
        memset(e->stamp + e->n_stamp, 0, (nn - e->n_stamp) * sizeof *ns);
        memset(e->len1 + e->n_stamp, 0, (nn - e->n_stamp) * sizeof *nl1);
        e->n_stamp = nn;
    }
    if (++e->record_no == 0) { /* wrapped: stamps are stale */
        memset(e->stamp, 0, e->n_stamp * sizeof *e->stamp);
        e->record_no = 1;
    }
    e->n_tab = 0;
    /* pass 1: the record-local refs, which make the string table */
    size_t nr = nf * 4 + nl * 3;
    if (nr > e->cap_refs) {
        uint32_t *n = realloc(e->refs, nr * sizeof *n);
        if (!n)
            return -1;
        e->refs = n;
        e->cap_refs = nr;
    }
    uint32_t *r = e->refs;
    for (size_t i = 0; i < nf; i++) {
        *r++ = local_ref(e, f[i].fn);
        *r++ = local_ref(e, f[i].sys);
        *r++ = local_ref(e, f[i].file);
        *r++ = local_ref(e, f[i].map);
    }
    for (size_t i = 0; i < nl; i++) {
        *r++ = local_ref(e, l[i].key);
        *r++ = local_ref(e, l[i].str);
        *r++ = local_ref(e, l[i].unit);
    }
    if (e->oom)
        return -1;
    /* pass 2: write, at most 10 bytes per varint */
    size_t need = 31 + nf * 61 + nl * 40;
    for (size_t i = 0; i < e->n_tab; i++) {
        uint32_t id = e->tab[i];
        if (!e->len1[id])
            e->len1[id] = (uint32_t)strlen(e->strs.strs[id]) + 1;
        need += e->len1[id] + 9;
    }
    if (hs_bytes_reserve(out, need) < 0)
        return -1;
    unsigned char *w = out->p + out->n;
    *w++ = HS_STACK_RECORD_VERSION;
    w = hs_uv_write(w, e->n_tab);
    for (size_t i = 0; i < e->n_tab; i++) {
        uint32_t id = e->tab[i], len = e->len1[id] - 1;
        w = hs_uv_write(w, len);
        memcpy(w, e->strs.strs[id], len);
        w += len;
    }
    r = e->refs;
    w = hs_uv_write(w, nf);
    for (size_t i = 0; i < nf; i++) {
        *w++ = f[i].inlined ? 1 : 0;
        w = hs_uv_write(w, *r++);
        w = hs_uv_write(w, *r++);
        w = hs_uv_write(w, *r++);
        w = hs_uv_write(w, *r++);
        w = hs_sv_write(w, f[i].line);
        w = hs_sv_write(w, f[i].start_line);
    }
    w = hs_uv_write(w, nl);
    for (size_t i = 0; i < nl; i++) {
        w = hs_uv_write(w, r[0]);
        w = hs_uv_write(w, r[1]);
        w = hs_sv_write(w, l[i].num);
        w = hs_uv_write(w, r[2]);
        r += 3;
    }
    out->n = (size_t)(w - out->p);
    return 0;
}

int hs_stack_encode(const hs_stack_frame *frames, size_t n_frames, const hs_stack_label *labels,
                    size_t n_labels, void **out, size_t *outlen, char *err, size_t errlen)
{
    encoder e;
    int rc = -1;
    id_frame *f = calloc(n_frames ? n_frames : 1, sizeof *f);
    id_label *l = calloc(n_labels ? n_labels : 1, sizeof *l);
    if (!f || !l || st_encoder_init(&e) < 0) {
        free(f);
        free(l);
        ERR("out of memory");
        return -1;
    }
    for (size_t i = 0; i < n_frames; i++) {
        f[i] = (id_frame){st_intern(&e, frames[i].function), st_intern(&e, frames[i].system_name),
                          st_intern(&e, frames[i].file),     st_intern(&e, frames[i].mapping),
                          frames[i].line,                 frames[i].start_line,
                          frames[i].inlined};
        if (f[i].fn == UINT32_MAX || f[i].sys == UINT32_MAX || f[i].file == UINT32_MAX || f[i].map == UINT32_MAX)
            goto oom;
    }
    for (size_t i = 0; i < n_labels; i++) {
        l[i] = (id_label){st_intern(&e, labels[i].key), st_intern(&e, labels[i].str), st_intern(&e, labels[i].num_unit),
                          labels[i].num};
        if (l[i].key == UINT32_MAX || l[i].str == UINT32_MAX || l[i].unit == UINT32_MAX)
            goto oom;
    }
    qsort_r(l, n_labels, sizeof *l, st_label_cmp, &e.strs);
    hs_bytes rec = {0};
    if (st_encode_ids(&e, f, n_frames, l, n_labels, &rec) < 0) {
        free(rec.p);
        goto oom;
    }
    *out = rec.p;
    *outlen = rec.n;
    rc = 0;
    goto done;
oom:
    ERR("out of memory");
done:
    st_encoder_free(&e);
    free(f);
    free(l);
    return rc;
}

void st_parsed_free(parsed *pr)
{
    free(pr->s);
    free(pr->slen);
    free(pr->bytes);
    free(pr->f);
    free(pr->l);
    memset(pr, 0, sizeof *pr);
}


/* Resize *p to n elements (parallel arrays grown together). */
int st_resize(void **p, size_t n, size_t size)
{
    void *np = realloc(*p, n * size);
    if (!np)
        return -1;
    *p = np;
    return 0;
}

int st_parse_record(const void *data, size_t len, parsed *pr, char *err, size_t errlen)
{
    hs_reader r = {data, (const unsigned char *)data + len, 0};
    pr->ns = pr->nf = pr->nl = 0;
    if (len < 1 || *r.p != HS_STACK_RECORD_VERSION) {
        ERR("stack record: unknown version %d", len ? *r.p : -1);
        return -1;
    }
    r.p++;
    uint64_t ns = hs_read_uv(&r);
    if (r.bad || ns > len) {
        ERR("stack record: bad string count");
        return -1;
    }
    if (hs_vec_reserve((void **)&pr->s, &pr->cap_s, ns + 1, sizeof *pr->s) < 0 ||
        hs_vec_reserve((void **)&pr->slen, &pr->cap_slen, ns + 1, sizeof *pr->slen) < 0 ||
        hs_vec_reserve((void **)&pr->bytes, &pr->cap_bytes, len + ns + 1, 1) < 0)
        goto oom;
    char *w = pr->bytes;
    pr->s[0] = "";
    pr->slen[0] = 0;
    for (uint64_t i = 0; i < ns; i++) {
        uint64_t sl = hs_read_uv(&r);
        if (r.bad || sl > (uint64_t)(r.end - r.p)) {
            ERR("stack record: truncated string table");
            return -1;
        }
        memcpy(w, r.p, sl);
        w[sl] = 0;
        pr->s[i + 1] = w;
        pr->slen[i + 1] = (uint32_t)sl; /* sl <= len, a record's size */
        w += sl + 1;
        r.p += sl;
    }
    pr->ns = ns + 1;
    uint64_t nf = hs_read_uv(&r);
    if (r.bad || nf > (uint64_t)(r.end - r.p) / 7) { /* a frame is at least 7 bytes */
        ERR("stack record: truncated or bad frame count");
        return -1;
    }
    if (hs_vec_reserve((void **)&pr->f, &pr->cap_f, nf, sizeof *pr->f) < 0)
        goto oom;
    for (uint64_t i = 0; i < nf; i++) {
        ref_frame *f = &pr->f[i];
        f->inlined = hs_read_uv(&r) & 1;
        f->fn = (uint32_t)hs_read_uv(&r);
        f->sys = (uint32_t)hs_read_uv(&r);
        f->file = (uint32_t)hs_read_uv(&r);
        f->map = (uint32_t)hs_read_uv(&r);
        f->line = hs_read_sv(&r);
        f->start_line = hs_read_sv(&r);
        if (r.bad || f->fn > ns || f->sys > ns || f->file > ns || f->map > ns) {
            ERR("stack record: truncated or bad string reference in frame %" PRIu64, i);
            return -1;
        }
    }
    pr->nf = nf;
    uint64_t nl = hs_read_uv(&r);
    if (r.bad || nl > (uint64_t)(r.end - r.p) / 4) { /* a label is at least 4 bytes */
        ERR("stack record: truncated or bad label count");
        return -1;
    }
    if (hs_vec_reserve((void **)&pr->l, &pr->cap_l, nl, sizeof *pr->l) < 0)
        goto oom;
    for (uint64_t i = 0; i < nl; i++) {
        ref_label *l = &pr->l[i];
        l->key = (uint32_t)hs_read_uv(&r);
        l->str = (uint32_t)hs_read_uv(&r);
        l->num = hs_read_sv(&r);
        l->unit = (uint32_t)hs_read_uv(&r);
        if (r.bad || l->key > ns || l->str > ns || l->unit > ns) {
            ERR("stack record: truncated or bad string reference in label %" PRIu64, i);
            return -1;
        }
    }
    pr->nl = nl;
    if (r.p != r.end) {
        ERR("stack record: trailing bytes");
        return -1;
    }
    return 0;
oom:
    ERR("out of memory");
    return -1;
}

int hs_stack_decode(const void *data, size_t len, hs_stack_decoded *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    parsed *pr = calloc(1, sizeof *pr);
    if (!pr) {
        ERR("out of memory");
        return -1;
    }
    if (st_parse_record(data, len, pr, err, errlen) < 0) {
        st_parsed_free(pr);
        free(pr);
        return -1;
    }
    out->frames = calloc(pr->nf ? pr->nf : 1, sizeof *out->frames);
    out->labels = calloc(pr->nl ? pr->nl : 1, sizeof *out->labels);
    if (!out->frames || !out->labels) {
        free(out->frames);
        free(out->labels);
        memset(out, 0, sizeof *out);
        st_parsed_free(pr);
        free(pr);
        ERR("out of memory");
        return -1;
    }
    for (size_t i = 0; i < pr->nf; i++) {
        const ref_frame *f = &pr->f[i];
        out->frames[i] = (hs_stack_frame){pr->s[f->fn], pr->s[f->sys], pr->s[f->file], pr->s[f->map],
                                          f->line,      f->start_line, f->inlined};
    }
    for (size_t i = 0; i < pr->nl; i++) {
        const ref_label *l = &pr->l[i];
        out->labels[i] = (hs_stack_label){pr->s[l->key], pr->s[l->str], pr->s[l->unit], l->num};
    }
    out->n_frames = pr->nf;
    out->n_labels = pr->nl;
    out->buf = pr;
    return 0;
}

void hs_stack_decoded_free(hs_stack_decoded *d)
{
    if (!d)
        return;
    if (d->buf) {
        st_parsed_free(d->buf);
        free(d->buf);
    }
    free(d->frames);
    free(d->labels);
    memset(d, 0, sizeof *d);
}

struct hs_stack_reader {
    parsed pr;
};

hs_stack_reader *hs_stack_reader_new(void)
{
    return calloc(1, sizeof(hs_stack_reader));
}

void hs_stack_reader_free(hs_stack_reader *r)
{
    if (!r)
        return;
    st_parsed_free(&r->pr);
    free(r);
}

int hs_stack_read(hs_stack_reader *r, const void *data, size_t len, hs_stack_refs *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (st_parse_record(data, len, &r->pr, err, errlen) < 0)
        return -1;
    *out = (hs_stack_refs){r->pr.s, r->pr.slen, r->pr.ns, r->pr.f, r->pr.nf, r->pr.l, r->pr.nl};
    return 0;
}

/* ---- profile ids ---- */

static void id_update_str(XXH3_state_t *st, const char *s)
{
    s = s ? s : "";
    uint64_t n = strlen(s);
    XXH3_128bits_update(st, &n, sizeof n);
    XXH3_128bits_update(st, s, n);
}

void hs_stack_profile_id(const void *body, size_t len, const hs_store_profile *meta, char out[33])
{
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    uint64_t n = len;
    XXH3_128bits_update(&st, &n, sizeof n);
    XXH3_128bits_update(&st, body, len);
    id_update_str(&st, meta->service);
    id_update_str(&st, meta->type);
    id_update_str(&st, meta->version);
    n = meta->n_labels;
    XXH3_128bits_update(&st, &n, sizeof n);
    for (size_t i = 0; i < meta->n_labels; i++) {
        id_update_str(&st, meta->labels[i].key);
        id_update_str(&st, meta->labels[i].value);
    }
    int64_t t[2] = {meta->start_ns, meta->duration_ns};
    XXH3_128bits_update(&st, t, sizeof t);
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    snprintf(out, 33, "%016" PRIx64 "%016" PRIx64, (uint64_t)h.high64, (uint64_t)h.low64);
}
