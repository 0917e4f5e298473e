/* cmd_attach.c — `hotspur attach PID`: load a library into a running
 * process that was started without it (src/attach/inject.h), and say how
 * long the process's thread was stopped. docs/attach.md.
 *
 * Today: --load LIB [--call FUNC [--arg S]] (the injection itself) and
 * --check. Starting the profiling agent after such a load (interposition
 * by GOT rewriting, detach) is issue 32's next step, not here yet. */
#define _GNU_SOURCE
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/inject.h"
#include "cli/cli_options.h"
#include "cli/commands.h"

static void attach_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur attach PID --load LIB [--call FUNC [--arg STRING]]\n"
            "       hotspur attach PID --check\n"
            "\n"
            "Load the shared library LIB into the running process PID with the process's\n"
            "own dlopen (glibc >= 2.34, x86-64), from outside, through ptrace: one thread\n"
            "is stopped (one blocked in a system call when there is one), made to call\n"
            "dlopen(LIB, RTLD_NOW) and, with --call, FUNC(STRING) from LIB, then its\n"
            "registers, FP state and stack are put back as they were and it resumes; a\n"
            "system call it was blocked in is restarted as after a signal handler, so a\n"
            "read() on a pipe still returns the data, not EINTR. Prints the time that\n"
            "thread was stopped.\n"
            "\n"
            "--check only says whether PID can be attached to, and if not why (not\n"
            "yours, already traced, kernel.yama.ptrace_scope, statically linked, a libc\n"
            "without dlopen); attach refuses in these cases with the same one line.\n"
            "\n"
            "Profiling a process attached to this way (the agent started after the load)\n"
            "is not available yet: see docs/attach.md.\n");
}

enum { OPT_LOAD = HS_CLI_EXTRA, OPT_CALL, OPT_ARG, OPT_CHECK };

typedef struct {
    const char *load, *call, *arg;
    int check;
} attach_args;

static int attach_extra(void *ctx, hs_analysis_options *o, int code, const char *arg, char *err,
                        size_t errlen)
{
    attach_args *a = ctx;
    (void)o;
    (void)err;
    (void)errlen;
    if (code == OPT_LOAD)
        a->load = arg;
    else if (code == OPT_CALL)
        a->call = arg;
    else if (code == OPT_ARG)
        a->arg = arg;
    else
        a->check = 1;
    return 0;
}

int hs_cmd_attach(int argc, char **argv)
{
    static const hs_cli_extra extras[] = {
        {"load", required_argument, OPT_LOAD},
        {"call", required_argument, OPT_CALL},
        {"arg", required_argument, OPT_ARG},
        {"check", no_argument, OPT_CHECK},
        {NULL, 0, 0},
    };
    static const hs_cli_spec spec = {
        .name = "attach", .usage = attach_usage, .kind = HS_KIND_NOTRIM, .takes = 0,
        .does_not_apply = true, .extras = extras, .extra = attach_extra, .min_args = 1,
        .max_args = 1, .missing_msg = "missing PID (hotspur attach PID --load LIB)"};
    attach_args a = {0};
    int first = 0;
    int rc = hs_cli_parse(&spec, argc, argv, NULL, &a, NULL, &first);
    if (rc >= 0)
        return rc;
    long pid;
    if (hs_cli_parse_long(argv[first], 1, INT_MAX, &pid) < 0)
        return hs_cli_fail("attach", argv[first], "not a process id");
    char err[1024];
    if (a.check) {
        if (hs_inject_check((pid_t)pid, err, sizeof err) < 0) {
            fprintf(stderr, "hotspur attach: %s\n", err);
            return 1;
        }
        printf("process %ld can be attached to\n", pid);
        return 0;
    }
    if (!a.load)
        return hs_cli_fail("attach", NULL,
                           "profiling after attach is not available yet; --load LIB loads a "
                           "library (see hotspur attach --help)");
    if (a.arg && !a.call)
        return hs_cli_fail("attach", "--arg", "needs --call FUNC");
    char lib[PATH_MAX];
    if (!realpath(a.load, lib))
        return hs_cli_fail("attach", a.load, "no such library");
    hs_inject_result r;
    if (hs_inject_dlopen((pid_t)pid, lib, a.call, a.arg ? a.arg : "", &r, err, sizeof err) < 0) {
        fprintf(stderr, "hotspur attach: %s\n", err);
        return 1;
    }
    printf("loaded %s into process %ld (thread %d stopped %.3f ms, %.3f ms of it in the "
           "calls%s)\n",
           lib, pid, (int)r.tid, r.stopped_ns / 1e6, r.call_ns / 1e6,
           r.restarted ? "; its system call restarted" : "");
    if (a.call)
        printf("%s returned %lld\n", a.call, (long long)r.sym_ret);
    if (r.signals_held)
        printf("%d signal(s) that came meanwhile sent again\n", r.signals_held);
    return 0;
}
