/* filter_profile.c — hs_analysis_filter_profile: the view's filters
 * (view.c's per-location decisions, view_internal.h) applied to a profile,
 * producing a profile (convert, merge, the server's /api/v1/profile). */
#include <stdlib.h>
#include <string.h>

#include "analysis/view_internal.h"
#include "base/vec.h"

static int64_t fp_str(hs_profile *out, const hs_profile *p, int64_t idx)
{
    return idx ? hs_profile_str(out, hs_profile_string(p, idx)) : 0;
}

hs_profile *hs_analysis_filter_profile(const hs_profile *p, const hs_analysis_options *o,
                                       char *err, size_t errlen)
{
    hs_an_filters f;
    if (hs_an_filters_compile(&f, o, err, errlen) < 0)
        return NULL;
    prof_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.dense = hs_profile_locations_dense(p);
    c.f = &f;
    c.gran = HS_GRAN_ADDRESSES;
    hs_profile *out = hs_profile_new();
    struct hs_view_private pv;
    memset(&pv, 0, sizeof pv);
    uint64_t *map_ids = calloc(p->n_mappings + 1, sizeof *map_ids);
    uint64_t *fn_ids = calloc(p->n_functions + 1, sizeof *fn_ids);
    uint64_t *loc_ids = calloc(p->n_locations + 1, sizeof *loc_ids);
    c.keepmask = calloc(p->n_locations + 1, sizeof *c.keepmask);
    keep_buf kb = {0};
    uint64_t *ids = NULL;
    hs_label *labels = NULL;
    hs_line *lines = NULL;
    size_t locs_cap = 0, lab_cap = 0, lines_cap = 0;
    if (!out || !map_ids || !fn_ids || !loc_ids || !c.keepmask ||
        hs_strtab_init(&pv.strs) < 0 || hs_idmap_init(&pv.node_map, 64) < 0 ||
        hs_an_compute_matches(&c) < 0 || hs_an_compute_locations(&c, &pv) < 0)
        goto oom;
    for (size_t t = 0; t < p->n_sample_types; t++)
        if (hs_profile_add_sample_type(out, hs_profile_string(p, p->sample_types[t].type),
                                       hs_profile_string(p, p->sample_types[t].unit)) < 0)
            goto oom;
    hs_profile_set_period(out, hs_profile_string(p, p->period_type.type),
                          hs_profile_string(p, p->period_type.unit), p->period);
    out->time_nanos = p->time_nanos;
    out->duration_nanos = p->duration_nanos;
    out->default_sample_type = fp_str(out, p, p->default_sample_type);
    out->drop_frames = fp_str(out, p, p->drop_frames);
    out->keep_frames = fp_str(out, p, p->keep_frames);
    for (size_t i = 0; i < p->n_comments; i++)
        hs_profile_add_comment(out, hs_profile_string(p, p->comments[i]));
    for (size_t i = 0; i < p->n_mappings; i++) {
        const hs_mapping *m = &p->mappings[i];
        map_ids[i] = hs_profile_add_mapping(out, m->memory_start, m->memory_limit, m->file_offset,
                                            hs_profile_string(p, m->filename),
                                            hs_profile_string(p, m->build_id));
        if (!map_ids[i])
            goto oom;
        hs_mapping *nm = (hs_mapping *)hs_profile_mapping(out, map_ids[i]);
        if (nm) {
            nm->has_functions = m->has_functions;
            nm->has_filenames = m->has_filenames;
            nm->has_line_numbers = m->has_line_numbers;
            nm->has_inline_frames = m->has_inline_frames;
        }
    }
    for (size_t i = 0; i < p->n_functions; i++) {
        const hs_function *fn = &p->functions[i];
        fn_ids[i] = hs_profile_add_function(out, hs_profile_string(p, fn->name),
                                            hs_profile_string(p, fn->system_name),
                                            hs_profile_string(p, fn->filename), fn->start_line);
        if (!fn_ids[i])
            goto oom;
    }
    for (size_t s = 0; s < p->n_samples; s++) {
        const hs_sample *S = &p->samples[s];
        if (hs_an_keep_buf_reserve(&kb, S->n_locations + 1) < 0)
            goto oom;
        if (locs_cap < kb.cap) {
            uint64_t *ni = realloc(ids, kb.cap * sizeof *ni);
            if (!ni)
                goto oom;
            ids = ni;
            locs_cap = kb.cap;
        }
        size_t n = 0;
        if (!hs_an_sample_keep(&c, S, &kb, &n))
            continue;
        const hs_location **locs = kb.locs;
        for (size_t k = 0; k < n; k++) {
            size_t li = (size_t)(locs[k] - p->locations);
            if (!loc_ids[li]) {
                const hs_location *L = locs[k];
                if (lines_cap < L->n_lines + 1) {
                    lines_cap = L->n_lines + 16;
                    hs_line *nl = realloc(lines, lines_cap * sizeof *nl);
                    if (!nl)
                        goto oom;
                    lines = nl;
                }
                size_t nl = 0;
                for (size_t j = 0; j < L->n_lines; j++) {
                    if (c.keepmask[li] && !c.keepmask[li][j])
                        continue;
                    const hs_function *fn = hs_an_line_fn(p, &L->lines[j]);
                    lines[nl].function_id = fn ? fn_ids[fn - p->functions] : 0;
                    lines[nl].line = L->lines[j].line;
                    lines[nl].column = L->lines[j].column;
                    nl++;
                }
                const hs_mapping *m = L->mapping_id ? hs_profile_mapping(p, L->mapping_id) : NULL;
                loc_ids[li] = hs_profile_add_location(out, m ? map_ids[m - p->mappings] : 0,
                                                      L->address, lines, nl);
                if (!loc_ids[li])
                    goto oom;
            }
            ids[k] = loc_ids[li];
        }
        if (lab_cap < S->n_labels + 1) {
            lab_cap = S->n_labels + 16;
            hs_label *nl = realloc(labels, lab_cap * sizeof *nl);
            if (!nl)
                goto oom;
            labels = nl;
        }
        for (size_t k = 0; k < S->n_labels; k++) {
            labels[k].key = fp_str(out, p, S->labels[k].key);
            labels[k].str = fp_str(out, p, S->labels[k].str);
            labels[k].num = S->labels[k].num;
            labels[k].num_unit = fp_str(out, p, S->labels[k].num_unit);
        }
        if (hs_profile_add_sample(out, ids, n, S->values, labels, S->n_labels) < 0)
            goto oom;
    }
    goto done;
oom:
    hs_profile_free(out);
    out = NULL;
    hs_err(err, errlen, "out of memory");
done:
    if (c.keepmask)
        for (size_t i = 0; i < p->n_locations; i++)
            free(c.keepmask[i]);
    free(c.keepmask);
    free(c.fmatch);
    free(c.mmatch);
    free(c.li);
    free(c.lists);
    free(c.inls);
    free(map_ids);
    free(fn_ids);
    free(loc_ids);
    hs_an_keep_buf_free(&kb);
    free(ids);
    free(labels);
    free(lines);
    hs_strtab_free(&pv.strs);
    hs_idmap_free(&pv.node_map);
    free(pv.nodes);
    hs_an_filters_free(&f);
    return out;
}
