/* cmd_graph.c — `hotspur graph [-o out.dot|out.svg|out.png...] [filters]
 * FILE...`: the trimmed call graph (report/graph.c) as Graphviz DOT, or
 * rendered by Graphviz's `dot -T<ext>` in any format dot knows when the
 * output name ends in another extension (.svg, .png, .pdf, .gif, .ps...). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/analysis_cli.h"
#include "cli/cmd_export.h"
#include "cli/commands.h"

static void hs_graph_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur graph [-o OUT.dot|OUT.svg|OUT.png|...] [--title TEXT] [options] FILE...\n"
            "\n"
            "Write the call graph in Graphviz DOT, as `go tool pprof -dot` does: one box\n"
            "per function with its flat and cum values (font size grows with flat,\n"
            "colour deepens with cum), edges labelled with the value flowing through\n"
            "them (dotted: through nodes that were trimmed away). Nodes below\n"
            "--nodefraction of the total, edges below --edgefraction, and nodes beyond\n"
            "--nodecount are dropped, as in pprof (KCachegrind's minimum node cost).\n"
            "FILE is a pprof profile, or collapsed stacks or `perf script` text\n"
            "(detected); several FILEs are merged.\n"
            "\n"
            "  -o, --output FILE  where to write (default: DOT on stdout); .dot and .gv\n"
            "                     are DOT text; any other extension is a format that\n"
            "                     Graphviz `dot -T` renders (svg, png, pdf, gif, ps,\n"
            "                     jpg, ...), which needs dot installed; an extension\n"
            "                     dot does not know is refused\n"
            "      --title TEXT   first line of the legend (default: the file names)\n"
            "      --call-tree    one node per call path (a function reached from two callers\n"
            "                     is two nodes), as pprof's -call_tree\n"
            "      --compact-labels  legend without the title and type lines\n"
            "  -h, --help         show this help\n");
}

/* Full path of an executable in $PATH, 0 if found. */
static int hs_find_in_path(const char *name, char *out, size_t outlen)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        if (len && (size_t)snprintf(out, outlen, "%.*s/%s", (int)len, path, name) < outlen &&
            access(out, X_OK) == 0)
            return 0;
        path += len + (colon ? 1 : 0);
    }
    return -1;
}

/* The output format named by path's extension, lowercased into fmt; ""
 * for DOT text (stdout, no extension, .dot, .gv). */
static void hs_graph_format(const char *path, char *fmt, size_t len)
{
    fmt[0] = '\0';
    if (strcmp(path, "-") == 0)
        return;
    const char *base = strrchr(path, '/');
    const char *dot = strrchr(base ? base : path, '.');
    if (!dot || !dot[1] || strlen(dot + 1) >= len)
        return;
    size_t i = 0;
    for (const char *c = dot + 1; *c; c++)
        fmt[i++] = (char)tolower((unsigned char)*c);
    fmt[i] = '\0';
    if (strcmp(fmt, "dot") == 0 || strcmp(fmt, "gv") == 0)
        fmt[0] = '\0';
}

/* Whether Graphviz dot renders fmt: asks `dot -T?`, which lists its
 * formats ("Use one of: canon cmap ... xlib"). The list goes to known. */
static int hs_dot_knows(const char *dot, const char *fmt, char *known, size_t knownlen)
{
    known[0] = '\0';
    int fds[2];
    if (pipe(fds) != 0)
        return 0;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return 0;
    }
    if (pid == 0) {
        dup2(fds[1], 2);
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(dot, "dot", "-T?", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[4096];
    size_t have = 0;
    ssize_t got;
    while (have + 1 < sizeof buf && (got = read(fds[0], buf + have, sizeof buf - 1 - have)) != 0) {
        if (got < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        have += (size_t)got;
    }
    buf[have] = '\0';
    close(fds[0]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    const char *list = strstr(buf, "Use one of:");
    if (!list)
        return 0;
    list += strlen("Use one of:");
    snprintf(known, knownlen, "%s", list + strspn(list, " "));
    known[strcspn(known, "\n")] = '\0';
    size_t flen = strlen(fmt);
    for (const char *w = known; *w;) {
        size_t len = strcspn(w, " ");
        if (len == flen && strncmp(w, fmt, len) == 0)
            return 1;
        w += len + strspn(w + len, " ");
    }
    return 0;
}

/* Render dot_file to out_file in format fmt with Graphviz. 0 on success. */
static int hs_run_dot(const char *dot, const char *fmt, const char *dot_file, const char *out_file,
                      char *err, size_t errlen)
{
    char tflag[64];
    snprintf(tflag, sizeof tflag, "-T%s", fmt);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        execl(dot, "dot", tflag, "-o", out_file, dot_file, (char *)NULL);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            snprintf(err, errlen, "waitpid: %s", strerror(errno));
            return -1;
        }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, errlen, "Graphviz dot failed (status %d)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        return -1;
    }
    return 0;
}

enum { OPT_TITLE = HS_CLI_EXTRA, OPT_CALL_TREE, OPT_COMPACT_LABELS };

static int graph_extra(void *ctx, hs_analysis_options *o, int code, const char *arg, char *err,
                       size_t errlen)
{
    (void)err;
    (void)errlen;
    if (code == OPT_TITLE)
        *(const char **)ctx = arg;
    else if (code == OPT_CALL_TREE)
        o->call_tree = true;
    else
        o->compact_labels = true;
    return 0;
}

int hs_cmd_graph(int argc, char **argv)
{
    static const hs_cli_extra extras[] = {
        {"title", required_argument, OPT_TITLE},
        {"call-tree", no_argument, OPT_CALL_TREE},
        {"compact-labels", no_argument, OPT_COMPACT_LABELS},
        {NULL, 0, 0},
    };
    static const hs_cli_spec spec = {
        .name = "graph", .usage = hs_graph_usage, .kind = HS_KIND_GRAPH,
        .takes = HS_CLI_FILTERS | HS_CLI_TRIM | HS_CLI_OUTPUT, .shared_help = true,
        .fetch_help = true, .does_not_apply = true,
        .base_msg = "--base applies to top, peek, list, tree, traces and merge",
        .extras = extras, .extra = graph_extra, .min_args = 1, .max_args = -1,
        .missing_msg = "missing profile FILE (see hotspur graph --help)"};
    hs_analysis_options o;
    const char *output = "-", *title = NULL;
    char msg[1024];
    int first = 0;
    int rc = hs_cli_parse(&spec, argc, argv, &o, &title, &output, &first);
    if (rc >= 0)
        return rc;
    rc = 2;
    char dot[4096], fmt[32], known[2048];
    hs_graph_format(output, fmt, sizeof fmt);
    int svg = fmt[0] != '\0'; /* rendered by dot (any format, not only SVG) */
    if (svg && hs_find_in_path("dot", dot, sizeof dot) != 0) {
        snprintf(msg, sizeof msg, ".%.20s output needs Graphviz `dot` in PATH (install graphviz, or write .dot)",
                 fmt);
        hs_analysis_options_free(&o);
        return hs_cli_fail(spec.name, NULL, msg);
    }
    if (svg && !hs_dot_knows(dot, fmt, known, sizeof known)) {
        snprintf(msg, sizeof msg, "%.200s: Graphviz dot cannot write .%.20s files (it knows: %.600s; .dot writes DOT text)",
                 output, fmt, *known ? known : "none listed");
        hs_analysis_options_free(&o);
        return hs_cli_fail(spec.name, NULL, msg);
    }
    hs_analysis_apply_defaults(&o, HS_KIND_GRAPH);

    int n = argc - first;
    hs_profile **ps = NULL;
    hs_view *v = NULL, *tree_src = NULL;
    char *auto_title = NULL;
    char dot_tmp[4200] = "";
    if (hs_acli_load(spec.name, NULL, argv + first, n, true, &ps) != 0)
        goto done;
    if (!title && (auto_title = hs_acli_join_names(argv + first, n)))
        title = auto_title;
    v = hs_view_build(ps, (size_t)n, NULL, 0, &o, msg, sizeof msg);
    if (!v) {
        hs_cli_fail(spec.name, NULL, msg);
        goto done;
    }
    if (v->warnings && *v->warnings)
        fputs(v->warnings, stderr);
    if (o.call_tree) { /* pprof's -call_tree: one node per call path */
        hs_view *t = hs_view_call_tree(v, msg, sizeof msg);
        if (!t) {
            hs_cli_fail(spec.name, NULL, msg);
            goto done;
        }
        tree_src = v;
        v = t;
    }

    char err[512];
    hs_cli_out out;
    /* SVG: the DOT goes to a temp file next to the output, then dot renders
     * it into the output's temp file, renamed into place on success. */
    if (svg)
        snprintf(dot_tmp, sizeof dot_tmp, "%s.dot", output);
    if (hs_cli_out_open(&out, svg ? dot_tmp : output, err, sizeof err) != 0) {
        hs_cli_fail(spec.name, NULL, err);
        goto done;
    }
    int ok = hs_report_graph(v, &o, title, out.f, err, sizeof err) == 0;
    if (hs_cli_out_close(&out, ok, err, sizeof err) != 0) {
        fprintf(stderr, "hotspur graph: %s\n", err);
        rc = 1;
        goto done;
    }
    if (svg) {
        hs_cli_out sv;
        if (hs_cli_out_open(&sv, output, err, sizeof err) != 0) {
            unlink(dot_tmp);
            hs_cli_fail(spec.name, NULL, err);
            goto done;
        }
        fclose(sv.f); /* dot writes the temp file (or a device, FIFO) by name */
        sv.f = NULL;
        int drc = hs_run_dot(dot, fmt, dot_tmp, sv.tmp[0] ? sv.tmp : output, err, sizeof err);
        unlink(dot_tmp);
        if (drc != 0) {
            if (sv.tmp[0])
                unlink(sv.tmp);
            fprintf(stderr, "hotspur graph: %s\n", err);
            rc = 1;
            goto done;
        }
        if (sv.tmp[0] && rename(sv.tmp, output) != 0) {
            unlink(sv.tmp);
            fprintf(stderr, "hotspur graph: %s: %s\n", output, strerror(errno));
            rc = 1;
            goto done;
        }
    }
    if (strcmp(output, "-") != 0)
        fprintf(stderr, "hotspur graph: wrote %s\n", output);
    rc = 0;
done:
    hs_view_free(v);
    hs_view_free(tree_src);
    hs_acli_free_profiles(ps, ps ? n : 0);
    free(auto_title);
    hs_analysis_options_free(&o);
    return rc;
}
