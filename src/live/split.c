/* split.c — a profile's chosen samples as a profile of their own, with only
 * the locations, functions, mappings and strings they use: what the host
 * agent uploads per service and `record -a --per-process` writes per
 * process (a -a profile's tables hold every process on the host). */
#include "live/live.h"

#include <stdlib.h>

#include "base/hashmap.h"

typedef struct {
    const hs_profile *p;
    hs_profile *q;
    hs_hmap loc, fn, map; /* old id -> new id */
} subset;

static int64_t str(subset *x, int64_t i)
{
    return i ? hs_profile_str(x->q, hs_profile_string(x->p, i)) : 0;
}

static uint64_t copy_mapping(subset *x, uint64_t id)
{
    uint64_t v;
    if (!id || hs_hmap_get(&x->map, id, &v))
        return id ? v : 0;
    const hs_mapping *m = hs_profile_mapping(x->p, id);
    if (!m)
        return 0;
    v = hs_profile_add_mapping(x->q, m->memory_start, m->memory_limit, m->file_offset,
                               hs_profile_string(x->p, m->filename), hs_profile_string(x->p, m->build_id));
    hs_mapping *n = v ? (hs_mapping *)hs_profile_mapping(x->q, v) : NULL;
    if (n) {
        n->has_functions = m->has_functions;
        n->has_filenames = m->has_filenames;
        n->has_line_numbers = m->has_line_numbers;
        n->has_inline_frames = m->has_inline_frames;
    }
    hs_hmap_put(&x->map, id, v);
    return v;
}

static uint64_t copy_function(subset *x, uint64_t id)
{
    uint64_t v;
    if (hs_hmap_get(&x->fn, id, &v))
        return v;
    const hs_function *f = hs_profile_function(x->p, id);
    if (!f)
        return 0;
    v = hs_profile_add_function(x->q, hs_profile_string(x->p, f->name), hs_profile_string(x->p, f->system_name),
                                hs_profile_string(x->p, f->filename), f->start_line);
    hs_hmap_put(&x->fn, id, v);
    return v;
}

static uint64_t copy_location(subset *x, uint64_t id)
{
    uint64_t v;
    if (hs_hmap_get(&x->loc, id, &v))
        return v;
    const hs_location *l = hs_profile_location(x->p, id);
    if (!l)
        return 0;
    hs_line lines[64], *ln = l->n_lines <= 64 ? lines : malloc(l->n_lines * sizeof *ln);
    if (!ln)
        return 0;
    for (size_t i = 0; i < l->n_lines; i++)
        ln[i] = (hs_line){copy_function(x, l->lines[i].function_id), l->lines[i].line, l->lines[i].column};
    v = hs_profile_add_location(x->q, copy_mapping(x, l->mapping_id), l->address, ln, l->n_lines);
    if (ln != lines)
        free(ln);
    hs_hmap_put(&x->loc, id, v);
    return v;
}

hs_profile *hs_live_subset(const hs_profile *p, const size_t *idx, size_t n)
{
    subset x = {p, hs_profile_new(), {0}, {0}, {0}};
    hs_profile *q = x.q;
    if (!q)
        return NULL;
    for (size_t i = 0; i < p->n_sample_types; i++)
        hs_profile_add_sample_type(q, hs_profile_string(p, p->sample_types[i].type),
                                   hs_profile_string(p, p->sample_types[i].unit));
    if (p->period_type.type || p->period)
        hs_profile_set_period(q, hs_profile_string(p, p->period_type.type), hs_profile_string(p, p->period_type.unit),
                              p->period);
    for (size_t i = 0; i < p->n_comments; i++)
        hs_profile_add_comment(q, hs_profile_string(p, p->comments[i]));
    q->time_nanos = p->time_nanos;
    q->duration_nanos = p->duration_nanos;
    q->drop_frames = str(&x, p->drop_frames);
    q->keep_frames = str(&x, p->keep_frames);
    q->default_sample_type = str(&x, p->default_sample_type);
    /* the first mapping names the profile ("File:"): the program's own,
     * the one of the first sample's outermost frame */
    if (n && p->samples[idx[0]].n_locations) {
        const hs_sample *s = &p->samples[idx[0]];
        const hs_location *l = hs_profile_location(p, s->location_ids[s->n_locations - 1]);
        const hs_mapping *m = l ? hs_profile_mapping(p, l->mapping_id) : NULL;
        if (m && hs_profile_string(p, m->filename)[0] == '/')
            copy_mapping(&x, m->id);
    }
    uint64_t *ids = NULL;
    size_t cap = 0;
    int fail = 0;
    for (size_t k = 0; k < n && !fail; k++) {
        const hs_sample *s = &p->samples[idx[k]];
        if (s->n_locations > cap) {
            uint64_t *ni = realloc(ids, s->n_locations * sizeof *ni);
            if (!ni) {
                fail = 1;
                break;
            }
            ids = ni;
            cap = s->n_locations;
        }
        for (size_t i = 0; i < s->n_locations; i++)
            ids[i] = copy_location(&x, s->location_ids[i]);
        hs_label lb[16];
        size_t nl = s->n_labels < 16 ? s->n_labels : 16;
        for (size_t i = 0; i < nl; i++)
            lb[i] = (hs_label){str(&x, s->labels[i].key), str(&x, s->labels[i].str), s->labels[i].num,
                               str(&x, s->labels[i].num_unit)};
        if (hs_profile_add_sample(q, ids, s->n_locations, s->values, lb, nl) < 0)
            fail = 1;
    }
    free(ids);
    hs_hmap_free(&x.loc);
    hs_hmap_free(&x.fn);
    hs_hmap_free(&x.map);
    if (fail) {
        hs_profile_free(q);
        return NULL;
    }
    return q;
}
