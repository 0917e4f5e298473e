/* cli_options.c — see cli_options.h. A thin layer over getopt_long_only:
 * the option table is built per command (its extras, then the shared
 * options it does not shadow), and every result is classified here once. */
#include "cli/cli_options.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "cli/fetch.h"

#define HS_CLI_MAX_OPTS 96

int hs_cli_fail(const char *cmd, const char *what, const char *msg)
{
    if (what)
        fprintf(stderr, "hotspur %s: %s: %s\n", cmd, what, msg);
    else
        fprintf(stderr, "hotspur %s: %s\n", cmd, msg);
    return 2;
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

/* The option word getopt reads next (it skips and later permutes
 * positional arguments, or with in_order stops at the first), or NULL; its
 * spelling as given goes to orig.
 * pprof's spellings use '_' where ours use '-': an underscored name that is
 * (a prefix of) one of ours is rewritten in place, so -sample_index=0 and
 * --show_from RE work as pprof's flags do. */
static char *next_option_word(int argc, char **argv, const struct option *t, bool in_order,
                              char *orig, size_t origlen)
{
    for (int i = optind > 0 ? optind : 1; i < argc; i++) {
        char *a = argv[i];
        if (strcmp(a, "--") == 0)
            return NULL;
        if (a[0] != '-' || a[1] == '\0') {
            if (in_order)
                return NULL;
            continue;
        }
        snprintf(orig, origlen, "%s", a);
        char *name = a + (a[1] == '-' ? 2 : 1);
        size_t len = strcspn(name, "=");
        char fixed[128];
        if (!memchr(name, '_', len) || len >= sizeof fixed)
            return a;
        for (size_t k = 0; k < len; k++)
            fixed[k] = name[k] == '_' ? '-' : name[k];
        for (const struct option *o = t; o->name; o++)
            if (strncmp(o->name, fixed, len) == 0) {
                memcpy(name, fixed, len);
                break;
            }
        return a;
    }
    return NULL;
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
 * test cli_help_options checks that none needs this line). */
static void print_usage(const hs_cli_spec *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m) {
        s->usage(stdout);
        return;
    }
    s->usage(m);
    fclose(m);
    fputs(text, stdout);
    bool first = true;
    for (const hs_cli_extra *e = s->extras; e && e->name; e++) {
        if (names_option(text, e->name))
            continue;
        printf("%s  --%s%s\n", first ? "\nOptions not described above:\n" : "", e->name,
               e->has_arg == required_argument ? " VALUE" : "");
        first = false;
    }
    free(text);
}

static void print_help(const hs_cli_spec *s)
{
    print_usage(s);
    if (s->shared_help) {
        fputc('\n', stdout);
        hs_analysis_options_help(stdout, s->kind);
    }
    if (s->fetch_help)
        hs_fetch_help(stdout);
    if (s->help_tail)
        fputs(s->help_tail, stdout);
}

static int parse(const hs_cli_spec *s, int argc, char **argv, hs_analysis_options *o, void *ctx,
                 const char **output, int *first)
{
    struct option table[HS_CLI_MAX_OPTS];
    if (build_table(s, table) < 0)
        return hs_cli_fail(s->name, NULL, "too many options (internal error)");
    /* in_order: getopt's "+", options end at the first positional argument */
    char shortopts[32];
    snprintf(shortopts, sizeof shortopts, "%s:h", s->in_order ? "+" : "");
    const char *shorts = shortopts + (s->in_order ? 2 : 1); /* the option letters */
    if (s->takes & HS_CLI_OUTPUT)
        strcat(shortopts, "o:");
    if (s->takes & HS_CLI_TRIM)
        strcat(shortopts, "n:");
    for (size_t i = 0; s->short_names && s->short_names[i]; i++) {
        size_t l = strlen(shortopts);
        if (s->short_names[i] == ' ' || l + 3 > sizeof shortopts)
            continue;
        shortopts[l++] = s->short_names[i];
        if (s->extras[i].has_arg == required_argument)
            shortopts[l++] = ':';
        shortopts[l] = '\0';
    }
    char msg[1024];
    int c;
    opterr = 0;
    optind = 0;
    for (;;) {
        char word[256];
        const char *a = next_option_word(argc, argv, table, s->in_order, word, sizeof word);
        /* getopt_long_only reads "-x" as the long option it starts when x is
         * not a short option (web's -o would be --open): not ours */
        if (a && a[1] != '-' && a[2] == '\0' && !strchr(shorts, a[1]))
            goto unknown;
        if (a && s->fetch_help && pprof_report_flag(a, table, msg, sizeof msg))
            return hs_cli_fail(s->name, NULL, msg);
        if ((c = getopt_long_only(argc, argv, shortopts, table, NULL)) == -1)
            break;
        if (!a) /* cannot happen: getopt found an option; keep messages sane */
            snprintf(word, sizeof word, "%s", argv[optind - 1]);
        for (size_t i = 0; s->short_names && s->short_names[i] && c > ' ' && c < HS_CLI_EXTRA; i++)
            if (c == s->short_names[i])
                c = s->extras[i].code;
        if (c == 'h') {
            print_help(s);
            return 0;
        }
        if (c == 'o') {
            *output = optarg;
            continue;
        }
        if (c == 'n') {
            /* -n N and -nN; "-nosuch" is not -n osuch */
            if (word[2] && !isdigit((unsigned char)word[2]))
                goto unknown;
            c = HS_OPT_NODECOUNT;
        }
        if (c == ':') {
            snprintf(msg, sizeof msg, "option '%s' needs a value", word);
            return hs_cli_fail(s->name, NULL, msg);
        }
        if (c >= HS_CLI_EXTRA && s->extra) {
            if (s->extra(ctx, o, c, optarg, msg, sizeof msg) < 0)
                return hs_cli_fail(s->name, NULL, msg);
            continue;
        }
        if (c < HS_OPT_SAMPLE_INDEX || c >= HS_OPT__END) {
        unknown:
            snprintf(msg, sizeof msg, "unknown option '%s' (see hotspur %s --help)", word, s->name);
            return hs_cli_fail(s->name, NULL, msg);
        }
        unsigned g = group_of(c);
        if (!(s->takes & g)) {
            if (g == HS_CLI_BASE && s->base_msg)
                return hs_cli_fail(s->name, NULL, s->base_msg);
            if (s->does_not_apply)
                snprintf(msg, sizeof msg, "option '%s' does not apply to %s", word, s->name);
            else
                snprintf(msg, sizeof msg, "unknown option '%s' (see hotspur %s --help)", word,
                         s->name);
            return hs_cli_fail(s->name, NULL, msg);
        }
        if (hs_analysis_parse_option(o, c, optarg, msg, sizeof msg) < 0)
            return hs_cli_fail(s->name, NULL, msg);
    }
    int n = argc - optind;
    if (n < s->min_args) {
        if (s->missing_msg)
            return hs_cli_fail(s->name, NULL, s->missing_msg);
        snprintf(msg, sizeof msg, "missing arguments (see hotspur %s --help)", s->name);
        return hs_cli_fail(s->name, NULL, msg);
    }
    if (s->max_args >= 0 && n > s->max_args) {
        snprintf(msg, sizeof msg, "too many arguments (see hotspur %s --help)", s->name);
        return hs_cli_fail(s->name, NULL, msg);
    }
    *first = optind;
    return -1;
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
