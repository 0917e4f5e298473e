/* merge.c — merge profiles of the same type into one (pprof's Merge):
 * mappings, functions and locations are deduplicated by content, samples
 * with the same stack and labels are summed. Time is the earliest start,
 * duration the sum, period the largest, as pprof does. */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis_internal.h"

typedef struct {
    hs_profile *out;
    hs_idmap loc_map;  /* content hash -> new location id (stored as index) */
    uint64_t *loc_ids;  /* index -> new location id */
    uint64_t *loc_hash;
    size_t n_locs, cap_locs;
    hs_idmap sample_map; /* stack+labels hash -> sample index */
} merger;

static int64_t restr(hs_profile *out, const hs_profile *p, int64_t idx)
{
    if (idx == 0)
        return 0;
    return hs_profile_str(out, hs_profile_string(p, idx));
}

static bool same_location(const hs_profile *out, uint64_t id, uint64_t mapping, uint64_t addr,
                          const hs_line *lines, size_t n)
{
    const hs_location *l = hs_profile_location(out, id);
    if (!l || l->mapping_id != mapping || l->address != addr || l->n_lines != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (l->lines[i].function_id != lines[i].function_id || l->lines[i].line != lines[i].line)
            return false;
    return true;
}

static bool same_sample(const hs_sample *a, const uint64_t *locs, size_t n, const hs_label *labels,
                        size_t nl)
{
    if (a->n_locations != n || a->n_labels != nl)
        return false;
    if (n && memcmp(a->location_ids, locs, n * sizeof *locs) != 0)
        return false;
    for (size_t i = 0; i < nl; i++)
        if (a->labels[i].key != labels[i].key || a->labels[i].str != labels[i].str ||
            a->labels[i].num != labels[i].num || a->labels[i].num_unit != labels[i].num_unit)
            return false;
    return true;
}

/* One source profile being merged: its ids mapped lazily, in the order
 * samples reach them, so ids come out numbered as pprof's Merge numbers
 * them, and mappings/functions/locations no sample uses are left out. */
typedef struct {
    merger *m;
    const hs_profile *p;
    uint64_t *map_ids, *fn_ids, *loc_ids; /* per source index: new id, 0 = not yet */
    hs_line *lines;
    size_t lines_cap;
} msrc;

static uint64_t merge_mapping(msrc *c, const hs_mapping *mp)
{
    size_t i = (size_t)(mp - c->p->mappings);
    if (c->map_ids[i])
        return c->map_ids[i];
    hs_profile *out = c->m->out;
    const hs_profile *p = c->p;
    uint64_t found = 0;
    for (size_t j = 0; j < out->n_mappings && !found; j++) { /* dedup by content */
        const hs_mapping *o = &out->mappings[j];
        if (o->memory_start == mp->memory_start && o->memory_limit == mp->memory_limit &&
            o->file_offset == mp->file_offset &&
            strcmp(hs_profile_string(out, o->filename), hs_profile_string(p, mp->filename)) == 0 &&
            strcmp(hs_profile_string(out, o->build_id), hs_profile_string(p, mp->build_id)) == 0)
            found = o->id;
    }
    if (!found) {
        found = hs_profile_add_mapping(out, mp->memory_start, mp->memory_limit, mp->file_offset,
                                       hs_profile_string(p, mp->filename),
                                       hs_profile_string(p, mp->build_id));
        if (!found)
            return 0;
        hs_mapping *nm = (hs_mapping *)hs_profile_mapping(out, found);
        if (nm) {
            nm->has_functions = mp->has_functions;
            nm->has_filenames = mp->has_filenames;
            nm->has_line_numbers = mp->has_line_numbers;
            nm->has_inline_frames = mp->has_inline_frames;
        }
    }
    return c->map_ids[i] = found;
}

static uint64_t merge_function(msrc *c, const hs_function *f)
{
    size_t i = (size_t)(f - c->p->functions);
    if (!c->fn_ids[i])
        c->fn_ids[i] = hs_profile_add_function(c->m->out, hs_profile_string(c->p, f->name),
                                               hs_profile_string(c->p, f->system_name),
                                               hs_profile_string(c->p, f->filename), f->start_line);
    return c->fn_ids[i];
}

/* new id of source location l; 0 on out of memory */
static uint64_t merge_location(msrc *c, const hs_location *l)
{
    size_t i = (size_t)(l - c->p->locations);
    if (c->loc_ids[i])
        return c->loc_ids[i];
    merger *m = c->m;
    const hs_profile *p = c->p;
    const hs_mapping *mp = l->mapping_id ? hs_profile_mapping(p, l->mapping_id) : NULL;
    uint64_t mid = 0;
    if (mp && !(mid = merge_mapping(c, mp)))
        return 0;
    if (c->lines_cap < l->n_lines + 1) {
        c->lines_cap = l->n_lines + 16;
        hs_line *nl = realloc(c->lines, c->lines_cap * sizeof *nl);
        if (!nl)
            return 0;
        c->lines = nl;
    }
    hs_line *lines = c->lines;
    for (size_t k = 0; k < l->n_lines; k++) {
        const hs_function *f = l->lines[k].function_id
                                   ? hs_profile_function(p, l->lines[k].function_id)
                                   : NULL;
        lines[k].function_id = 0;
        if (f && !(lines[k].function_id = merge_function(c, f)))
            return 0;
        lines[k].line = l->lines[k].line;
        lines[k].column = l->lines[k].column;
    }
    uint64_t h = hs_mix64(mid * 31 + l->address);
    for (size_t k = 0; k < l->n_lines; k++)
        h = hs_mix64(h ^ (lines[k].function_id * 1000003ULL + (uint64_t)lines[k].line));
    size_t slot = (size_t)-1;
    uint32_t idx;
    while ((idx = hs_idmap_next(&m->loc_map, h, &slot)) != UINT32_MAX)
        if (same_location(m->out, m->loc_ids[idx], mid, l->address, lines, l->n_lines))
            return c->loc_ids[i] = m->loc_ids[idx];
    uint64_t found = hs_profile_add_location(m->out, mid, l->address, lines, l->n_lines);
    if (!found)
        return 0;
    if (m->n_locs == m->cap_locs) {
        size_t nc = m->cap_locs ? m->cap_locs * 2 : 1024;
        uint64_t *ni = realloc(m->loc_ids, nc * sizeof *ni);
        if (!ni)
            return 0;
        m->loc_ids = ni;
        m->cap_locs = nc;
    }
    m->loc_ids[m->n_locs] = found;
    if (hs_idmap_put(&m->loc_map, h, (uint32_t)m->n_locs) < 0)
        return 0;
    m->n_locs++;
    return c->loc_ids[i] = found;
}

static int merge_one(merger *m, const hs_profile *p, bool mark, char *err, size_t errlen)
{
    hs_profile *out = m->out;
    msrc c = {m, p, calloc(p->n_mappings + 1, sizeof(uint64_t)),
              calloc(p->n_functions + 1, sizeof(uint64_t)),
              calloc(p->n_locations + 1, sizeof(uint64_t)), NULL, 0};
    uint64_t *sl = NULL;
    hs_label *lb = NULL;
    size_t sl_cap = 0, lb_cap = 0;
    int rc = -1;
    if (!c.map_ids || !c.fn_ids || !c.loc_ids)
        goto oom;
    /* as pprof: the first mapping (the main binary) stays first */
    if (out->n_mappings == 0 && p->n_mappings > 0 && !merge_mapping(&c, &p->mappings[0]))
        goto oom;
    for (size_t s = 0; s < p->n_samples; s++) {
        const hs_sample *S = &p->samples[s];
        bool zero = true; /* pprof's Merge drops samples whose values are all 0 */
        for (size_t t = 0; t < p->n_sample_types && zero; t++)
            zero = S->values[t] == 0;
        if (zero)
            continue;
        if (sl_cap < S->n_locations + 1) {
            sl_cap = S->n_locations + 64;
            uint64_t *n2 = realloc(sl, sl_cap * sizeof *n2);
            if (!n2)
                goto oom;
            sl = n2;
        }
        if (lb_cap < S->n_labels + 2) {
            lb_cap = S->n_labels + 16;
            hs_label *n2 = realloc(lb, lb_cap * sizeof *n2);
            if (!n2)
                goto oom;
            lb = n2;
        }
        uint64_t h = 0x12345;
        for (size_t k = 0; k < S->n_locations; k++) {
            const hs_location *l = hs_profile_location(p, S->location_ids[k]);
            sl[k] = 0;
            if (l && !(sl[k] = merge_location(&c, l)))
                goto oom;
            h = hs_mix64(h ^ sl[k]);
        }
        for (size_t k = 0; k < S->n_labels; k++) {
            lb[k].key = restr(out, p, S->labels[k].key);
            lb[k].str = restr(out, p, S->labels[k].str);
            lb[k].num = S->labels[k].num;
            lb[k].num_unit = restr(out, p, S->labels[k].num_unit);
            h = hs_mix64(h ^ ((uint64_t)lb[k].key * 7 + (uint64_t)lb[k].str * 131 +
                               (uint64_t)lb[k].num));
        }
        size_t nl = S->n_labels;
        if (mark) { /* pprof's -diff_base: SetLabel("pprof::base", "true") */
            lb[nl] = (hs_label){hs_profile_str(out, "pprof::base"), hs_profile_str(out, "true"), 0, 0};
            if (lb[nl].key <= 0 || lb[nl].str <= 0)
                goto oom;
            h = hs_mix64(h ^ ((uint64_t)lb[nl].key * 7 + (uint64_t)lb[nl].str * 131));
            nl++;
        }
        size_t slot = (size_t)-1;
        uint32_t idx;
        bool merged = false;
        while ((idx = hs_idmap_next(&m->sample_map, h, &slot)) != UINT32_MAX) {
            hs_sample *o = &out->samples[idx];
            if (same_sample(o, sl, S->n_locations, lb, nl)) {
                for (size_t t = 0; t < out->n_sample_types; t++)
                    o->values[t] += S->values[t];
                merged = true;
                break;
            }
        }
        if (merged)
            continue;
        uint32_t ni = (uint32_t)out->n_samples;
        if (hs_profile_add_sample(out, sl, S->n_locations, S->values, lb, nl) < 0)
            goto oom;
        if (hs_idmap_put(&m->sample_map, h, ni) < 0)
            goto oom;
    }
    rc = 0;
    goto out;
oom:
    hs_err(err, errlen, "out of memory while merging profiles");
out:
    free(c.map_ids);
    free(c.fn_ids);
    free(c.loc_ids);
    free(c.lines);
    free(sl);
    free(lb);
    return rc;
}

hs_profile *hs_analysis_merge(hs_profile *const *ps, size_t n, char *err, size_t errlen)
{
    return hs_analysis_merge_marked(ps, n, n, err, errlen);
}

hs_profile *hs_analysis_merge_marked(hs_profile *const *ps, size_t n, size_t first_marked,
                                     char *err, size_t errlen)
{
    if (n == 0) {
        hs_err(err, errlen, "no profiles to merge");
        return NULL;
    }
    const hs_profile *p0 = ps[0];
    for (size_t i = 1; i < n; i++) {
        const hs_profile *q = ps[i];
        bool ok = q->n_sample_types == p0->n_sample_types;
        for (size_t t = 0; ok && t < p0->n_sample_types; t++)
            ok = strcmp(hs_profile_string(p0, p0->sample_types[t].type),
                        hs_profile_string(q, q->sample_types[t].type)) == 0 &&
                 strcmp(hs_profile_string(p0, p0->sample_types[t].unit),
                        hs_profile_string(q, q->sample_types[t].unit)) == 0;
        if (!ok) {
            hs_err(err, errlen, "cannot merge profiles of different types (profile %zu)",
                      i + 1);
            return NULL;
        }
    }
    merger m;
    memset(&m, 0, sizeof m);
    hs_profile *out = hs_profile_new();
    if (!out || hs_idmap_init(&m.loc_map, 1024) < 0 || hs_idmap_init(&m.sample_map, 1024) < 0)
        goto oom;
    m.out = out;
    for (size_t t = 0; t < p0->n_sample_types; t++)
        if (hs_profile_add_sample_type(out, hs_profile_string(p0, p0->sample_types[t].type),
                                       hs_profile_string(p0, p0->sample_types[t].unit)) < 0)
            goto oom;
    int64_t period = 0, tmin = 0, dur = 0;
    for (size_t i = 0; i < n; i++) {
        const hs_profile *q = ps[i];
        if (q->period > period)
            period = q->period;
        if (q->time_nanos && (!tmin || q->time_nanos < tmin))
            tmin = q->time_nanos;
        dur += q->duration_nanos;
    }
    hs_profile_set_period(out, hs_profile_string(p0, p0->period_type.type),
                          hs_profile_string(p0, p0->period_type.unit), period);
    out->time_nanos = tmin;
    out->duration_nanos = dur;
    out->default_sample_type = restr(out, p0, p0->default_sample_type);
    out->drop_frames = restr(out, p0, p0->drop_frames);
    out->keep_frames = restr(out, p0, p0->keep_frames);
    for (size_t c = 0; c < p0->n_comments; c++)
        hs_profile_add_comment(out, hs_profile_string(p0, p0->comments[c]));
    for (size_t i = 0; i < n; i++)
        if (merge_one(&m, ps[i], i >= first_marked, err, errlen) < 0)
            goto fail;
    /* Samples that summed to zero (a base subtracted) are dropped, as pprof's
     * Merge re-merges to drop them. */
    size_t kept = 0;
    for (size_t i = 0; i < out->n_samples; i++) {
        bool zero = true;
        for (size_t t = 0; t < out->n_sample_types && zero; t++)
            zero = out->samples[i].values[t] == 0;
        if (!zero)
            out->samples[kept++] = out->samples[i];
    }
    out->n_samples = kept;
    hs_idmap_free(&m.loc_map);
    hs_idmap_free(&m.sample_map);
    free(m.loc_ids);
    return out;
oom:
    hs_err(err, errlen, "out of memory while merging profiles");
fail:
    hs_idmap_free(&m.loc_map);
    hs_idmap_free(&m.sample_map);
    free(m.loc_ids);
    hs_profile_free(out);
    return NULL;
}

void hs_analysis_negate(hs_profile *p)
{
    for (size_t i = 0; i < p->n_samples; i++)
        for (size_t t = 0; t < p->n_sample_types; t++)
            p->samples[i].values[t] = -p->samples[i].values[t];
}
