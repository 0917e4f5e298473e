/* test_cli_options.c — the commands' one option parser
 * (src/cli/cli_options.c): unknown options, missing arguments, pprof's
 * single-dash and underscore spellings, --opt=value and --opt value, a
 * command's own options accepted by it and refused by the others, the
 * "does not apply" and --base wordings, positional argument counts, -n,
 * --help (and the options it adds from the table), in_order (record's
 * command line), repeated options, and base/cmdline.h used directly as the
 * harness does. stderr and stdout are captured (glibc lets them be
 * reassigned). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/cmdline.h"
#include "cli/cli_options.h"

enum { OPT_TITLE = HS_CLI_EXTRA, OPT_FLAG };

typedef struct {
    const char *title;
    int flags;
} extras_seen;

static int take_extra(void *ctx, hs_analysis_options *o, int code, const char *arg, char *err,
                      size_t errlen)
{
    extras_seen *e = ctx;
    (void)o;
    if (code == OPT_TITLE) {
        if (strcmp(arg, "bad") == 0) {
            snprintf(err, errlen, "--title must not be bad");
            return -1;
        }
        e->title = arg;
    } else {
        e->flags++;
    }
    return 0;
}

static void usage_a(FILE *out)
{
    fprintf(out, "usage: hotspur alpha [options] FILE...\n");
}

static void usage_b(FILE *out)
{
    fprintf(out, "usage: hotspur beta [options] FILE...\n");
}

static const hs_cli_extra alpha_extras[] = {
    {"title", required_argument, OPT_TITLE},
    {"flag", no_argument, OPT_FLAG},
    {NULL, 0, 0},
};

/* alpha: a top-like report with two extras. */
static const hs_cli_spec alpha = {
    .name = "alpha", .usage = usage_a, .kind = HS_KIND_TOP,
    .takes = HS_CLI_FILTERS | HS_CLI_TRIM | HS_CLI_BASE | HS_CLI_OUTPUT,
    .shared_help = true, .fetch_help = true, .help_tail = "TAIL\n",
    .extras = alpha_extras, .extra = take_extra, .min_args = 1, .max_args = 2};

/* beta: a flame-like report without trimming, base or extras. */
static const hs_cli_spec beta = {
    .name = "beta", .usage = usage_b, .kind = HS_KIND_NOTRIM,
    .takes = HS_CLI_FILTERS | HS_CLI_OUTPUT, .does_not_apply = true,
    .base_msg = "--base is for alpha", .min_args = 1, .max_args = -1,
    .missing_msg = "missing profile FILE"};

/* gamma: a command with no shared option but -o, whose extras have one-letter
 * spellings (as ctl's -t): -t for --title, --flag none. */
static const hs_cli_spec gamma = {
    .name = "gamma", .usage = usage_b, .takes = HS_CLI_OUTPUT, .extras = alpha_extras,
    .short_names = "t ", .extra = take_extra, .min_args = 0, .max_args = 2};

/* delta: record-like: options end at the first positional argument (the
 * command it runs), -t/--title repeatable, no shared option. */
static const hs_cli_spec delta = {
    .name = "delta", .usage = usage_b, .takes = HS_CLI_OUTPUT, .extras = alpha_extras,
    .short_names = "t ", .extra = take_extra, .in_order = true, .min_args = 1, .max_args = -1,
    .missing_msg = "no command given"};

typedef struct {
    int rc, first;
    hs_analysis_options o;
    extras_seen seen;
    const char *output;
    char err[1024], out[8192];
    char *argv[16];
    char store[16][128]; /* writable copies: the parser may respell in place */
    int argc;
} run;

static void run_free(run *r)
{
    hs_analysis_options_free(&r->o);
    free(r);
}

/* Parse the NULL-ended words with spec s; captures stderr and stdout. */
static run *parse(const hs_cli_spec *s, ...)
{
    run *r = calloc(1, sizeof *r);
    assert_non_null(r);
    va_list ap;
    va_start(ap, s);
    snprintf(r->store[0], sizeof r->store[0], "%s", s->name);
    r->argv[r->argc++] = r->store[0];
    for (const char *w; (w = va_arg(ap, const char *));) {
        snprintf(r->store[r->argc], sizeof r->store[0], "%s", w);
        r->argv[r->argc] = r->store[r->argc];
        r->argc++;
    }
    va_end(ap);
    FILE *saved_err = stderr, *saved_out = stdout;
    FILE *e = fmemopen(r->err, sizeof r->err - 1, "w");
    FILE *o = fmemopen(r->out, sizeof r->out - 1, "w");
    assert_non_null(e);
    assert_non_null(o);
    stderr = e;
    stdout = o;
    r->rc = hs_cli_parse(s, r->argc, r->argv, &r->o, &r->seen, &r->output, &r->first);
    stderr = saved_err;
    stdout = saved_out;
    fclose(e);
    fclose(o);
    return r;
}

static void test_unknown_option(void **state)
{
    (void)state;
    run *r = parse(&alpha, "--nosuch", "f.pb.gz", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur alpha: unknown option '--nosuch' (see hotspur alpha --help)\n");
    run_free(r);
    r = parse(&alpha, "-nosuch", "f.pb.gz", NULL); /* not "-n osuch" */
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur alpha: unknown option '-nosuch' (see hotspur alpha --help)\n");
    run_free(r);
    r = parse(&alpha, "-t", "x", "f.pb.gz", NULL); /* not a prefix of --title */
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur alpha: unknown option '-t' (see hotspur alpha --help)\n");
    run_free(r);
    r = parse(&alpha, "--s", "x", "f.pb.gz", NULL); /* ambiguous: show, show-from, ... */
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur alpha: unknown option '--s' (see hotspur alpha --help)\n");
    run_free(r);
}

static void test_missing_argument(void **state)
{
    (void)state;
    run *r = parse(&alpha, "f.pb.gz", "--focus", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur alpha: option '--focus' needs a value\n");
    run_free(r);
    r = parse(&alpha, "f.pb.gz", "-o", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur alpha: option '-o' needs a value\n");
    run_free(r);
    r = parse(&alpha, "f.pb.gz", "--title", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur alpha: option '--title' needs a value\n");
    run_free(r);
}

static void test_pprof_spellings(void **state)
{
    (void)state;
    run *r = parse(&alpha, "-nodecount=3", "-cum", "-sample_index=alloc_space",
                   "--show_from", "main", "-drop_negative", "f.pb.gz", NULL);
    assert_int_equal(r->rc, -1);
    assert_int_equal(r->o.nodecount, 3);
    assert_true(r->o.cum_sort);
    assert_string_equal(r->o.sample_index, "alloc_space");
    assert_string_equal(r->o.show_from, "main");
    assert_true(r->o.drop_negative);
    assert_string_equal(r->err, "");
    run_free(r);
    r = parse(&alpha, "-n", "7", "f.pb.gz", NULL);
    assert_int_equal(r->rc, -1);
    assert_int_equal(r->o.nodecount, 7);
    run_free(r);
    r = parse(&alpha, "-n12", "f.pb.gz", NULL);
    assert_int_equal(r->rc, -1);
    assert_int_equal(r->o.nodecount, 12);
    run_free(r);
    /* a file name with '_' after an option taking an argument is left alone */
    r = parse(&alpha, "--focus", "-my_func", "f_1.pb.gz", NULL);
    assert_int_equal(r->rc, -1);
    assert_string_equal(r->o.focus, "-my_func");
    assert_string_equal(r->argv[r->first], "f_1.pb.gz");
    run_free(r);
}

static void test_equals_and_separate(void **state)
{
    (void)state;
    run *r = parse(&alpha, "--focus=abc", "--ignore", "def", "--output=o.txt", "f.pb.gz",
                   "--title=T1", NULL);
    assert_int_equal(r->rc, -1);
    assert_string_equal(r->o.focus, "abc");
    assert_string_equal(r->o.ignore, "def");
    assert_string_equal(r->output, "o.txt");
    assert_string_equal(r->seen.title, "T1");
    /* positional arguments are moved after the options */
    assert_int_equal(r->argc - r->first, 1);
    assert_string_equal(r->argv[r->first], "f.pb.gz");
    run_free(r);
    r = parse(&alpha, "-o", "x.txt", "--title", "T2", "--flag", "-flag", "a", "b", NULL);
    assert_int_equal(r->rc, -1);
    assert_string_equal(r->output, "x.txt");
    assert_string_equal(r->seen.title, "T2");
    assert_int_equal(r->seen.flags, 2);
    assert_int_equal(r->argc - r->first, 2);
    run_free(r);
}

static void test_bad_values(void **state)
{
    (void)state;
    run *r = parse(&alpha, "--nodecount=abc", "f.pb.gz", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur alpha: --nodecount needs a non-negative integer, got 'abc'\n");
    run_free(r);
    r = parse(&alpha, "--title=bad", "f.pb.gz", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur alpha: --title must not be bad\n");
    run_free(r);
    r = parse(&alpha, "--lines", "--files", "f.pb.gz", NULL);
    assert_int_equal(r->rc, 2);
    assert_non_null(strstr(r->err, "only one of --functions, --files, --lines, --addresses"));
    run_free(r);
}

static void test_short_names(void **state)
{
    (void)state;
    run *r = parse(&gamma, "12", "-t", "T", "dump", "-o", "F", NULL);
    assert_int_equal(r->rc, -1);
    assert_string_equal(r->seen.title, "T");
    assert_string_equal(r->output, "F");
    assert_int_equal(r->argc - r->first, 2);
    assert_string_equal(r->argv[r->first], "12");
    assert_string_equal(r->argv[r->first + 1], "dump");
    run_free(r);
    r = parse(&gamma, "-tU", "--flag", NULL);
    assert_int_equal(r->rc, -1);
    assert_string_equal(r->seen.title, "U");
    assert_int_equal(r->seen.flags, 1);
    run_free(r);
    r = parse(&gamma, "-t", "bad", NULL); /* the extra's own check */
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur gamma: --title must not be bad\n");
    run_free(r);
    r = parse(&gamma, "-t", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur gamma: option '-t' needs a value\n");
    run_free(r);
    r = parse(&gamma, "-f", NULL); /* ' ': --flag has no letter */
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur gamma: unknown option '-f' (see hotspur gamma --help)\n");
    run_free(r);
    r = parse(&gamma, "--cum", NULL); /* shared options it does not take */
    assert_int_equal(r->rc, 2);
    run_free(r);
    r = parse(&gamma, "a", "b", "c", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur gamma: too many arguments (see hotspur gamma --help)\n");
    run_free(r);
}

static void test_extras_of_other_commands(void **state)
{
    (void)state;
    /* alpha's own options are not beta's */
    run *r = parse(&beta, "--title", "T", "f.pb.gz", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur beta: unknown option '--title' (see hotspur beta --help)\n");
    run_free(r);
    r = parse(&beta, "--flag", "f.pb.gz", NULL);
    assert_int_equal(r->rc, 2);
    run_free(r);
    /* shared options beta does not take: its wording */
    r = parse(&beta, "--cum", "f.pb.gz", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur beta: option '--cum' does not apply to beta\n");
    run_free(r);
    r = parse(&beta, "-nodecount=3", "f.pb.gz", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur beta: option '-nodecount=3' does not apply to beta\n");
    run_free(r);
    r = parse(&beta, "-n", "3", "f.pb.gz", NULL); /* -n is --nodecount only where trimming is */
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur beta: unknown option '-n' (see hotspur beta --help)\n");
    run_free(r);
    r = parse(&beta, "--diff-base=old.pb.gz", "f.pb.gz", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur beta: --base is for alpha\n");
    run_free(r);
    r = parse(&beta, "--source-path", "/src", "f.pb.gz", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur beta: option '--source-path' does not apply to beta\n");
    run_free(r);
    /* and the filters beta takes work */
    r = parse(&beta, "--focus", "x", "--sample_index=1", "f.pb.gz", NULL);
    assert_int_equal(r->rc, -1);
    assert_string_equal(r->o.focus, "x");
    assert_string_equal(r->o.sample_index, "1");
    run_free(r);
}

static void test_positional_counts(void **state)
{
    (void)state;
    run *r = parse(&alpha, "--cum", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur alpha: missing arguments (see hotspur alpha --help)\n");
    run_free(r);
    r = parse(&alpha, "a", "b", "c", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur alpha: too many arguments (see hotspur alpha --help)\n");
    run_free(r);
    r = parse(&beta, NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur beta: missing profile FILE\n");
    run_free(r);
    /* after "--" everything is positional */
    r = parse(&alpha, "--", "--cum", NULL);
    assert_int_equal(r->rc, -1);
    assert_false(r->o.cum_sort);
    assert_string_equal(r->argv[r->first], "--cum");
    run_free(r);
}

static void test_help(void **state)
{
    (void)state;
    run *r = parse(&alpha, "--help", NULL);
    assert_int_equal(r->rc, 0);
    assert_string_equal(r->err, "");
    assert_true(strncmp(r->out, "usage: hotspur alpha", 20) == 0);
    assert_non_null(strstr(r->out, "--nodecount N")); /* shared help with trimming */
    assert_non_null(strstr(r->out, "http://"));       /* the URL paragraph */
    size_t n = strlen(r->out);
    assert_true(n > 5 && strcmp(r->out + n - 5, "TAIL\n") == 0);
    run_free(r);
    r = parse(&beta, "-h", NULL);
    assert_int_equal(r->rc, 0);
    assert_string_equal(r->out, "usage: hotspur beta [options] FILE...\n");
    run_free(r);
}

static void test_in_order(void **state)
{
    (void)state;
    run *r = parse(&delta, "-t", "A", "--flag", "prog", "-t", "B", "--flag", NULL);
    assert_int_equal(r->rc, -1);
    assert_string_equal(r->seen.title, "A");
    assert_int_equal(r->seen.flags, 1);
    assert_int_equal(r->argc - r->first, 4); /* prog and its own options, untouched */
    assert_string_equal(r->argv[r->first], "prog");
    assert_string_equal(r->argv[r->first + 1], "-t");
    run_free(r);
    /* "--" ends the options too; an unknown option before the command is refused */
    r = parse(&delta, "--", "-t", NULL);
    assert_int_equal(r->rc, -1);
    assert_string_equal(r->argv[r->first], "-t");
    run_free(r);
    r = parse(&delta, "--nosuch", "prog", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur delta: unknown option '--nosuch' (see hotspur delta --help)\n");
    run_free(r);
    r = parse(&delta, "--flag", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur delta: no command given\n");
    run_free(r);
}

static void test_repeated_and_lists(void **state)
{
    (void)state;
    /* every occurrence reaches the callback, the last value stays */
    run *r = parse(&gamma, "--flag", "-t", "1,2", "--flag", "--title=3", NULL);
    assert_int_equal(r->rc, -1);
    assert_int_equal(r->seen.flags, 2);
    assert_string_equal(r->seen.title, "3");
    run_free(r);
    /* -tVALUE,VALUE as record's -p PID,PID: the value is the callback's */
    r = parse(&gamma, "-t1,2", NULL);
    assert_int_equal(r->rc, -1);
    assert_string_equal(r->seen.title, "1,2");
    run_free(r);
}

static void test_no_shared_options(void **state)
{
    (void)state;
    /* a command without shared options: they neither exist nor shadow its
     * abbreviations (--f is --flag, not ambiguous with --focus, --files) */
    run *r = parse(&gamma, "--f", NULL);
    assert_int_equal(r->rc, -1);
    assert_int_equal(r->seen.flags, 1);
    run_free(r);
    r = parse(&gamma, "--focus", "x", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur gamma: unknown option '--focus' (see hotspur gamma --help)\n");
    run_free(r);
    /* nor pprof's report flags, which only the reports name */
    r = parse(&gamma, "--tags", NULL);
    assert_int_equal(r->rc, 2);
    assert_string_equal(r->err, "hotspur gamma: unknown option '--tags' (see hotspur gamma --help)\n");
    run_free(r);
}

static void test_help_lists_the_table(void **state)
{
    (void)state;
    /* usage_b names neither --title nor --flag: --help adds them */
    run *r = parse(&gamma, "--help", NULL);
    assert_int_equal(r->rc, 0);
    assert_string_equal(r->out, "usage: hotspur beta [options] FILE...\n"
                                "\nOptions not described above:\n"
                                "  --title VALUE\n"
                                "  --flag\n");
    run_free(r);
}

/* base/cmdline.h used directly, as the harness's programs do: the
 * messages name the program, take's HS_CMDLINE_UNKNOWN is "unknown option". */
static int take_count(void *ctx, int code, const char *arg, const char *word, char *msg,
                      size_t msglen)
{
    (void)arg;
    (void)word;
    if (code == 'x')
        return HS_CMDLINE_UNKNOWN;
    if (code == 'v' && arg && strcmp(arg, "0") == 0) {
        snprintf(msg, msglen, "--value: not 0");
        return -1;
    }
    ++*(int *)ctx;
    return 0;
}

static void no_help(void *ctx)
{
    (void)ctx;
}

static void test_cmdline_direct(void **state)
{
    (void)state;
    static const struct option table[] = {
        {"help", no_argument, NULL, 'h'}, {"value", required_argument, NULL, 'v'},
        {"x-refused", no_argument, NULL, 'x'}, {NULL, 0, NULL, 0}};
    hs_cmdline c = {.who = "./prog", .table = table, .take = take_count, .help = no_help};
    const char *cases[][4] = {
        /* up to three words, then the expected stderr */
        {"--value=1", "-value", "2", ""},
        {"--value", "0", NULL, "./prog: --value: not 0\n"},
        {"--x-refused", NULL, NULL, "./prog: unknown option '--x-refused' (see ./prog --help)\n"},
        {"-v", "1", NULL, "./prog: unknown option '-v' (see ./prog --help)\n"}, /* no letters */
        {"--value", NULL, NULL, "./prog: option '--value' needs a value\n"},
        {"pos", NULL, NULL, "./prog: too many arguments (see ./prog --help)\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char store[4][32], *argv[5] = {store[0]};
        int argc = 1, first = 0, count = 0;
        snprintf(store[0], sizeof store[0], "./prog");
        for (int k = 0; k < 3 && cases[i][k]; k++) {
            snprintf(store[argc], sizeof store[0], "%s", cases[i][k]);
            argv[argc] = store[argc];
            argc++;
        }
        char err[512] = "";
        FILE *saved = stderr, *e = fmemopen(err, sizeof err - 1, "w");
        assert_non_null(e);
        stderr = e;
        int rc = hs_cmdline_parse(&c, argc, argv, &count, &first);
        stderr = saved;
        fclose(e);
        if (i == 0) {
            assert_int_equal(rc, -1);
            assert_int_equal(count, 2);
        } else {
            assert_int_equal(rc, 2);
            assert_string_equal(err, cases[i][3]);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_option),
        cmocka_unit_test(test_missing_argument),
        cmocka_unit_test(test_pprof_spellings),
        cmocka_unit_test(test_equals_and_separate),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_short_names),
        cmocka_unit_test(test_extras_of_other_commands),
        cmocka_unit_test(test_positional_counts),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_in_order),
        cmocka_unit_test(test_repeated_and_lists),
        cmocka_unit_test(test_no_shared_options),
        cmocka_unit_test(test_help_lists_the_table),
        cmocka_unit_test(test_cmdline_direct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
