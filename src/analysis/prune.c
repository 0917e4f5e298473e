/* prune.c — the profile's own drop_frames/keep_frames, applied on load as
 * pprof's Profile.RemoveUninteresting (profile/prune.go) does: in every
 * location the frames from the outermost one whose (simplified) function
 * name matches ^(drop_frames)$ and not ^(keep_frames)$ inward are removed,
 * and each sample's stack is cut below (leafward of) the first such
 * location after its first "user" frame, counting from the root. */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis_internal.h"

static int compile_anchored(hs_regex *re, const char *what, const char *src, char *err,
                            size_t errlen)
{
    size_t n = strlen(src) + 8;
    char *s = malloc(n);
    if (!s) {
        hs_err(err, errlen, "out of memory");
        return -1;
    }
    snprintf(s, n, "^(%s)$", src);
    int rc = hs_analysis_regcomp(re, s, what, err, errlen);
    free(s);
    return rc;
}

int hs_analysis_remove_uninteresting(hs_profile *p, char *err, size_t errlen)
{
    const char *drop_s = hs_profile_string(p, p->drop_frames);
    const char *keep_s = hs_profile_string(p, p->keep_frames);
    if (!*drop_s)
        return 0;
    hs_regex drop, keep;
    if (compile_anchored(&drop, "drop_frames", drop_s, err, errlen) < 0)
        return -1;
    bool has_keep = *keep_s != '\0';
    if (has_keep && compile_anchored(&keep, "keep_frames", keep_s, err, errlen) < 0) {
        hs_regex_free(&drop);
        return -1;
    }
    /* per location: 0 untouched, 1 prune beneath, 2 prune whole location */
    uint8_t *mark = calloc(p->n_locations + 1, 1);
    if (!mark) {
        hs_regex_free(&drop);
        if (has_keep)
            hs_regex_free(&keep);
        hs_err(err, errlen, "out of memory");
        return -1;
    }
    char buf[1024];
    for (size_t l = 0; l < p->n_locations; l++) {
        hs_location *loc = &p->locations[l];
        size_t i;
        for (i = loc->n_lines; i-- > 0;) { /* outermost line first */
            const hs_function *fn = hs_profile_function(p, loc->lines[i].function_id);
            const char *name = fn ? hs_profile_string(p, fn->name) : "";
            if (!*name)
                continue;
            const char *simple = hs_an_simplify_func(name, buf, sizeof buf);
            if (hs_regex_match(&drop, simple) &&
                !(has_keep && hs_regex_match(&keep, simple)))
                break;
        }
        if (i == (size_t)-1)
            continue;
        if (i == loc->n_lines - 1) {
            mark[l] = 2;
        } else {
            mark[l] = 1;
            memmove(loc->lines, loc->lines + i + 1, (loc->n_lines - i - 1) * sizeof *loc->lines);
            loc->n_lines -= i + 1;
        }
    }
    for (size_t s = 0; s < p->n_samples; s++) {
        hs_sample *S = &p->samples[s];
        bool user = false;
        for (size_t i = S->n_locations; i-- > 0;) { /* root first */
            const hs_location *loc = hs_profile_location(p, S->location_ids[i]);
            uint8_t m = loc ? mark[loc - p->locations] : 0;
            if (!m) {
                user = true;
                continue;
            }
            if (!user)
                continue;
            size_t from = m == 2 ? i + 1 : i; /* keep location_ids[from..] */
            S->location_ids += from; /* not in place: samples may share the array */
            S->n_locations -= from;
            break;
        }
    }
    free(mark);
    hs_regex_free(&drop);
    if (has_keep)
        hs_regex_free(&keep);
    return 0;
}
