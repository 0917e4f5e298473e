/* main.c — the `hotspur` command: global options (--help, --version) and
 * dispatch to one hs_cmd_<name>() per subcommand (commands.h).
 *
 * To add a command: write cmd_<name>.c with int hs_cmd_<name>(int, char **),
 * declare it in commands.h and add one line to hs_commands[] below; its
 * description is what `hotspur --help` lists. Exit status: 0 success,
 * 1 failure of the work itself, 2 usage or input error. */
#include "cli/commands.h"

#include <stdio.h>
#include <string.h>

#ifndef HS_VERSION
#define HS_VERSION "0.0.0"
#endif

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} hs_command;

static const hs_command hs_commands[] = {
    {"record", hs_cmd_record, "run a program under the profiler and write a pprof profile"},
    {"agent", hs_cmd_agent, "host daemon: profile every process (perf events) and upload per service"},
    {"attach", hs_cmd_attach, "load a library into a running process (ptrace + its dlopen)"},
    {"ctl", hs_cmd_ctl, "list profiled processes; dump, stop or start one (hotspur ctl PID dump)"},
    {"top", hs_cmd_top, "list the functions with the highest flat (or cum) value"},
    {"peek", hs_cmd_peek, "callers and callees of the functions matching a regex"},
    {"tree", hs_cmd_tree, "callers and callees of every function in the call graph"},
    {"traces", hs_cmd_traces, "print every sample: labels, value and call stack"},
    {"tags", hs_cmd_tags, "the label report: each label value's share of the total"},
    {"disasm", hs_cmd_disasm, "annotated machine code of functions matching RE (pprof -disasm)"},
    {"raw", hs_cmd_raw, "dump the profile's samples, locations and mappings (pprof -raw)"},
    {"list", hs_cmd_list, "annotated source of the functions matching a regex"},
    {"diff", hs_cmd_diff, "compare two profiles: base, new, delta and delta% per function"},
    {"merge", hs_cmd_merge, "merge profiles of the same type into one pprof file"},
    {"flame", hs_cmd_flame, "write an interactive HTML flame graph"},
    {"graph", hs_cmd_graph, "write the call graph as Graphviz DOT or SVG"},
    {"convert", hs_cmd_convert, "convert between pprof, collapsed, callgrind, speedscope, perf script"},
    {"web", hs_cmd_web, "open the web UI on local profiles (like go tool pprof -http)"},
    {"serve", hs_cmd_serve, "run the collector: store uploaded profiles, serve the query API and web UI"},
    {"bench", hs_cmd_bench, "compare two benchmark runs (hotspur bench compare OLD NEW)"},
    {"debuginfo", hs_cmd_debuginfo, "upload, list or remove the debug info `hotspur serve` names frames with"},
    {"symbolize", hs_cmd_symbolize, "add function names and lines to a profile written with raw addresses"},
};

#define HS_N_COMMANDS (sizeof hs_commands / sizeof hs_commands[0])

static void hs_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur [--help] [--version] COMMAND [ARGS...]\n"
            "\n"
            "A profiler for native Linux programs; reads and writes pprof profiles.\n"
            "\n"
            "Commands:\n");
    for (size_t i = 0; i < HS_N_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", hs_commands[i].name, hs_commands[i].summary);
    fprintf(out, "\nRun 'hotspur COMMAND --help' for the options of a command.\n");
}

static const hs_command *hs_find_command(const char *name)
{
    for (size_t i = 0; i < HS_N_COMMANDS; i++)
        if (strcmp(hs_commands[i].name, name) == 0)
            return &hs_commands[i];
    return NULL;
}

/* `hotspur help [CMD]` is `hotspur --help` or `hotspur CMD --help`. */
static int hs_help(int argc, char **argv)
{
    if (argc < 2) {
        hs_usage(stdout);
        return 0;
    }
    const hs_command *c = hs_find_command(argv[1]);
    if (!c) {
        fprintf(stderr, "hotspur: unknown command '%s' (see hotspur --help)\n", argv[1]);
        return 2;
    }
    char *args[] = {(char *)c->name, "--help", NULL};
    return c->run(2, args);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        hs_usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
        return hs_help(1, argv + 1);
    if (strcmp(cmd, "help") == 0)
        return hs_help(argc - 1, argv + 1);
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("hotspur %s\n", HS_VERSION);
        return 0;
    }
    if (cmd[0] == '-') {
        fprintf(stderr, "hotspur: unknown option '%s' (see hotspur --help)\n", cmd);
        return 2;
    }
    const hs_command *c = hs_find_command(cmd);
    if (!c) {
        fprintf(stderr, "hotspur: unknown command '%s' (see hotspur --help)\n", cmd);
        return 2;
    }
    int rc = c->run(argc - 1, argv + 1);
    if (fflush(stdout) != 0 && rc == 0) {
        fprintf(stderr, "hotspur %s: error writing output\n", cmd);
        return 1;
    }
    return rc;
}
