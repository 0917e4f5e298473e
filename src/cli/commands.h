/* commands.h — the hotspur subcommands. Each takes the arguments after its
 * name (argv[0] is the command name) and returns the process exit status:
 * 0 success, 1 failure of the work itself, 2 usage or input error. */
#ifndef HS_CLI_COMMANDS_H
#define HS_CLI_COMMANDS_H

#include <stddef.h>
#include <stdio.h>

#include "live/live.h"

int hs_cmd_record(int argc, char **argv);
/* record -p/-a (cmd_record_live.c): profile the running processes o names
 * (its pids or all, hz, duration, stack_bytes, off_cpu) into out, or one
 * file per process; record's exit status. Its help text, after record's. */
int hs_record_live(hs_live_options *o, int per_process, const char *out);
void hs_record_live_usage(FILE *out);
int hs_cmd_agent(int argc, char **argv);
int hs_cmd_ctl(int argc, char **argv);
int hs_cmd_attach(int argc, char **argv);
/* The agent library: $HOTSPUR_LIB, else ../lib beside this binary (cmd_record.c). 0, or -1. */
int hs_cli_find_agent(char *out, size_t outlen);
int hs_cmd_top(int argc, char **argv);
int hs_cmd_peek(int argc, char **argv);
int hs_cmd_list(int argc, char **argv);
int hs_cmd_tree(int argc, char **argv);
int hs_cmd_traces(int argc, char **argv);
int hs_cmd_tags(int argc, char **argv);
int hs_cmd_raw(int argc, char **argv);
int hs_cmd_disasm(int argc, char **argv);
int hs_cmd_diff(int argc, char **argv);
int hs_cmd_merge(int argc, char **argv);
int hs_cmd_flame(int argc, char **argv);
int hs_cmd_graph(int argc, char **argv);
int hs_cmd_convert(int argc, char **argv);
int hs_cmd_web(int argc, char **argv);
int hs_cmd_serve(int argc, char **argv);
int hs_cmd_bench(int argc, char **argv);
int hs_cmd_symbolize(int argc, char **argv);
int hs_cmd_debuginfo(int argc, char **argv);

#endif
