/* collapsed.c — FlameGraph "folded stacks" ("root;caller;leaf 42"), both
 * ways: hs_export_collapsed writes one line per distinct stack from a
 * profile, hs_import_collapsed builds a profile (one function and one
 * location per distinct frame name) from such text. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "report/export.h"
#include "report/stacks.h"

/* The walk's state: the path down to the node being visited. Every view
 * node's name is packed, as a line shows it, into one arena: the walk
 * looks a name up per tree node (2.4 million on bench's large profile),
 * and reading it from the view's nodes and the profile's scattered strings
 * was a cache miss or two each time. */
typedef struct {
    hs_wpath p; /* the path's text: "main;work;spin" */
    const char *names; /* node i's name is names[name_off[i] .. name_off[i + 1]) */
    const size_t *name_off;
} hs_collapsed;

/* The arena of v's node names with ';' (between frames) made ':' and '\n'
 * (between lines) ' ', so that no name breaks a line. 0, or -1 (out of
 * memory). */
static int hs_collapsed_names(const hs_view *v, char **names, size_t **name_off)
{
    size_t *off = malloc((v->n_nodes + 1) * sizeof *off), total = 0;
    if (!off)
        return -1;
    for (size_t i = 0; i < v->n_nodes; i++) {
        off[i] = total;
        total += strlen(v->nodes[i].name);
    }
    off[v->n_nodes] = total;
    char *a = malloc(total ? total : 1);
    if (!a) {
        free(off);
        return -1;
    }
    for (size_t i = 0; i < v->n_nodes; i++) {
        char *d = a + off[i];
        size_t len = off[i + 1] - off[i];
        memcpy(d, v->nodes[i].name, len);
        for (char *q = d; (q = memchr(q, ';', (size_t)(d + len - q))); q++)
            *q = ':';
        for (char *q = d; (q = memchr(q, '\n', (size_t)(d + len - q))); q++)
            *q = ' ';
    }
    *names = a;
    *name_off = off;
    return 0;
}

static int hs_collapsed_node(void *ctx, const hs_walk_node *nd, const hs_walk_node *kids,
                             size_t n_kids)
{
    hs_collapsed *c = ctx;
    (void)kids;
    (void)n_kids;
    uint32_t d = nd->depth;
    c->p.depth = d;
    if (d == 0) /* the root: no frame, no line */
        return 0;
    if (HS_VEC_RESERVE(c->p.off, c->p.off_cap, (size_t)d + 1) < 0)
        return 1; /* out of memory */
    size_t base = d == 1 ? 0 : c->p.off[d - 1];
    size_t a = c->name_off[nd->node], nl = c->name_off[nd->node + 1] - a;
    if (HS_VEC_RESERVE(c->p.path, c->p.path_cap, base + nl + 2) < 0)
        return 1;
    if (d > 1)
        c->p.path[base++] = ';';
    memcpy(c->p.path + base, c->names + a, nl);
    c->p.off[d] = base + nl;
    if (nd->self != 0) {
        hs_wmem(c->p.w, c->p.path, c->p.off[d]);
        hs_wchar(c->p.w, ' ');
        hs_wint(c->p.w, nd->self);
        hs_wchar(c->p.w, '\n');
    }
    return 0;
}

/* A piece of a split walk: the path so far, the lines into memory. */
static void hs_collapsed_drop(void *piece)
{
    hs_collapsed *p = piece;
    hs_wpath_free(&p->p);
    free(p);
}

static void *hs_collapsed_fork(void *ctx)
{
    const hs_collapsed *c = ctx;
    hs_collapsed *p = malloc(sizeof *p);
    if (!p)
        return NULL;
    if (hs_wpath_fork(&p->p, &c->p) < 0) {
        free(p);
        return NULL;
    }
    p->names = c->names;
    p->name_off = c->name_off;
    return p;
}

static int hs_collapsed_join(void *ctx, void *piece)
{
    return hs_wpath_join(&((hs_collapsed *)ctx)->p, &((hs_collapsed *)piece)->p);
}

int hs_export_collapsed(const hs_view *v, FILE *out, char *err, size_t errlen)
{
    int rc = -1;
    hs_collapsed c = {0};
    char *names = NULL;
    size_t *name_off = NULL;
    if (hs_wpath_open(&c.p, out) != 0 || hs_collapsed_names(v, &names, &name_off) != 0) {
        snprintf(err, errlen, "out of memory writing collapsed stacks");
        goto done;
    }
    c.names = names;
    c.name_off = name_off;
    /* the walk on two threads, the pieces' lines written here in order
     * (each, past the buffer's size, straight from the piece's) */
    static const hs_walk_split split = {hs_collapsed_node, hs_collapsed_fork, hs_collapsed_join,
                                        hs_collapsed_drop};
    int r = hs_calltree_walk_split(v, 0, &split, &c, 2, err, errlen);
    if (r > 0) /* from hs_collapsed_node */
        snprintf(err, errlen, "out of memory writing collapsed stacks");
    if (r != 0)
        goto done;
    hs_wflush(c.p.w);
    hs_wbuf_end(c.p.w);
    rc = hs_out_finish(out, err, errlen);
done:
    hs_wpath_close(&c.p);
    free(names);
    free(name_off);
    return rc;
}

/* ---------------------------------------------------------------- import */

/* Per distinct frame name, its location id in the profile being built. */
typedef struct {
    hs_strtab *names;
    uint64_t *loc; /* name id -> location id (0 = not yet) */
    size_t n_loc;
} hs_frame_cache;

static uint64_t hs_frame_location(hs_profile *p, hs_frame_cache *c, const char *name, size_t len)
{
    uint32_t id = hs_strtab_intern_len(c->names, name, len);
    if (id == UINT32_MAX)
        return 0;
    if (HS_VEC_RESERVE_ZEROED(c->loc, c->n_loc, (size_t)id + 1))
        return 0;
    if (!c->loc[id]) {
        const char *s = hs_strtab_get(c->names, id);
        uint64_t fn = hs_profile_add_function(p, s, s, "", 0);
        if (!fn)
            return 0;
        hs_line line = {.function_id = fn, .line = 0, .column = 0};
        c->loc[id] = hs_profile_add_location(p, 0, 0, &line, 1);
    }
    return c->loc[id];
}

/* A count as flamegraph.pl accepts it: digits, optionally "." and more
 * digits (\d+(\.\d*)?); no sign, no exponent. The value is scaled by
 * 10^decimals (decimals <= 6) and must fit in an int64. 0, or -1. */
static int hs_parse_count(const char *s, size_t len, int decimals, int64_t *v)
{
    size_t i = 0;
    int64_t x = 0;
    if (len == 0 || s[0] < '0' || s[0] > '9')
        return -1;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        if (x > (INT64_MAX - 9) / 10)
            return -1;
        x = x * 10 + (s[i] - '0');
    }
    int d = 0;
    if (i < len && s[i] == '.') {
        for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
            if (d == decimals)
                continue; /* beyond the scale: dropped (at most 6 are kept) */
            if (x > (INT64_MAX - 9) / 10)
                return -1;
            x = x * 10 + (s[i] - '0');
            d++;
        }
    }
    if (i != len)
        return -1;
    for (; d < decimals; d++) {
        if (x > INT64_MAX / 10)
            return -1;
        x *= 10;
    }
    *v = x;
    return 0;
}

/* The most digits after a "." in any line's count (capped at 6): the
 * import scales every count by 10^that, so fractional counts stay exact. */
static int hs_collapsed_decimals(const char *data, size_t len)
{
    int best = 0;
    for (size_t pos = 0; pos < len;) {
        const char *line = data + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t e = nl ? (size_t)(nl - line) : len - pos;
        pos += e + 1;
        while (e > 0 && (line[e - 1] == ' ' || line[e - 1] == '\t' || line[e - 1] == '\r'))
            e--;
        size_t vs = e;
        while (vs > 0 && line[vs - 1] != ' ' && line[vs - 1] != '\t')
            vs--;
        const char *dot = memchr(line + vs, '.', e - vs);
        if (dot) {
            int d = (int)(line + e - dot - 1);
            if (d > best)
                best = d > 6 ? 6 : d;
        }
    }
    return best;
}

/* The unit of an imported collapsed profile with d decimals (0..6). */
static const char *const hs_collapsed_units[] = {"count",       "count/10",     "count/100",
                                                 "count/1000",  "count/10000",  "count/100000",
                                                 "count/1000000"};
#define HS_COLLAPSED_FRACTION_COMMENT "fractional counts: values are counts times 10^decimals (see the unit)"

/* The decimals of p if it is shaped as hs_import_collapsed makes profiles
 * (one sample type "samples" in one of hs_collapsed_units), else -1. */
static int hs_collapsed_profile_decimals(const hs_profile *p)
{
    if (p->n_sample_types != 1 || strcmp(hs_profile_string(p, p->sample_types[0].type), "samples") != 0)
        return -1;
    const char *unit = hs_profile_string(p, p->sample_types[0].unit);
    for (int d = 0; d < (int)(sizeof hs_collapsed_units / sizeof hs_collapsed_units[0]); d++)
        if (strcmp(unit, hs_collapsed_units[d]) == 0)
            return d;
    return -1;
}

int hs_collapsed_align(hs_profile *const *ps, size_t n, char *err, size_t errlen)
{
    int most = -1, fewest = 7;
    for (size_t i = 0; i < n; i++) {
        int d = hs_collapsed_profile_decimals(ps[i]);
        if (d < 0)
            return 0; /* not all collapsed imports: nothing to align */
        most = d > most ? d : most;
        fewest = d < fewest ? d : fewest;
    }
    if (n < 2 || most == fewest)
        return 0;
    for (size_t i = 0; i < n; i++) {
        hs_profile *p = ps[i];
        int d = hs_collapsed_profile_decimals(p);
        int64_t scale = 1;
        for (int k = d; k < most; k++)
            scale *= 10;
        if (scale == 1)
            continue;
        for (size_t s = 0; s < p->n_samples; s++) {
            int64_t *v = &p->samples[s].values[0];
            if (*v > INT64_MAX / scale || *v < INT64_MIN / scale) {
                snprintf(err, errlen, "counts too large to compare with a file of %d decimals", most);
                return -1;
            }
            *v *= scale;
        }
        int64_t unit = hs_profile_str(p, hs_collapsed_units[most]);
        if (unit < 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        p->sample_types[0].unit = p->period_type.unit = unit;
        if (d == 0)
            hs_profile_add_comment(p, HS_COLLAPSED_FRACTION_COMMENT);
    }
    return 0;
}

hs_profile *hs_import_collapsed(const char *data, size_t len, char *err, size_t errlen)
{
    hs_profile *p = hs_profile_new();
    hs_frame_cache c = {.names = hs_strtab_new()};
    uint64_t *ids = NULL;
    size_t ids_cap = 0, lineno = 0, n_stacks = 0;
    if (!p || !c.names)
        goto oom;
    /* Fractional counts (flamegraph.pl takes them) are kept exact by scaling:
     * 1.5 with 3 decimals is 1500 "samples/1000". */
    int decimals = hs_collapsed_decimals(data, len);
    if (hs_profile_add_sample_type(p, "samples", hs_collapsed_units[decimals]) < 0)
        goto oom;
    hs_profile_set_period(p, "samples", hs_collapsed_units[decimals], 1);
    if (decimals)
        hs_profile_add_comment(p, HS_COLLAPSED_FRACTION_COMMENT);

    size_t pos = 0;
    while (pos < len) {
        const char *line = data + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - line) : len - pos;
        pos += ll + (nl ? 1 : 0);
        lineno++;
        if (ll && line[ll - 1] == '\r')
            ll--;
        if (memchr(line, '\0', ll)) {
            snprintf(err, errlen, "collapsed line %zu: NUL byte (binary input?)", lineno);
            goto fail;
        }
        size_t a = 0;
        while (a < ll && (line[a] == ' ' || line[a] == '\t'))
            a++;
        if (a == ll || line[a] == '#')
            continue; /* blank or comment */
        /* The value is the last space-separated token; frames may have spaces. */
        size_t e = ll;
        while (e > a && (line[e - 1] == ' ' || line[e - 1] == '\t'))
            e--;
        size_t vs = e;
        while (vs > a && line[vs - 1] != ' ' && line[vs - 1] != '\t')
            vs--;
        int64_t value;
        if (vs == a || hs_parse_count(line + vs, e - vs, decimals, &value) != 0) {
            if (vs > a && line[vs] == '-')
                snprintf(err, errlen, "collapsed line %zu: negative count %.*s (counts are >= 0, as flamegraph.pl's)",
                         lineno, (int)(e - vs), line + vs);
            else
                snprintf(err, errlen,
                         "collapsed line %zu: expected \"frame;frame;... COUNT\" (COUNT: digits, optionally "
                         "with a fraction, as flamegraph.pl reads)",
                         lineno);
            goto fail;
        }
        size_t se = vs;
        while (se > a && (line[se - 1] == ' ' || line[se - 1] == '\t'))
            se--;
        /* Split frames on ';' (root first); the profile wants leaf first. */
        size_t n = 0;
        for (size_t f = a; f <= se;) {
            const char *semi = memchr(line + f, ';', se - f);
            size_t fe = semi ? (size_t)(semi - line) : se;
            if (fe > f) {
                if (HS_VEC_RESERVE(ids, ids_cap, n + 1))
                    goto oom;
                uint64_t loc = hs_frame_location(p, &c, line + f, fe - f);
                if (!loc)
                    goto oom;
                ids[n++] = loc;
            }
            f = fe + 1;
        }
        if (n == 0) {
            snprintf(err, errlen, "collapsed line %zu: empty stack", lineno);
            goto fail;
        }
        for (size_t i = 0; i < n / 2; i++) {
            uint64_t tmp = ids[i];
            ids[i] = ids[n - 1 - i];
            ids[n - 1 - i] = tmp;
        }
        if (hs_profile_add_sample(p, ids, n, &value, NULL, 0) != 0)
            goto oom;
        n_stacks++;
    }
    if (n_stacks == 0) {
        snprintf(err, errlen, "no stacks in collapsed input");
        goto fail;
    }
    free(ids);
    free(c.loc);
    hs_strtab_delete(c.names);
    return p;
oom:
    snprintf(err, errlen, "out of memory reading collapsed stacks");
fail:
    free(ids);
    free(c.loc);
    hs_strtab_delete(c.names);
    hs_profile_free(p);
    return NULL;
}
