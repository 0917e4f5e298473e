/* stack_profile.c — a pprof profile rebuilt from merged rows and their
 * stack records (hs_stack_build_profile): the merged pprof the server
 * answers with (/api/v1/profile). */
#define _GNU_SOURCE /* qsort_r */
#include "store/stack_internal.h"

/* ---- rebuilding a profile ---- */

/* Each record's strings are interned into the new profile first; frames
 * are then tuples of string indices and a run of frames (one location) is
 * found by hashing its tuples. */
typedef struct {
    hs_profile *p;
    hs_idmap locs;       /* hash of a frame run -> index into the keys */
    hs_bytes keys;            /* the runs' keys (int64 tuples), back to back */
    size_t *key_off, *key_len;
    uint64_t *loc_id;
    size_t n_locs, cap_locs;
    hs_idmap maps;       /* mapping file name (string index) -> index into map_ids */
    uint64_t *map_ids;
    int64_t *map_names;
    size_t n_maps, cap_maps;
    int64_t *idx;         /* the current record's string table -> profile string index */
    size_t cap_idx;
    int64_t *key;         /* scratch */
    size_t cap_key;
} builder;

static uint64_t mapping_for(builder *b, int64_t file)
{
    if (file == 0)
        return 0;
    uint64_t h = hs_mix64((uint64_t)file);
    size_t slot = (size_t)-1;
    uint32_t c;
    while ((c = hs_idmap_next(&b->maps, h, &slot)) != UINT32_MAX)
        if (b->map_names[c] == file)
            return b->map_ids[c];
    if (b->n_maps == b->cap_maps) {
        size_t nc = b->cap_maps ? b->cap_maps * 2 : 16;
        if (st_resize((void **)&b->map_ids, nc, sizeof *b->map_ids) < 0 ||
            st_resize((void **)&b->map_names, nc, sizeof *b->map_names) < 0)
            return UINT64_MAX;
        b->cap_maps = nc;
    }
    uint64_t id = hs_profile_add_mapping(b->p, 0, 0, 0, hs_profile_string(b->p, file), "");
    if (!id)
        return UINT64_MAX;
    hs_mapping *m = &b->p->mappings[b->p->n_mappings - 1];
    m->has_functions = m->has_filenames = m->has_line_numbers = m->has_inline_frames = true;
    b->map_ids[b->n_maps] = id;
    b->map_names[b->n_maps] = file;
    if (hs_idmap_put(&b->maps, h, (uint32_t)b->n_maps) < 0)
        return UINT64_MAX;
    b->n_maps++;
    return id;
}

/* The location of frames f[0..n) of pr (an inline run ending in its outer
 * frame); 0 on out of memory. */
static uint64_t location_for(builder *b, const parsed *pr, const ref_frame *f, size_t n)
{
    if (hs_vec_reserve((void **)&b->key, &b->cap_key, n * 6, sizeof *b->key) < 0)
        return 0;
    const int64_t *idx = b->idx;
    int64_t *k = b->key;
    for (size_t i = 0; i < n; i++) {
        *k++ = idx[f[i].fn];
        *k++ = idx[f[i].sys];
        *k++ = idx[f[i].file];
        *k++ = idx[f[i].map];
        *k++ = f[i].line;
        *k++ = f[i].start_line;
    }
    size_t kl = n * 6 * sizeof *b->key;
    uint64_t h = hs_stack_hash(b->key, kl);
    size_t slot = (size_t)-1;
    uint32_t c;
    while ((c = hs_idmap_next(&b->locs, h, &slot)) != UINT32_MAX)
        if (b->key_len[c] == kl && memcmp(b->keys.p + b->key_off[c], b->key, kl) == 0)
            return b->loc_id[c];
    if (b->n_locs == b->cap_locs) {
        size_t nc = b->cap_locs ? b->cap_locs * 2 : 256;
        if (st_resize((void **)&b->loc_id, nc, sizeof *b->loc_id) < 0 ||
            st_resize((void **)&b->key_off, nc, sizeof *b->key_off) < 0 ||
            st_resize((void **)&b->key_len, nc, sizeof *b->key_len) < 0)
            return 0;
        b->cap_locs = nc;
    }
    hs_line lines[64], *lp = n <= 64 ? lines : malloc(n * sizeof *lp);
    if (!lp)
        return 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t fid = hs_profile_add_function(b->p, pr->s[f[i].fn], pr->s[f[i].sys], pr->s[f[i].file],
                                               f[i].start_line);
        if (!fid) {
            if (lp != lines)
                free(lp);
            return 0;
        }
        lp[i] = (hs_line){fid, f[i].line, 0};
    }
    uint64_t map = mapping_for(b, idx[f[n - 1].map]);
    uint64_t id = map == UINT64_MAX ? 0 : hs_profile_add_location(b->p, map, 0, lp, n);
    if (lp != lines)
        free(lp);
    if (!id)
        return 0;
    b->key_off[b->n_locs] = b->keys.n;
    b->key_len[b->n_locs] = kl;
    b->loc_id[b->n_locs] = id;
    hs_bytes_put(&b->keys, b->key, kl);
    if (b->keys.oom || hs_idmap_put(&b->locs, h, (uint32_t)b->n_locs) < 0)
        return 0;
    b->n_locs++;
    return id;
}

/* pprof takes the first mapping for the main binary ("File:" in reports);
 * records do not say which it was, so put first the first mapping that is
 * not a shared object or a pseudo-file like [vdso]: swap the two mappings'
 * contents (ids stay in their slots) and the locations' references. */
static void main_mapping_first(hs_profile *p)
{
    size_t k = 0;
    for (; k < p->n_mappings; k++) {
        const char *f = st_basename_of(hs_profile_string(p, p->mappings[k].filename));
        if (*f && *f != '[' && !strstr(f, ".so"))
            break;
    }
    if (k == 0 || k == p->n_mappings)
        return;
    uint64_t a = p->mappings[0].id, b = p->mappings[k].id;
    hs_mapping t = p->mappings[0];
    p->mappings[0] = p->mappings[k];
    p->mappings[k] = t;
    p->mappings[0].id = a;
    p->mappings[k].id = b;
    for (size_t i = 0; i < p->n_locations; i++) {
        if (p->locations[i].mapping_id == a)
            p->locations[i].mapping_id = b;
        else if (p->locations[i].mapping_id == b)
            p->locations[i].mapping_id = a;
    }
}

hs_profile *hs_stack_build_profile(const hs_store_merged *m, hs_stack_lookup_fn lookup, void *arg,
                                   size_t *missing, char *err, size_t errlen)
{
    size_t n_missing = 0;
    builder b = {0};
    parsed pr = {0};
    uint64_t *ids = NULL;
    hs_label *labels = NULL;
    size_t cap_ids = 0, cap_labels = 0;
    b.p = hs_profile_new();
    if (!b.p || hs_idmap_init(&b.locs, 1024) < 0 || hs_idmap_init(&b.maps, 16) < 0)
        goto oom;
    if (m->types.n == 0 || m->types.n > HS_STORE_MAX_VALUES) {
        ERR("merged result has %zu sample types", m->types.n);
        goto fail;
    }
    for (size_t i = 0; i < m->types.n; i++)
        if (hs_profile_add_sample_type(b.p, m->types.type[i], m->types.unit[i]) < 0)
            goto oom;
    hs_profile_set_period(b.p, m->types.period_type ? m->types.period_type : "",
                          m->types.period_unit ? m->types.period_unit : "", m->types.period);
    if (m->types.default_index >= 0 && (size_t)m->types.default_index < m->types.n)
        b.p->default_sample_type = hs_profile_str(b.p, m->types.type[m->types.default_index]);
    b.p->time_nanos = m->min_start_ns;
    b.p->duration_nanos = m->max_end_ns > m->min_start_ns ? m->max_end_ns - m->min_start_ns : 0;

    for (size_t r = 0; r < m->n_rows; r++) {
        size_t len = 0;
        const void *data = lookup(arg, m->rows[r].stack, &len);
        if (!data) {
            n_missing++;
            continue;
        }
        if (st_parse_record(data, len, &pr, err, errlen) < 0)
            goto fail;
        if (hs_vec_reserve((void **)&b.idx, &b.cap_idx, pr.ns, sizeof *b.idx) < 0 ||
            hs_vec_reserve((void **)&ids, &cap_ids, pr.nf, sizeof *ids) < 0 ||
            hs_vec_reserve((void **)&labels, &cap_labels, pr.nl, sizeof *labels) < 0)
            goto oom;
        b.idx[0] = 0;
        for (size_t i = 1; i < pr.ns; i++)
            if ((b.idx[i] = hs_profile_str(b.p, pr.s[i])) < 0)
                goto oom;
        size_t nl = 0;
        for (size_t i = 0; i < pr.nf;) {
            size_t j = i;
            while (j + 1 < pr.nf && pr.f[j].inlined)
                j++;
            uint64_t id = location_for(&b, &pr, pr.f + i, j - i + 1);
            if (!id)
                goto oom;
            ids[nl++] = id;
            i = j + 1;
        }
        for (size_t i = 0; i < pr.nl; i++)
            labels[i] = (hs_label){b.idx[pr.l[i].key], b.idx[pr.l[i].str], pr.l[i].num, b.idx[pr.l[i].unit]};
        if (hs_profile_add_sample(b.p, ids, nl, m->rows[r].values, labels, pr.nl) < 0)
            goto oom;
    }
    main_mapping_first(b.p);
    if (missing)
        *missing = n_missing;
    goto done;
oom:
    ERR("out of memory");
fail:
    hs_profile_free(b.p);
    b.p = NULL;
done:
    st_parsed_free(&pr);
    hs_idmap_free(&b.locs);
    hs_idmap_free(&b.maps);
    free(b.keys.p);
    free(b.key);
    free(b.key_off);
    free(b.key_len);
    free(b.loc_id);
    free(b.map_ids);
    free(b.map_names);
    free(b.idx);
    free(ids);
    free(labels);
    return b.p;
}
