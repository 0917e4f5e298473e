/* perfscript.c — import `perf script` text into a profile, and guess the
 * format of an input file (pprof, collapsed stacks or perf script).
 *
 * perf script prints, per sample, a header line
 *     comm  pid[/tid] [cpu] time: [period] event[:modifiers]:
 * then one indented line per frame, leaf first,
 *     addr symbol+0xoff (dso)        or   addr [unknown] (dso)
 * (optionally followed by an indented "file.c:123" srcline) and a blank
 * line. Each distinct dso becomes a mapping, each (dso, address) a location
 * and each (symbol, dso) a function; unknown symbols are named "[dso]" as
 * FlameGraph's stackcollapse-perf does. Identical samples (same stack, pid,
 * tid, comm) are summed. Sample types: samples/count, plus one column per
 * event when perf printed periods (cpu-clock/task-clock in nanoseconds).
 * Any header field may be missing (perf script -F): fields are told apart
 * by their shape (hs_parse_header); a sample may be one line (no call
 * chain); side-band records (--show-mmap-events) give perfsym.c the
 * mappings with which frames perf printed no file:line for are symbolized
 * from the local binaries (hs_ps_symbolize). What cannot be read is refused
 * with its line number.
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/export.h"
#include "report/perfsym.h"
#include "report/stacks.h"
#include "base/vec.h"

#define HS_PS_MAX_EVENTS 16

typedef struct {
    const char *s;
    size_t n;
} hs_span;

typedef struct {
    hs_span comm;
    int64_t pid, tid;
    int64_t time_ns; /* -1 when absent */
    int64_t period;  /* -1 when absent */
    hs_span event;
    hs_span rest; /* after the event: a one-line sample's frame, or a tracepoint's fields */
} hs_ps_header;

static int hs_is_space(char c)
{
    return c == ' ' || c == '\t';
}

static int hs_is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int hs_all_digits(const char *s, size_t n)
{
    if (!n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

static int64_t hs_span_i64(const char *s, size_t n)
{
    int64_t v = 0;
    for (size_t i = 0; i < n && i < 18; i++)
        v = v * 10 + (s[i] - '0');
    return v;
}

/* "467.687244:" -> nanoseconds; -1 if the token is not a time. */
static int64_t hs_parse_time(const char *s, size_t n)
{
    if (n < 2 || s[n - 1] != ':')
        return -1;
    n--;
    const char *dot = memchr(s, '.', n);
    size_t ip = dot ? (size_t)(dot - s) : n;
    if (!hs_all_digits(s, ip) || ip > 11)
        return -1;
    int64_t ns = hs_span_i64(s, ip) * 1000000000LL;
    if (dot) {
        size_t fl = n - ip - 1;
        if (!hs_all_digits(dot + 1, fl))
            return -1;
        int64_t frac = 0, scale = 100000000LL;
        for (size_t i = 0; i < fl && scale; i++, scale /= 10)
            frac += (dot[1 + i] - '0') * scale;
        ns += frac;
    }
    return ns;
}

/* "2012" or "2012/2013": a pid[/tid] token. */
static int hs_pid_token(const hs_span *t, int64_t *pid, int64_t *tid)
{
    const char *slash = memchr(t->s, '/', t->n);
    size_t pl = slash ? (size_t)(slash - t->s) : t->n;
    if (!hs_all_digits(t->s, pl) || pl > 18 ||
        (slash && (!hs_all_digits(slash + 1, t->n - pl - 1) || t->n - pl - 1 > 18)))
        return 0;
    *pid = hs_span_i64(t->s, pl);
    *tid = slash ? hs_span_i64(slash + 1, t->n - pl - 1) : *pid;
    return 1;
}

static int hs_cpu_token(const hs_span *t)
{
    return t->n > 2 && t->s[0] == '[' && t->s[t->n - 1] == ']';
}

/* An event token ends with ':' and is not a number: "cycles:", "cpu-clock:ppp:",
 * "sched:sched_switch:". */
static int hs_event_token(const hs_span *t)
{
    return t->n >= 2 && t->s[t->n - 1] == ':' && !hs_all_digits(t->s, t->n - 1) &&
           hs_parse_time(t->s, t->n) < 0;
}

/* The event's name: without the last ':' and without modifiers such as
 * ":ppp" or ":u" ("sched:sched_switch" keeps its colon). */
static hs_span hs_event_name(const hs_span *t)
{
    hs_span e = {t->s, t->n - 1};
    const char *colon = NULL;
    for (size_t i = e.n; i > 0; i--)
        if (e.s[i - 1] == ':') {
            colon = e.s + i - 1;
            break;
        }
    if (colon && colon > e.s) {
        size_t k = (size_t)(colon - e.s) + 1;
        if (k < e.n && strspn(e.s + k, "ukhIGHpPSDWe") == e.n - k)
            e.n = (size_t)(colon - e.s);
    }
    return e;
}

/* Split a header line into tokens and pick out the fields, in the layouts
 * perf script prints and stackcollapse-perf.pl reads (any of them may be
 * missing, as -F leaves them out):
 *     comm... pid[/tid] [cpu] time: [period] event[:modifiers]: [rest]
 * Without a time, a number between pid/tid and the event is the period,
 * and a lone number after comm is the pid/tid (as stackcollapse-perf reads
 * it). rest is what follows the event: the frame of a sample printed on one
 * line (no call chain), or a tracepoint's fields. 0 on success. */
static int hs_parse_header(const char *line, size_t len, hs_ps_header *h)
{
    hs_span tok[64];
    size_t nt = 0;
    for (size_t i = 0; i < len && nt < 64;) {
        while (i < len && hs_is_space(line[i]))
            i++;
        if (i == len)
            break;
        size_t b = i;
        while (i < len && !hs_is_space(line[i]))
            i++;
        tok[nt].s = line + b;
        tok[nt].n = i - b;
        nt++;
    }
    memset(h, 0, sizeof *h);
    h->time_ns = h->period = -1;
    if (nt == 0)
        return -1;
    size_t ti = nt, ei = nt;
    for (size_t i = 0; i < nt; i++)
        if ((h->time_ns = hs_parse_time(tok[i].s, tok[i].n)) >= 0) {
            ti = i;
            break;
        }
    if (ti == nt)
        h->time_ns = -1;
    size_t j = ti < nt ? ti + 1 : 1;
    if (ti < nt && j < nt && hs_all_digits(tok[j].s, tok[j].n)) { /* period after the time */
        h->period = tok[j].n <= 18 ? hs_span_i64(tok[j].s, tok[j].n) : -1;
        j++;
    }
    for (size_t i = j; i < nt; i++)
        if (hs_event_token(&tok[i])) {
            ei = i;
            break;
        }
    if (ti < nt && ei != nt && ei != j)
        ei = nt; /* after the time only a period may come before the event */
    /* Before the time (or the event): comm..., pid[/tid], [cpu], and
     * without a time, a period. */
    size_t k = ti < nt ? ti : ei;
    int64_t pid, tid;
    if (ti == nt && k >= 2 && hs_all_digits(tok[k - 1].s, tok[k - 1].n) && tok[k - 1].n <= 18) {
        size_t q = k - 2;
        if (hs_cpu_token(&tok[q]) && q > 0)
            q--;
        if (hs_pid_token(&tok[q], &pid, &tid)) {
            h->period = hs_span_i64(tok[k - 1].s, tok[k - 1].n);
            k--;
        }
    }
    if (k > 0 && hs_cpu_token(&tok[k - 1]))
        k--;
    if (k > 0 && hs_pid_token(&tok[k - 1], &pid, &tid)) {
        h->pid = pid;
        h->tid = tid;
        k--;
    }
    if (k > 0) {
        h->comm.s = tok[0].s;
        h->comm.n = (size_t)(tok[k - 1].s + tok[k - 1].n - tok[0].s);
    } else {
        h->comm.s = "";
    }
    if (ei < nt) {
        h->event = hs_event_name(&tok[ei]);
        if (ei + 1 < nt) {
            h->rest.s = tok[ei + 1].s;
            h->rest.n = (size_t)(line + len - tok[ei + 1].s);
        }
    }
    if (h->event.n == 0) {
        /* no event name: the period (if any) is of an unnamed event */
        h->event.s = h->period >= 0 ? "period" : "samples";
        h->event.n = strlen(h->event.s);
    }
    return 0;
}

typedef struct {
    uint64_t addr;
    hs_span sym; /* without +0xoff; may be "[unknown]" */
    hs_span dso; /* without parentheses */
} hs_ps_frame;

/* "   addr sym+0xoff (dso)"; 0 on success, -1 if the line is not a frame. */
static int hs_parse_frame(const char *line, size_t len, hs_ps_frame *f)
{
    size_t i = 0;
    while (i < len && hs_is_space(line[i]))
        i++;
    size_t b = i;
    while (i < len && hs_is_hex(line[i]))
        i++;
    if (i == b || i - b > 16 || (i < len && !hs_is_space(line[i])))
        return -1;
    f->addr = 0;
    for (size_t k = b; k < i; k++) {
        char c = line[k];
        f->addr = f->addr * 16 + (uint64_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    while (i < len && hs_is_space(line[i]))
        i++;
    size_t e = len;
    while (e > i && hs_is_space(line[e - 1]))
        e--;
    f->dso.s = "";
    f->dso.n = 0;
    if (e > i && line[e - 1] == ')') { /* the last parenthesized group */
        size_t depth = 0, k = e;
        while (k > i) {
            k--;
            if (line[k] == ')')
                depth++;
            else if (line[k] == '(' && --depth == 0)
                break;
        }
        if (depth == 0 && line[k] == '(' && (k == i || hs_is_space(line[k - 1]))) {
            f->dso.s = line + k + 1;
            f->dso.n = e - k - 2;
            e = k;
            while (e > i && hs_is_space(line[e - 1]))
                e--;
        }
    }
    /* strip "+0x1f" */
    size_t se = e;
    while (se > i && hs_is_hex(line[se - 1]))
        se--;
    if (se >= i + 3 && se < e && line[se - 1] == 'x' && line[se - 2] == '0' && line[se - 3] == '+')
        e = se - 3;
    f->sym.s = line + i;
    f->sym.n = e - i;
    return 0;
}

/* A location as perf printed it, for symbolizing it afterwards. */
typedef struct {
    uint64_t id;
    uint64_t addr;
    int64_t pid;    /* of the first sample it was seen in */
    uint32_t dso;   /* strtab id of the dso */
    bool caller;    /* seen above the leaf: addr is a return address */
    bool unknown;   /* perf printed [unknown] for it */
} hs_ps_loc;

typedef struct {
    hs_profile *p;
    hs_strtab *keys; /* interned dso / function keys */
    uint64_t *mapping_of; /* strtab id -> mapping id */
    uint64_t *function_of; /* strtab id -> function id */
    size_t n_of;
    hs_map locs; /* (mapping, addr) -> index in locs_of */
    hs_ps_loc *locs_of;
    size_t loc_cap, n_locs;
    hs_psym *sym; /* symbolizes frames from the local binaries */
    hs_map samples; /* (stack hash, label hash) -> sample index */
    size_t *sample_of;
    size_t sample_cap;
} hs_ps;

static int hs_ps_grow_of(hs_ps *ps, uint32_t id)
{
    size_t cap_m = ps->n_of, cap_f = ps->n_of; /* side by side: one capacity */
    if (HS_VEC_RESERVE_ZEROED(ps->mapping_of, cap_m, (size_t)id + 1) ||
        HS_VEC_RESERVE_ZEROED(ps->function_of, cap_f, (size_t)id + 1))
        return -1;
    ps->n_of = cap_m;
    return 0;
}

/* The mapping of a dso (created on first sight); 0 on out of memory. */
static uint64_t hs_ps_mapping(hs_ps *ps, hs_span dso, const char **name)
{
    uint32_t did = hs_strtab_intern_len(ps->keys, dso.s, dso.n);
    if (did == UINT32_MAX || hs_ps_grow_of(ps, did) != 0)
        return 0;
    *name = hs_strtab_get(ps->keys, did);
    if (!ps->mapping_of[did])
        ps->mapping_of[did] = hs_profile_add_mapping(ps->p, 0, 0, 0, *name, "");
    return ps->mapping_of[did];
}

/* The location of a frame of process pid (caller: not the leaf). */
static uint64_t hs_ps_location(hs_ps *ps, const hs_ps_frame *fr, int64_t pid, bool caller)
{
    char name[4096];
    const char *dso;
    uint64_t mid = hs_ps_mapping(ps, fr->dso, &dso);
    if (!mid)
        return 0;
    int is_new;
    uint32_t li = hs_map_get(&ps->locs, mid, fr->addr, &is_new);
    if (li == UINT32_MAX)
        return 0;
    if (!is_new) {
        ps->locs_of[li].caller |= caller;
        return ps->locs_of[li].id;
    }
    if (HS_VEC_RESERVE(ps->locs_of, ps->loc_cap, (size_t)li + 1))
        return 0;
    /* Function key: "sym\0dso" so equal names in different dsos differ. */
    size_t sn = fr->sym.n;
    /* no symbol: "[unknown]", or none at all (perf script -F ip,dso) */
    bool unknown = sn == 0 || (sn == 9 && memcmp(fr->sym.s, "[unknown]", 9) == 0);
    if (unknown) {
        const char *base = strrchr(dso, '/');
        base = base ? base + 1 : dso;
        if (*base == '[') /* [kernel.kallsyms], [unknown], [vdso] */
            snprintf(name, sizeof name, "%s", base);
        else
            snprintf(name, sizeof name, "[%s]", *base ? base : "unknown");
    } else {
        if (sn >= sizeof name)
            sn = sizeof name - 1;
        memcpy(name, fr->sym.s, sn);
        name[sn] = '\0';
    }
    uint64_t fn = hs_profile_add_function(ps->p, name, name, "", 0);
    if (!fn)
        return 0;
    hs_line line = {.function_id = fn, .line = 0, .column = 0};
    uint64_t id = hs_profile_add_location(ps->p, mid, fr->addr, &line, 1);
    ps->locs_of[li] = (hs_ps_loc){.id = id, .addr = fr->addr, .pid = pid,
                                  .dso = hs_strtab_intern_len(ps->keys, fr->dso.s, fr->dso.n),
                                  .caller = caller, .unknown = unknown};
    if (li >= ps->n_locs)
        ps->n_locs = li + 1;
    return id;
}

/* Give the locations perf printed no file:line for (no -F +srcline) their
 * function, file:line and inline chain from the local binaries
 * (perfsym.h): all of an [unknown] frame, and of a named one when the
 * binary names it as perf did (so a rebuilt binary does not lend its
 * lines to an old profile). Returns how many, or -1 on OOM. */
static long hs_ps_symbolize(hs_ps *ps)
{
    long done = 0;
    hs_frame fr[16];
    hs_line lines[16];
    for (size_t i = 0; i < ps->n_locs; i++) {
        const hs_ps_loc *pl = &ps->locs_of[i];
        const hs_location *l = hs_profile_location(ps->p, pl->id);
        if (!l || l->n_lines != 1 || l->lines[0].line != 0)
            continue;
        const char *dso = hs_strtab_get(ps->keys, pl->dso);
        int n = dso && dso[0] == '/' ? hs_psym_lookup(ps->sym, pl->pid, dso, pl->addr,
                                                      !pl->caller, fr, 16)
                                     : 0;
        if (n <= 0)
            continue;
        if (!pl->unknown) {
            const hs_function *f = hs_profile_function(ps->p, l->lines[0].function_id);
            const char *perf_name = f ? hs_profile_string(ps->p, f->name) : "";
            if (strcmp(perf_name, fr[n - 1].function) != 0 &&
                strcmp(perf_name, fr[n - 1].system_name) != 0)
                continue;
        }
        for (int k = 0; k < n; k++) {
            const char *name = *fr[k].function ? fr[k].function : fr[k].system_name;
            uint64_t fid = hs_profile_add_function(ps->p, name, fr[k].system_name, fr[k].file,
                                                   fr[k].start_line);
            if (!fid)
                return -1;
            lines[k] = (hs_line){.function_id = fid, .line = fr[k].line, .column = 0};
        }
        if (hs_profile_set_location_lines(ps->p, pl->id, lines, (size_t)n) != 0)
            return -1;
        done++;
    }
    return done;
}

/* Give location id the file and line of a srcline, the first time one is
 * seen for it (perf prints the same srcline for the same address). */
static int hs_ps_srcline(hs_ps *ps, uint64_t id, const char *file, size_t fn, int64_t line)
{
    const hs_location *l = hs_profile_location(ps->p, id);
    if (!l || l->n_lines != 1 || l->lines[0].line != 0 || line <= 0 ||
        (fn == 2 && memcmp(file, "??", 2) == 0))
        return 0;
    const hs_function *f = hs_profile_function(ps->p, l->lines[0].function_id);
    if (!f)
        return 0;
    char path[4096];
    snprintf(path, sizeof path, "%.*s", (int)(fn < sizeof path ? fn : sizeof path - 1), file);
    char name[4096];
    snprintf(name, sizeof name, "%s", hs_profile_string(ps->p, f->name));
    uint64_t nf = hs_profile_add_function(ps->p, name, name, path, 0);
    if (!nf)
        return -1;
    hs_line ln = {.function_id = nf, .line = line, .column = 0};
    return hs_profile_set_location_lines(ps->p, id, &ln, 1) == 0 ? 0 : -1;
}

typedef struct {
    char event[128];
    bool nanoseconds;
} hs_ps_event;

static int hs_ps_event_index(hs_ps_event *ev, size_t *n_ev, hs_span e)
{
    for (size_t i = 0; i < *n_ev; i++)
        if (strlen(ev[i].event) == e.n && memcmp(ev[i].event, e.s, e.n) == 0)
            return (int)i;
    if (*n_ev == HS_PS_MAX_EVENTS)
        return -1;
    size_t n = e.n < sizeof ev->event ? e.n : sizeof ev->event - 1;
    memcpy(ev[*n_ev].event, e.s, n);
    ev[*n_ev].event[n] = '\0';
    ev[*n_ev].nanoseconds =
        strcmp(ev[*n_ev].event, "cpu-clock") == 0 || strcmp(ev[*n_ev].event, "task-clock") == 0;
    return (int)(*n_ev)++;
}

/* Iterate lines: returns the line and its length (without \n or \r\n). */
static const char *hs_next_line(const char *data, size_t len, size_t *pos, size_t *ll)
{
    if (*pos >= len)
        return NULL;
    const char *line = data + *pos;
    const char *nl = memchr(line, '\n', len - *pos);
    *ll = nl ? (size_t)(nl - line) : len - *pos;
    *pos += *ll + (nl ? 1 : 0);
    if (*ll && line[*ll - 1] == '\r')
        (*ll)--;
    return line;
}

enum { HS_L_BLANK, HS_L_COMMENT, HS_L_SIDEBAND, HS_L_HEADER, HS_L_FRAME, HS_L_OTHER };

/* Does the line hold a "123.456789:" time token? */
static int hs_has_time(const char *line, size_t ll)
{
    for (size_t i = 0; i < ll;) {
        while (i < ll && hs_is_space(line[i]))
            i++;
        size_t b = i;
        while (i < ll && !hs_is_space(line[i]))
            i++;
        if (i > b && hs_parse_time(line + b, i - b) >= 0)
            return 1;
    }
    return 0;
}

/* What a line is (fr: the frame parsed, or NULL to tell only the kind). A
 * sample header is an unindented line; or, as perf pads
 * comm on the left, an indented one that is not a frame and ends with ':'
 * (the event) or holds a time, or is the first line of a block (after a
 * blank line: `-F comm,ip,sym` headers are the comm alone). Side-band
 * records (PERF_RECORD_MMAP2 ... of --show-mmap-events, COMM, FORK, EXIT)
 * are not samples. */
static int hs_line_kind(const char *line, size_t ll, bool block_start, hs_ps_frame *fr)
{
    size_t a = 0, e = ll;
    while (a < ll && hs_is_space(line[a]))
        a++;
    if (a == ll)
        return HS_L_BLANK;
    if (line[a] == '#')
        return HS_L_COMMENT;
    while (e > a && hs_is_space(line[e - 1]))
        e--;
    /* " 2012  250000 cpu-clock:" (-F tid,period,event) and " 2012 9864.974652:
     * 1 cycles: 55d8 main" (-F tid,time,...) start like frames */
    bool colon_end = line[e - 1] == ':';
    if (a > 0 && !colon_end) {
        bool frame;
        if (fr) {
            frame = hs_parse_frame(line, ll, fr) == 0 &&
                    !(memchr(fr->sym.s, ':', fr->sym.n) && hs_has_time(line, ll));
        } else { /* only the kind: the address and a space start a frame */
            size_t h = a;
            while (h < ll && hs_is_hex(line[h]))
                h++;
            frame = h > a && h - a <= 16 && (h == ll || hs_is_space(line[h])) &&
                    !(memchr(line + h, ':', ll - h) && hs_has_time(line, ll));
        }
        if (frame)
            return HS_L_FRAME;
    }
    if ((ll - a >= 12 && memcmp(line + a, "PERF_RECORD_", 12) == 0) ||
        memmem(line, ll, " PERF_RECORD_", 13))
        return HS_L_SIDEBAND;
    if (a == 0 || block_start || colon_end || hs_has_time(line, ll))
        return HS_L_HEADER;
    return HS_L_OTHER;
}

static uint64_t hs_hash_span(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* What pass 2 needs besides hs_ps: the events, the label keys, the
 * sample being read. */
typedef struct {
    hs_ps_event ev[HS_PS_MAX_EVENTS];
    size_t n_ev, n_types;
    bool periods;
    int64_t *values;
    int64_t k_pid, k_tid, k_comm;
    int64_t t_min, t_max;
    uint64_t *stack;
    size_t n, cap;
} hs_ps_run;

static int hs_ps_push(hs_ps *ps, hs_ps_run *r, const hs_ps_frame *fr, int64_t pid)
{
    if (HS_VEC_RESERVE(r->stack, r->cap, r->n + 1))
        return -1;
    bool caller = r->n > 0; /* perf prints the leaf first */
    return (r->stack[r->n++] = hs_ps_location(ps, fr, pid, caller)) ? 0 : -1;
}

/* Add the sample read (summed into an identical one). 0, or -1 on OOM. */
static int hs_ps_finish(hs_ps *ps, hs_ps_run *r, const hs_ps_header *h)
{
    size_t n = r->n;
    uint64_t *stack = r->stack;
    if (h->time_ns >= 0) {
        r->t_min = h->time_ns < r->t_min ? h->time_ns : r->t_min;
        r->t_max = h->time_ns > r->t_max ? h->time_ns : r->t_max;
    }
    int ei = hs_ps_event_index(r->ev, &r->n_ev, h->event);
    memset(r->values, 0, r->n_types * sizeof *r->values);
    r->values[0] = 1;
    if (r->periods && ei >= 0)
        r->values[1 + ei] = h->period >= 0 ? h->period : 0;
    /* Sum identical samples. */
    uint64_t hs = hs_hash_span(1469598103934665603ULL, stack, n * sizeof *stack);
    uint64_t hl = hs_hash_span(hs_hash_span(1469598103934665603ULL, &h->pid, 8), &h->tid, 8);
    hl = hs_hash_span(hl, h->comm.s, h->comm.n);
    int is_new;
    uint32_t si = hs_map_get(&ps->samples, hs ^ (uint64_t)n, hl, &is_new);
    if (si == UINT32_MAX)
        return -1;
    if (!is_new) {
        hs_sample *s = &ps->p->samples[ps->sample_of[si]];
        /* A hash collision (vanishingly rare) would merge two samples;
         * check the stack to stay exact. */
        if (s->n_locations == n && memcmp(s->location_ids, stack, n * sizeof *stack) == 0) {
            for (size_t i = 0; i < r->n_types; i++)
                s->values[i] = hs_sat_add(s->values[i], r->values[i]);
            return 0;
        }
    }
    if (HS_VEC_RESERVE(ps->sample_of, ps->sample_cap, (size_t)si + 1))
        return -1;
    char comm[256];
    size_t cn = h->comm.n < sizeof comm ? h->comm.n : sizeof comm - 1;
    memcpy(comm, h->comm.s, cn);
    comm[cn] = '\0';
    hs_label labels[3] = {
        {.key = r->k_pid, .num = h->pid},
        {.key = r->k_tid, .num = h->tid},
        {.key = r->k_comm, .str = hs_profile_str(ps->p, comm)},
    };
    if (is_new)
        ps->sample_of[si] = ps->p->n_samples;
    return hs_profile_add_sample(ps->p, stack, n, r->values, labels, cn ? 3 : 2);
}

/* A line under a frame that is not one: perf script -F +srcline's
 * "file.c:12" gives the frame's location its file and line (for list);
 * "??:0" and "dso[addr]" (no debug info) say nothing. 1 when it was a
 * srcline, 0 when not, -1 on OOM. */
static int hs_ps_srcline_line(hs_ps *ps, hs_ps_run *r, const char *line, size_t ll)
{
    size_t a = 0, e = ll;
    while (a < ll && hs_is_space(line[a]))
        a++;
    while (e > a && hs_is_space(line[e - 1]))
        e--;
    if (r->n == 0 || e == a)
        return 0;
    const char *colon = NULL;
    for (const char *q = line + e; q > line + a; q--)
        if (q[-1] == ':') {
            colon = q - 1;
            break;
        }
    if (colon && colon + 1 < line + e && hs_all_digits(colon + 1, (size_t)(line + e - colon - 1)))
        return hs_ps_srcline(ps, r->stack[r->n - 1], line + a, (size_t)(colon - line - a),
                             hs_span_i64(colon + 1, (size_t)(line + e - colon - 1))) != 0
                   ? -1
                   : 1;
    return line[e - 1] == ']' && memchr(line + a, '[', e - a) ? 1 : 0;
}

hs_profile *hs_import_perf_script(const char *data, size_t len, char *err, size_t errlen)
{
    hs_ps ps = {0};
    hs_ps_run r = {.t_min = INT64_MAX, .t_max = -1};
    size_t pos = 0, ll, lineno = 0;
    const char *line;

    if (memchr(data, '\0', len)) {
        snprintf(err, errlen, "perf script input contains NUL bytes (binary perf.data? run "
                              "`perf script` on it first)");
        return NULL;
    }
    /* Pass 1: events, whether periods are printed, and the main binary: the
     * first dso named like the first sample's comm (perf truncates comm to
     * 15 characters), so that it becomes mapping 1 as pprof expects. */
    hs_span comm0 = {NULL, 0}, main_dso = {NULL, 0};
    bool block_start = true;
    size_t first_frame = 0; /* line of the first frame, when before any header */
    while ((line = hs_next_line(data, len, &pos, &ll))) {
        lineno++;
        hs_ps_frame fr;
        bool want_dso = !main_dso.s && comm0.n; /* frames are parsed until it is found */
        int kind = hs_line_kind(line, ll, block_start, want_dso ? &fr : NULL);
        if (kind == HS_L_FRAME && r.n_ev == 0 && !first_frame)
            first_frame = lineno;
        if (kind == HS_L_SIDEBAND && (ps.sym || (ps.sym = hs_psym_new())) &&
            hs_psym_mmap_line(ps.sym, line, ll) != 0) {
            snprintf(err, errlen, "out of memory reading perf script");
            hs_psym_free(ps.sym);
            return NULL;
        }
        block_start = kind == HS_L_BLANK || (block_start && kind == HS_L_COMMENT);
        hs_ps_header h;
        if (kind == HS_L_FRAME && want_dso) {
            size_t b = fr.dso.n;
            while (b > 0 && fr.dso.s[b - 1] != '/')
                b--;
            size_t cmp = comm0.n < 15 ? comm0.n : 15;
            if (fr.dso.n - b >= cmp && memcmp(fr.dso.s + b, comm0.s, cmp) == 0)
                main_dso = fr.dso;
        }
        if (kind != HS_L_HEADER || hs_parse_header(line, ll, &h) != 0)
            continue;
        if (!comm0.s)
            comm0 = h.comm;
        if (hs_ps_event_index(r.ev, &r.n_ev, h.event) < 0) {
            snprintf(err, errlen, "perf script: more than %d distinct events", HS_PS_MAX_EVENTS);
            return NULL;
        }
        if (h.period >= 0)
            r.periods = true;
    }
    if (first_frame) {
        snprintf(err, errlen,
                 "perf script line %zu: a stack frame outside a sample (no sample header "
                 "before it: perf script -F must print comm, tid, pid or time)",
                 first_frame);
        return NULL;
    }
    if (r.n_ev == 0) {
        snprintf(err, errlen, "no samples in perf script input");
        return NULL;
    }
    ps.p = hs_profile_new();
    ps.keys = hs_strtab_new();
    r.n_types = 1 + (r.periods ? r.n_ev : 0);
    r.values = calloc(r.n_types, sizeof *r.values);
    if (!ps.p || !ps.keys || !r.values || hs_map_init(&ps.locs) != 0 ||
        hs_map_init(&ps.samples) != 0)
        goto oom;
    if (hs_profile_add_sample_type(ps.p, "samples", "count") < 0)
        goto oom;
    for (size_t i = 0; r.periods && i < r.n_ev; i++)
        if (hs_profile_add_sample_type(ps.p, r.ev[i].event,
                                       r.ev[i].nanoseconds ? "nanoseconds" : "count") < 0)
            goto oom;
    if (r.periods) {
        ps.p->default_sample_type = hs_profile_str(ps.p, r.ev[0].event);
        hs_profile_set_period(ps.p, r.ev[0].event, r.ev[0].nanoseconds ? "nanoseconds" : "count",
                              1);
    } else {
        hs_profile_set_period(ps.p, "samples", "count", 1);
    }
    if (main_dso.s) {
        const char *name;
        if (!hs_ps_mapping(&ps, main_dso, &name))
            goto oom;
    }
    r.k_pid = hs_profile_str(ps.p, "pid");
    r.k_tid = hs_profile_str(ps.p, "tid");
    r.k_comm = hs_profile_str(ps.p, "comm");

    /* Pass 2: samples, line by line. */
    pos = 0;
    lineno = 0;
    block_start = true;
    bool in_sample = false, one_line = false;
    size_t header_line = 0;
    hs_ps_header h;
    hs_ps_frame one_frame;
    for (;;) {
        line = hs_next_line(data, len, &pos, &ll);
        lineno++;
        hs_ps_frame fr;
        int kind = line ? hs_line_kind(line, ll, block_start, &fr) : HS_L_BLANK;
        if (kind == HS_L_COMMENT)
            continue;
        block_start = kind == HS_L_BLANK;
        if (in_sample && (kind == HS_L_BLANK || kind == HS_L_SIDEBAND || kind == HS_L_HEADER)) {
            if (r.n == 0 && one_line && hs_ps_push(&ps, &r, &one_frame, h.pid) != 0)
                goto oom;
            if (r.n == 0) {
                /* a header and no frame: perf record without -g, printed
                 * without ip/sym */
                snprintf(err, errlen,
                         "perf script line %zu: sample has no stack (record with -g, or use "
                         "`perf script -F +ip,+sym`)",
                         header_line);
                goto fail;
            }
            if (hs_ps_finish(&ps, &r, &h) != 0)
                goto oom;
            in_sample = false;
        }
        if (!line)
            break;
        switch (kind) {
        case HS_L_HEADER:
            if (hs_parse_header(line, ll, &h) != 0) {
                snprintf(err, errlen, "perf script line %zu: not a sample header", lineno);
                goto fail;
            }
            in_sample = true;
            header_line = lineno;
            r.n = 0;
            /* a sample printed on one line (no call chain): its frame
             * follows the event; when a call chain follows, what is there
             * is another field (-F +addr) */
            one_line = h.rest.n && hs_parse_frame(h.rest.s, h.rest.n, &one_frame) == 0;
            break;
        case HS_L_FRAME:
            if (!in_sample) {
                snprintf(err, errlen,
                         "perf script line %zu: a stack frame outside a sample (no sample header "
                         "before it: perf script -F must print comm, tid, pid or time)",
                         lineno);
                goto fail;
            }
            if (hs_ps_push(&ps, &r, &fr, h.pid) != 0)
                goto oom;
            break;
        case HS_L_OTHER: {
            int sr = in_sample ? hs_ps_srcline_line(&ps, &r, line, ll) : 0;
            if (sr < 0)
                goto oom;
            if (sr == 0) {
                snprintf(err, errlen,
                         "perf script line %zu: expected a sample header or \"ADDR SYMBOL "
                         "(DSO)\"",
                         lineno);
                goto fail;
            }
            break;
        }
        default: /* blank lines, side-band records */
            break;
        }
    }
    if (r.t_max >= 0) /* perf times are since boot, not wall clock: no time_nanos */
        ps.p->duration_nanos = r.t_max - r.t_min;
    hs_profile_add_comment(ps.p, "imported from perf script by hotspur");
    /* HOTSPUR_PERF_SYMBOLIZE=0: leave the frames as perf printed them */
    const char *want_sym = getenv("HOTSPUR_PERF_SYMBOLIZE");
    bool symbolize = !want_sym || strcmp(want_sym, "0") != 0;
    if (symbolize && !ps.sym && !(ps.sym = hs_psym_new()))
        goto oom;
    long nsym = symbolize ? hs_ps_symbolize(&ps) : 0;
    if (nsym < 0)
        goto oom;
    if (nsym > 0) {
        char note[160];
        snprintf(note, sizeof note, "%ld addresses symbolized by hotspur from the local binaries",
                 nsym);
        hs_profile_add_comment(ps.p, note);
    }
    if (hs_psym_build_id_mismatches(ps.sym)) {
        char note[160];
        snprintf(note, sizeof note,
                 "%zu local binaries not used: their build-id differs from perf's",
                 hs_psym_build_id_mismatches(ps.sym));
        hs_profile_add_comment(ps.p, note);
    }
    goto done;
oom:
    snprintf(err, errlen, "out of memory reading perf script");
fail:
    hs_profile_free(ps.p);
    ps.p = NULL;
done:
    free(r.values);
    free(r.stack);
    free(ps.mapping_of);
    free(ps.function_of);
    free(ps.locs_of);
    free(ps.sample_of);
    hs_psym_free(ps.sym);
    hs_map_free(&ps.locs);
    hs_map_free(&ps.samples);
    hs_strtab_delete(ps.keys);
    return ps.p;
}

/* ---------------------------------------------------------------- detect */

const char *hs_import_detect(const char *data, size_t len)
{
    if (len >= 2 && (unsigned char)data[0] == 0x1f && (unsigned char)data[1] == 0x8b)
        return "pprof";
    if (len == 0 || memchr(data, '\0', len < 4096 ? len : 4096))
        return len ? "pprof" : NULL;
    size_t pos = 0, ll;
    const char *line;
    int headers = 0, frames = 0, folded = 0, timed = 0;
    for (int i = 0; i < 64 && (line = hs_next_line(data, len, &pos, &ll)); i++) {
        size_t a = 0;
        while (a < ll && hs_is_space(line[a]))
            a++;
        if (a == ll || line[a] == '#')
            continue;
        hs_ps_frame fr;
        if (a > 0 && hs_parse_frame(line, ll, &fr) == 0)
            frames++;
        else {
            size_t e = ll;
            while (e > a && hs_is_space(line[e - 1]))
                e--;
            size_t vs = e;
            while (vs > a && !hs_is_space(line[vs - 1]))
                vs--;
            /* a count: digits, a fraction as flamegraph.pl takes, or a
             * negative number (refused by the importer with its line) */
            size_t ds = vs + (e - vs > 1 && line[vs] == '-');
            const char *dot = memchr(line + ds, '.', e - ds);
            size_t de = dot ? (size_t)(dot - line) : e;
            if (a == 0 && vs > 0 && de > ds && hs_all_digits(line + ds, de - ds) &&
                (!dot || de + 1 == e || hs_all_digits(dot + 1, e - de - 1)))
                folded++;
            else if (e > a && line[e - 1] == ':')
                headers++;
            else if (hs_has_time(line, ll) || memmem(line, ll, " PERF_RECORD_", 13))
                timed++; /* a sample on one line, a side-band record */
        }
    }
    /* collapsed stacks have no indented frame lines */
    if (frames || ((timed || headers) && !folded))
        return "perf-script";
    if (folded && !frames)
        return "collapsed";
    /* Text that is neither: let the pprof decoder say what is wrong. */
    return "pprof";
}
