/* cli_options.c — see cli_options.h. A layer over base/cmdline.h: the
 * option table is built per command (its extras, then the shared options
 * it does not shadow), and cli_take sorts each option hs_cmdline_parse
 * reads into -o, -n, the command's extras and the shared options. */
#include "cli/cli_options.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cmdline.h"
#include "base/units.h"
#include "cli/fetch.h"

#define HS_CLI_MAX_OPTS 96

int hs_cli_fail(const char *cmd, const char *what, const char *msg)
{
    char who[128];
    snprintf(who, sizeof who, "hotspur %s", cmd);
    return hs_cmdline_fail(who, what, msg);
}

int hs_cli_parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int hs_cli_parse_seconds(const char *s, double *out)
{
    int64_t ns;
    if (hs_parse_duration_ns(s, &ns) < 0 || ns <= 0)
        return -1;
    *out = ns / 1e9;
    return 0;
}

static volatile sig_atomic_t g_stop;
static void on_stop(int sig)
{
    (void)sig;
    g_stop = 1;
}

volatile sig_atomic_t *hs_cli_stop_on_signals(void)
{
    struct sigaction sa = {.sa_handler = on_stop};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    return &g_stop;
}

/* The group a shared option code belongs to. */
static unsigned group_of(int code)
{
    switch (code) {
    case HS_OPT_NODECOUNT:
    case HS_OPT_NODEFRACTION:
    case HS_OPT_EDGEFRACTION:
    case HS_OPT_CUM:
        return HS_CLI_TRIM;
    case HS_OPT_BASE:
    case HS_OPT_DIFF_BASE:
        return HS_CLI_BASE;
    case HS_OPT_NORMALIZE:
        return HS_CLI_NORMALIZE;
    case HS_OPT_SOURCE_PATH:
        return HS_CLI_SOURCE_PATH;
    default:
        return HS_CLI_FILTERS;
    }
}

/* Whether the spec's table holds the shared options: when it takes some,
 * or names them "does not apply". A command with none of them (serve,
 * record) leaves them out, so they neither shadow its abbreviations
 * (--f for --frequency) nor read as its options. */
static bool has_shared(const hs_cli_spec *s)
{
    return (s->takes & ~(unsigned)HS_CLI_OUTPUT) || s->does_not_apply;
}

/* The command's table: its extras, then the shared options whose names no
 * extra takes, then --output (when taken) and --help. -1 when too many. */
static int build_table(const hs_cli_spec *s, struct option *t)
{
    static const struct option shared[] = {HS_ANALYSIS_LONGOPTS};
    size_t n = 0;
    for (const hs_cli_extra *e = s->extras; e && e->name; e++) {
        if (n + 1 >= HS_CLI_MAX_OPTS)
            return -1;
        t[n++] = (struct option){e->name, e->has_arg, NULL, e->code};
    }
    size_t n_extras = n;
    for (size_t i = 0; has_shared(s) && i < sizeof shared / sizeof shared[0]; i++) {
        bool shadowed = false;
        for (size_t k = 0; k < n_extras; k++)
            shadowed |= strcmp(t[k].name, shared[i].name) == 0;
        if (!shadowed)
            t[n++] = shared[i];
    }
    if (n + 3 > HS_CLI_MAX_OPTS)
        return -1;
    if (s->takes & HS_CLI_OUTPUT)
        t[n++] = (struct option){"output", required_argument, NULL, 'o'};
    t[n++] = (struct option){"help", no_argument, NULL, 'h'};
    t[n] = (struct option){NULL, 0, NULL, 0};
    return 0;
}

/* pprof's output-format flags (-tags, -svg, ...) are hotspur commands:
 * the command to name when one is given as an option, or NULL. */
static const char *pprof_report_command(const char *name, size_t len)
{
    static const char *const map[][2] = {
        {"top", "hotspur top"},       {"text", "hotspur top"},
        {"peek", "hotspur peek"},     {"tree", "hotspur tree"},
        {"traces", "hotspur traces"}, {"tags", "hotspur tags"},
        {"disasm", "hotspur disasm"}, {"raw", "hotspur raw"},
        {"list", "hotspur list"},     {"weblist", "hotspur list"},
        {"dot", "hotspur graph"},     {"svg", "hotspur graph -o FILE.svg"},
        {"png", "hotspur graph -o FILE.png"}, {"pdf", "hotspur graph -o FILE.pdf"},
        {"gif", "hotspur graph -o FILE.gif"}, {"ps", "hotspur graph -o FILE.ps"},
        {"callgrind", "hotspur convert --to callgrind"},
        {"kcachegrind", "hotspur convert --to callgrind"},
        {"proto", "hotspur convert --to pprof"},
        {"web", "hotspur graph -o FILE.svg"}, {"http", "hotspur web"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strlen(map[i][0]) == len && strncmp(map[i][0], name, len) == 0)
            return map[i][1];
    return NULL;
}

/* A message for an option word that is none of t's names but one of
 * pprof's report flags (-tags, -svg, ...), which getopt could otherwise
 * take for an abbreviation of ours (--tags for --tagshow, then "missing
 * arguments"), or 0. */
static int pprof_report_flag(const char *word, const struct option *t, char *msg, size_t msglen)
{
    const char *name = word + (word[1] == '-' ? 2 : 1);
    size_t len = strcspn(name, "=");
    const char *report = pprof_report_command(name, len);
    if (!report)
        return 0;
    for (const struct option *o = t; o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
            return 0;
    snprintf(msg, msglen, "unknown option '%s': pprof's -%.*s report is `%s` (see hotspur --help)", word,
             (int)len, name, report);
    return 1;
}

/* Whether text names option --name (not only a longer one: --data is not
 * named by --data-dir). */
static bool names_option(const char *text, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = text; (p = strstr(p, "--")); p += 2)
        if (strncmp(p + 2, name, len) == 0 &&
            !(isalnum((unsigned char)p[2 + len]) || p[2 + len] == '-' || p[2 + len] == '_'))
            return true;
    return false;
}

/* The command's usage text, then a line for each of its own options that
 * the text does not name: --help lists every option the table takes (the
 * test cli_every_command checks that none needs this line); then the shared
 * options, the URL paragraph, the tail. */
static void write_help(const hs_cli_spec *s, FILE *out)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        return;
    s->usage(m);
    fclose(m);
    fputs(text, out);
    bool first = true;
    for (const hs_cli_extra *e = s->extras; e && e->name; e++) {
        if (names_option(text, e->name))
            continue;
        fprintf(out, "%s  --%s%s\n", first ? "\nOptions not described above:\n" : "", e->name,
                e->has_arg == required_argument ? " VALUE" : "");
        first = false;
    }
    free(text);
    if (s->shared_help) {
        fputc('\n', out);
        hs_analysis_options_help(out, s->kind);
    }
    if (s->fetch_help)
        hs_fetch_help(out);
    if (s->help_tail)
        fputs(s->help_tail, out);
}

/* The help on stdout in one write(2) (stdio would split it at 4 KiB): a
 * reader that stops at the line it wants (hotspur record --help | grep -q
 * usage, under pipefail) does not cut the rest off with SIGPIPE. */
static void print_help(const hs_cli_spec *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m) {
        write_help(s, stdout);
        return;
    }
    write_help(s, m);
    fclose(m);
    fflush(stdout);
    int fd = fileno(stdout); /* -1: a memory stream (the unit tests) */
    size_t done = 0;
    while (fd >= 0 && done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    if (fd < 0)
        fwrite(text, 1, len, stdout);
    free(text);
}

/* One parse: the spec and where its options go (hs_cmdline's ctx). */
typedef struct {
    const hs_cli_spec *s;
    hs_analysis_options *o;
    void *ctx;
    const char **output;
    const struct option *table;
} cli_parse;

/* hs_cmdline's take: -o, -n, the extras, the shared options by group. */
static int cli_take(void *vp, int c, const char *arg, const char *word, char *msg, size_t msglen)
{
    cli_parse *p = vp;
    const hs_cli_spec *s = p->s;
    for (size_t i = 0; s->short_names && s->short_names[i] && c > ' ' && c < HS_CLI_EXTRA; i++)
        if (c == s->short_names[i])
            c = s->extras[i].code;
    if (c == 'o') {
        *p->output = arg;
        return 0;
    }
    if (c == 'n') {
        /* -n N and -nN; "-nosuch" is not -n osuch */
        if (word[2] && !isdigit((unsigned char)word[2]))
            return HS_CMDLINE_UNKNOWN;
        c = HS_OPT_NODECOUNT;
    }
    if (c >= HS_CLI_EXTRA && s->extra)
        return s->extra(p->ctx, p->o, c, arg, msg, msglen);
    if (c < HS_OPT_SAMPLE_INDEX || c >= HS_OPT__END)
        return HS_CMDLINE_UNKNOWN;
    unsigned g = group_of(c);
    if (!(s->takes & g)) {
        if (g == HS_CLI_BASE && s->base_msg) {
            snprintf(msg, msglen, "%s", s->base_msg);
            return -1;
        }
        if (!s->does_not_apply)
            return HS_CMDLINE_UNKNOWN;
        snprintf(msg, msglen, "option '%s' does not apply to %s", word, s->name);
        return -1;
    }
    return hs_analysis_parse_option(p->o, c, arg, msg, msglen) < 0 ? -1 : 0;
}

/* hs_cmdline's check: pprof's report flags, for the reports. */
static int cli_check(void *vp, const char *word, char *msg, size_t msglen)
{
    cli_parse *p = vp;
    return p->s->fetch_help && pprof_report_flag(word, p->table, msg, msglen) ? -1 : 0;
}

static void cli_help(void *vp)
{
    print_help(((cli_parse *)vp)->s);
}

static int parse(const hs_cli_spec *s, int argc, char **argv, hs_analysis_options *o, void *ctx,
                 const char **output, int *first)
{
    char who[128];
    snprintf(who, sizeof who, "hotspur %s", s->name);
    struct option table[HS_CLI_MAX_OPTS];
    if (build_table(s, table) < 0)
        return hs_cmdline_fail(who, NULL, "too many options (internal error)");
    char letters[32] = "";
    if (s->takes & HS_CLI_OUTPUT)
        strcat(letters, "o:");
    if (s->takes & HS_CLI_TRIM)
        strcat(letters, "n:");
    for (size_t i = 0; s->short_names && s->short_names[i]; i++) {
        size_t l = strlen(letters);
        if (s->short_names[i] == ' ' || l + 3 > sizeof letters)
            continue;
        letters[l++] = s->short_names[i];
        if (s->extras[i].has_arg == required_argument)
            letters[l++] = ':';
        letters[l] = '\0';
    }
    hs_cmdline c = {.who = who, .table = table, .letters = letters, .in_order = s->in_order,
                    .take = cli_take, .check = cli_check, .help = cli_help,
                    .min_args = s->min_args, .max_args = s->max_args, .missing_msg = s->missing_msg};
    cli_parse p = {.s = s, .o = o, .ctx = ctx, .output = output, .table = table};
    return hs_cmdline_parse(&c, argc, argv, &p, first);
}

int hs_cli_parse(const hs_cli_spec *s, int argc, char **argv, hs_analysis_options *o,
                 void *ctx, const char **output, int *first)
{
    if (o)
        hs_analysis_options_init(o);
    int rc = parse(s, argc, argv, o, ctx, output, first);
    if (rc >= 0 && o)
        hs_analysis_options_free(o);
    return rc;
}
