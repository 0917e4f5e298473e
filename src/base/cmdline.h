/* cmdline.h — the one argv parser: every hotspur command (through
 * cli/cli_options.h, which adds the report commands' shared options) and
 * the benchmark harness's programs (harness/runner.c). A command is an
 * option table and a function that takes each option; hs_cmdline_parse
 * does the rest the same way for all:
 *  - long options as --opt=value or --opt value, unique prefixes, single-dash
 *    spellings (-cum, -time=1s: getopt_long_only) and '_' for '-'
 *    (--show_from), one-letter options from `letters` (-o F, -oF, -t1,2);
 *  - options and positional arguments in any order, or with in_order the
 *    options end at the first positional argument (a command line to run);
 *    "--" ends them always; a repeated option is taken each time;
 *  - errors as one line "WHO: ..." on stderr and exit status 2: unknown
 *    option, option needing a value, a value the command refuses, missing
 *    or extra positional arguments; -h/--help prints the help, status 0. */
#ifndef HS_BASE_CMDLINE_H
#define HS_BASE_CMDLINE_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

/* take's answer for an option that is none of the command's. */
#define HS_CMDLINE_UNKNOWN 1

typedef struct {
    const char *who; /* the messages' prefix and help pointer: "hotspur serve", argv[0] */
    /* The long options, {NULL} ended: codes are the command's (--help must
     * be there, as 'h'). */
    const struct option *table;
    const char *letters; /* one-letter options as getopt's optstring ("o:t:"), 'h' implied */
    bool in_order;       /* options end at the first positional argument */
    /* Each option in turn: its code (the table's, or its letter), its value
     * (NULL for none) and the word as given. 0: taken; -1: refused, why in
     * msg; HS_CMDLINE_UNKNOWN: not this command's. */
    int (*take)(void *ctx, int code, const char *arg, const char *word, char *msg, size_t msglen);
    /* Before an option word is read, or NULL: -1 refuses it, why in msg. */
    int (*check)(void *ctx, const char *word, char *msg, size_t msglen);
    void (*help)(void *ctx); /* -h, --help: the help on stdout */
    int min_args, max_args;  /* positional arguments; max -1 = unlimited */
    const char *missing_msg; /* when fewer than min_args (default "missing arguments") */
} hs_cmdline;

/* Parse argv (argv[0] is the command's name; argv may be permuted, and an
 * option word's '_' rewritten in place). Returns -1 to go on with the
 * positional arguments from argv[*first]; otherwise the exit status: 0
 * after --help, 2 after a usage error (its message printed). */
int hs_cmdline_parse(const hs_cmdline *c, int argc, char **argv, void *ctx, int *first);

/* Print "WHO: [what: ]msg" on stderr; returns 2. */
int hs_cmdline_fail(const char *who, const char *what, const char *msg);

#endif
