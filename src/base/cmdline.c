/* cmdline.c — see cmdline.h. A thin layer over getopt_long_only: every
 * result is classified here once, for every command. */
#include "base/cmdline.h"

#include <stdio.h>
#include <string.h>

int hs_cmdline_fail(const char *who, const char *what, const char *msg)
{
    if (what)
        fprintf(stderr, "%s: %s: %s\n", who, what, msg);
    else
        fprintf(stderr, "%s: %s\n", who, msg);
    return 2;
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

static int unknown(const hs_cmdline *c, const char *word)
{
    char msg[512];
    snprintf(msg, sizeof msg, "unknown option '%s' (see %s --help)", word, c->who);
    return hs_cmdline_fail(c->who, NULL, msg);
}

int hs_cmdline_parse(const hs_cmdline *c, int argc, char **argv, void *ctx, int *first)
{
    /* in_order: getopt's "+"; ':' first: a missing value is ':', not '?' */
    char optstring[64];
    int pre = snprintf(optstring, sizeof optstring, "%s:h", c->in_order ? "+" : "");
    snprintf(optstring + pre, sizeof optstring - (size_t)pre, "%s", c->letters ? c->letters : "");
    const char *letters = optstring + pre - 1; /* "h..." */
    char msg[1024];
    opterr = 0;
    optind = 0;
    for (;;) {
        char word[256];
        const char *a = next_option_word(argc, argv, c->table, c->in_order, word, sizeof word);
        /* getopt_long_only reads "-x" as the long option it starts when x is
         * not a one-letter option (web's -o would be --open): not ours */
        if (a && a[1] != '-' && a[2] == '\0' && (a[1] == ':' || !strchr(letters, a[1])))
            return unknown(c, word);
        if (a && c->check && c->check(ctx, a, msg, sizeof msg) < 0)
            return hs_cmdline_fail(c->who, NULL, msg);
        int code = getopt_long_only(argc, argv, optstring, c->table, NULL);
        if (code == -1)
            break;
        if (!a) /* cannot happen: getopt found an option; keep messages sane */
            snprintf(word, sizeof word, "%s", argv[optind - 1]);
        if (code == 'h') {
            c->help(ctx);
            return 0;
        }
        if (code == ':') {
            snprintf(msg, sizeof msg, "option '%s' needs a value", word);
            return hs_cmdline_fail(c->who, NULL, msg);
        }
        int r = code == '?' ? HS_CMDLINE_UNKNOWN : c->take(ctx, code, optarg, word, msg, sizeof msg);
        if (r < 0)
            return hs_cmdline_fail(c->who, NULL, msg);
        if (r == HS_CMDLINE_UNKNOWN)
            return unknown(c, word);
    }
    int n = argc - optind;
    if (n < c->min_args) {
        if (c->missing_msg)
            return hs_cmdline_fail(c->who, NULL, c->missing_msg);
        snprintf(msg, sizeof msg, "missing arguments (see %s --help)", c->who);
        return hs_cmdline_fail(c->who, NULL, msg);
    }
    if (c->max_args >= 0 && n > c->max_args) {
        snprintf(msg, sizeof msg, "too many arguments (see %s --help)", c->who);
        return hs_cmdline_fail(c->who, NULL, msg);
    }
    *first = optind;
    return -1;
}
