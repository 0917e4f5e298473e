/* cmd_record_live.c — `hotspur record -p PID[,PID...]` and `hotspur record -a`:
 * profile processes that are already running (src/live), until --duration
 * or SIGINT/SIGTERM, then write the gzipped pprof profile (or, with
 * --per-process, one per process). Its options are read with record's, in
 * cmd_record.c (one table for both modes). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hashmap.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "live/live.h"
#include "profile/profile.h"

static const char live_usage[] =
    "usage: hotspur record -p PID[,PID...] [options]\n"
    "       hotspur record -a [options]\n"
    "\n"
    "Profile processes that are already running, from outside: no restart, no\n"
    "LD_PRELOAD, the target is never stopped. Kernel and user stacks: kernel\n"
    "frames are named from /proc/kallsyms and marked \" [k]\"; user stacks are\n"
    "copied by the kernel with each sample and unwound with DWARF CFI, so code\n"
    "without frame pointers unwinds right. Needs root or CAP_PERFMON (or a low\n"
    "kernel.perf_event_paranoid).\n"
    "\n"
    "  -p, --pid PID[,PID]    attach to these processes: all their threads,\n"
    "                         including threads and children created later\n"
    "  -a, --all-cpus         every process on the host (one event per CPU)\n"
    "  -F, --frequency HZ     samples per second of CPU time (default 100)\n"
    "      --duration D       stop after D (e.g. 10, 10s, 500ms, 2m); default:\n"
    "                         until Ctrl-C / SIGTERM (or every -p process ended)\n"
    "      --stack-size BYTES user stack copied per sample (default 16384,\n"
    "                         at most 65528); deeper stacks end early\n"
    "      --off-cpu          time off CPU instead of CPU time: where threads\n"
    "                         block (sleep, I/O, locks), with kernel and user\n"
    "                         stack at the block point (type off_cpu/nanoseconds)\n"
    "  -o, --output FILE      where to write (default hotspur.pb.gz)\n"
    "      --per-process      one file per process instead: FILE with the\n"
    "                         process name and pid before .pb.gz\n"
    "                         (hotspur.redis-server.1234.pb.gz)\n"
    "  -h, --help             show this help\n"
    "Samples carry the labels pid, tid, process, thread and cgroup (the systemd\n"
    "unit or container): `hotspur top --tagfocus process=NAME` narrows a -a\n"
    "profile to one program.\n";

/* Write one file per process of p (samples grouped by their pid and
 * process labels: a pid reused by another program is another file), named
 * OUT with ".NAME.PID" before ".pb.gz". Returns the number of files
 * written, -1 on failure (message printed). */
static long write_per_process(const hs_profile *p, const char *out)
{
    typedef struct {
        int64_t pid, name; /* name: string index in p */
        size_t *idx, n;
    } group;
    group *g = NULL;
    size_t n_g = 0;
    hs_hmap by = {0}; /* (name << 32 | pid) -> group index + 1 */
    long written = 0;
    for (size_t i = 0; i < p->n_samples && written >= 0; i++) {
        const hs_sample *s = &p->samples[i];
        int64_t pid = 0, name = 0;
        for (size_t k = 0; k < s->n_labels; k++) {
            const char *key = hs_profile_string(p, s->labels[k].key);
            if (!strcmp(key, "pid"))
                pid = s->labels[k].num;
            else if (!strcmp(key, "process"))
                name = s->labels[k].str;
        }
        uint64_t key = ((uint64_t)name << 32) ^ (uint64_t)pid, ix;
        if (!hs_hmap_get(&by, key, &ix)) {
            group *ng = realloc(g, (n_g + 1) * sizeof *ng);
            if (!ng || hs_hmap_put(&by, key, n_g + 1) < 0) {
                if (ng)
                    g = ng;
                written = -1;
                break;
            }
            g = ng;
            g[n_g] = (group){pid, name, NULL, 0};
            ix = ++n_g;
        }
        group *x = &g[ix - 1];
        if ((x->n & (x->n - 1)) == 0) {
            size_t *ni = realloc(x->idx, (x->n ? x->n * 2 : 1) * sizeof *ni);
            if (!ni) {
                written = -1;
                break;
            }
            x->idx = ni;
        }
        x->idx[x->n++] = i;
    }
    if (written < 0)
        fprintf(stderr, "hotspur record: out of memory\n");
    for (size_t k = 0; k < n_g && written >= 0; k++) {
        char comp[128], path[4096], err[512];
        int w = snprintf(comp, sizeof comp, "%s.%lld", hs_profile_string(p, g[k].name), (long long)g[k].pid);
        for (int j = 0; j < w && j < (int)sizeof comp; j++)
            if (comp[j] == '/' || comp[j] == ' ' || comp[j] == ':')
                comp[j] = '_'; /* a name is a comm: keep the file in the directory */
        hs_profile *sub = hs_live_subset(p, g[k].idx, g[k].n);
        if (!sub || hs_profile_file_name(out, NULL, 0, comp, path, sizeof path) < 0 ||
            hs_profile_write_file(sub, path, err, sizeof err) != 0) {
            fprintf(stderr, "hotspur record: %s\n", sub ? err : "out of memory");
            written = -1;
        } else {
            written++;
        }
        hs_profile_free(sub);
    }
    for (size_t k = 0; k < n_g; k++)
        free(g[k].idx);
    free(g);
    hs_hmap_free(&by);
    return written;
}

void hs_record_live_usage(FILE *out)
{
    fputs(live_usage, out);
}

int hs_record_live(hs_live_options *opts, int per_process, const char *out)
{
    hs_live_options o = *opts;
    size_t n_pids = o.n_pids;
    if (!!o.all == !!n_pids) {
        fprintf(stderr, "hotspur record: give either -p PID or -a\n");
        return 2;
    }
    o.stop = hs_cli_stop_on_signals();
    char err[512];
    hs_live_stats st = {0};
    hs_profile *p = hs_live_record(&o, &st, err, sizeof err);
    if (!p) {
        fprintf(stderr, "hotspur record: %s\n", err);
        return 1;
    }
    int rc = 0;
    if (per_process) {
        long files = write_per_process(p, out);
        if (files < 0) {
            rc = 1;
        } else {
            char pat[4096];
            hs_profile_file_name(out, NULL, 0, "NAME.PID", pat, sizeof pat);
            fprintf(stderr, "hotspur record: %zu %s from %zu process%s -> %ld file%s %s\n", st.samples,
                    o.off_cpu ? "switches" : "samples", st.processes, st.processes == 1 ? "" : "es", files,
                    files == 1 ? "" : "s", pat);
        }
    } else if (hs_profile_write_file(p, out, err, sizeof err) != 0) {
        fprintf(stderr, "hotspur record: %s\n", err);
        rc = 1;
    } else {
        fprintf(stderr, "hotspur record: %zu %s from %zu process%s", st.samples, o.off_cpu ? "switches" : "samples", st.processes,
                st.processes == 1 ? "" : "es");
        if (st.lost)
            fprintf(stderr, ", %zu lost", st.lost);
        if (o.off_cpu && st.parked) /* their user stacks: every register, or sp + pc only (docs/live.md) */
            fprintf(stderr, ", %zu thread%s asleep at the start (user stacks: %zu of %zu with every register)",
                    st.parked, st.parked == 1 ? "" : "s", st.parked_full_regs, st.parked_user);
        fprintf(stderr, " -> %s\n", out);
    }
    hs_profile_free(p);
    return rc;
}
