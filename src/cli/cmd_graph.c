/* cmd_graph.c — `hotspur graph [-o out.dot|out.svg|out.png...] [filters]
 * FILE...`: the trimmed call graph (report/graph.c) as Graphviz DOT, or
 * rendered by Graphviz's `dot -T<ext>` in any format dot knows when the
 * output name ends in another extension (.svg, .png, .pdf, .gif, .ps...). */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

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
            "  -h, --help         show this help\n"
            "\n");
    hs_analysis_options_help(out, HS_KIND_GRAPH);
}

static int hs_graph_fail(const char *msg)
{
    fprintf(stderr, "hotspur graph: %s\n", msg);
    return 2;
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

int hs_cmd_graph(int argc, char **argv)
{
    enum { OPT_TITLE = 0x4900, OPT_CALL_TREE, OPT_COMPACT_LABELS };
    static const struct option longopts[] = {
        HS_ANALYSIS_LONGOPTS,
        {"output", required_argument, NULL, 'o'},
        {"title", required_argument, NULL, OPT_TITLE},
        {"call-tree", no_argument, NULL, OPT_CALL_TREE},
        {"compact-labels", no_argument, NULL, OPT_COMPACT_LABELS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    hs_analysis_options o;
    hs_analysis_options_init(&o);
    const char *output = "-", *title = NULL;
    char msg[1024];
    int c, rc = 2;
    opterr = 0;
    optind = 0;
    while ((c = getopt_long_only(argc, argv, ":ho:", longopts, NULL)) != -1) {
        if (c == HS_OPT_NORMALIZE || c == HS_OPT_SOURCE_PATH) {
            snprintf(msg, sizeof msg, "option '%s' does not apply to graph", argv[optind - 1]);
            hs_analysis_options_free(&o);
            return hs_graph_fail(msg);
        }
        if (c == HS_OPT_BASE) {
            hs_analysis_options_free(&o);
            return hs_graph_fail("--base applies to top, peek, list, tree, traces and merge");
        }
        int r = hs_analysis_parse_option(&o, c, optarg, msg, sizeof msg);
        if (r < 0) {
            hs_analysis_options_free(&o);
            return hs_graph_fail(msg);
        }
        if (r > 0)
            continue;
        switch (c) {
        case 'h':
            hs_graph_usage(stdout);
            hs_analysis_options_free(&o);
            return 0;
        case 'o':
            output = optarg;
            break;
        case OPT_TITLE:
            title = optarg;
            break;
        case OPT_CALL_TREE:
            o.call_tree = true;
            break;
        case OPT_COMPACT_LABELS:
            o.compact_labels = true;
            break;
        case ':':
            snprintf(msg, sizeof msg, "option '%s' needs an argument", argv[optind - 1]);
            hs_analysis_options_free(&o);
            return hs_graph_fail(msg);
        default:
            snprintf(msg, sizeof msg, "unknown option '%s' (see hotspur graph --help)",
                     argv[optind - 1]);
            hs_analysis_options_free(&o);
            return hs_graph_fail(msg);
        }
    }
    if (optind >= argc) {
        hs_analysis_options_free(&o);
        return hs_graph_fail("missing profile FILE (see hotspur graph --help)");
    }
    char dot[4096], fmt[32], known[2048];
    hs_graph_format(output, fmt, sizeof fmt);
    int svg = fmt[0] != '\0'; /* rendered by dot (any format, not only SVG) */
    if (svg && hs_find_in_path("dot", dot, sizeof dot) != 0) {
        snprintf(msg, sizeof msg, ".%s output needs Graphviz `dot` in PATH (install graphviz, or write .dot)",
                 fmt);
        hs_analysis_options_free(&o);
        return hs_graph_fail(msg);
    }
    if (svg && !hs_dot_knows(dot, fmt, known, sizeof known)) {
        snprintf(msg, sizeof msg, "%.200s: Graphviz dot cannot write .%s files (it knows: %.600s; .dot writes DOT text)",
                 output, fmt, *known ? known : "none listed");
        hs_analysis_options_free(&o);
        return hs_graph_fail(msg);
    }
    hs_analysis_apply_defaults(&o, HS_KIND_GRAPH);

    size_t n = (size_t)(argc - optind);
    hs_profile **ps = calloc(n, sizeof *ps);
    hs_view *v = NULL, *tree_src = NULL;
    char *auto_title = NULL;
    char dot_tmp[4200] = "";
    if (!ps) {
        hs_analysis_options_free(&o);
        return hs_graph_fail("out of memory");
    }
    size_t title_len = 1;
    for (size_t i = 0; i < n; i++) {
        char err[512];
        const char *path = argv[optind + (int)i];
        ps[i] = hs_cli_load(path, NULL, err, sizeof err);
        /* the profile's drop_frames/keep_frames, as pprof applies them on load */
        if (ps[i] && hs_analysis_remove_uninteresting(ps[i], err, sizeof err) < 0) {
            hs_profile_free(ps[i]);
            ps[i] = NULL;
        }
        if (!ps[i]) {
            snprintf(msg, sizeof msg, "%s: %s", path, err);
            hs_graph_fail(msg);
            goto done;
        }
        title_len += strlen(path) + 2;
    }
    if (!title && (auto_title = calloc(1, title_len))) {
        for (size_t i = 0; i < n; i++) {
            if (i)
                strcat(auto_title, ", ");
            strcat(auto_title, argv[optind + (int)i]);
        }
        title = auto_title;
    }
    v = hs_view_build(ps, n, NULL, 0, &o, msg, sizeof msg);
    if (!v) {
        hs_graph_fail(msg);
        goto done;
    }
    if (v->warnings && *v->warnings)
        fputs(v->warnings, stderr);
    if (o.call_tree) { /* pprof's -call_tree: one node per call path */
        hs_view *t = hs_view_call_tree(v, msg, sizeof msg);
        if (!t) {
            hs_graph_fail(msg);
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
        hs_graph_fail(err);
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
            hs_graph_fail(err);
            goto done;
        }
        fclose(sv.f); /* dot writes the temp file by name */
        sv.f = NULL;
        int drc = hs_run_dot(dot, fmt, dot_tmp, sv.tmp, err, sizeof err);
        unlink(dot_tmp);
        if (drc != 0) {
            unlink(sv.tmp);
            fprintf(stderr, "hotspur graph: %s\n", err);
            rc = 1;
            goto done;
        }
        if (rename(sv.tmp, output) != 0) {
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
    for (size_t i = 0; i < n; i++)
        hs_profile_free(ps[i]);
    free(ps);
    free(auto_title);
    hs_analysis_options_free(&o);
    return rc;
}
