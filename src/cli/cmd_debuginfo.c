/* cmd_debuginfo.c — `hotspur debuginfo upload|ls|rm`: the debug info a
 * `hotspur serve` names frames with (docs/debuginfo.md), from CI as
 * parca-debuginfo does: each FILE (an unstripped binary or a .debug file)
 * is PUT to /api/v1/debuginfo/BUILD_ID, its build ID read here (--vdso:
 * this host's vDSO image, for servers on other kernels). The
 * server is --server URL, else $HOTSPUR_SERVER, else
 * http://127.0.0.1:4040; $HOTSPUR_TOKEN is sent as a bearer token. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "cli/fetch.h"
#include "symbolize/symbolize.h"

static void debuginfo_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur debuginfo upload [--server URL] [--vdso] FILE...\n"
            "       hotspur debuginfo ls [--server URL]\n"
            "       hotspur debuginfo rm [--server URL] BUILD_ID|FILE...\n"
            "\n"
            "Manage the debug info a `hotspur serve` names frames with, for profiles\n"
            "sent with addresses (HOTSPUR_SYMBOLIZE=server, the host agent): upload an\n"
            "unstripped binary or its .debug file (objcopy --only-keep-debug) from CI,\n"
            "list what the server keeps, remove it. Files are keyed by their GNU build\n"
            "ID; profiles already stored are named once their debug info arrives.\n"
            "\n"
            "  --server URL   the server (default $HOTSPUR_SERVER, else\n"
            "                 http://127.0.0.1:4040); $HOTSPUR_TOKEN is sent as a\n"
            "                 bearer token\n"
            "  --vdso         upload this host's vDSO too (the kernel's; a server on\n"
            "                 another kernel cannot name vDSO frames without it)\n"
            "  -h, --help     show this help\n"
            "\n"
            "See docs/debuginfo.md.\n");
}

/* url = server + path, without a doubled slash. */
static char *join(const char *server, const char *path)
{
    size_t n = strlen(server);
    while (n && server[n - 1] == '/')
        n--;
    char *u = malloc(n + strlen(path) + 1);
    if (u) {
        memcpy(u, server, n);
        strcpy(u + n, path);
    }
    return u;
}

/* PUT the size bytes of f as build ID bid's debug info; `what` names it. */
static int put_file(const char *server, const char *bid, FILE *f, uint64_t size, const char *what)
{
    char path[256], err[512];
    snprintf(path, sizeof path, "/api/v1/debuginfo/%s", bid);
    char *url = join(server, path), *out = NULL;
    size_t len = 0;
    int rc = url ? hs_fetch_request("PUT", url, f, size, &out, &len, err, sizeof err) : -1;
    if (rc == 0)
        printf("%s %s: uploaded (%llu bytes)\n", bid, what, (unsigned long long)size);
    else
        fprintf(stderr, "hotspur debuginfo: %s: %s\n", what, url ? err : "out of memory");
    free(out);
    free(url);
    return rc == 0 ? 0 : 1;
}

static int upload(const char *server, const char *file)
{
    char bid[160];
    int r = hs_elf_build_id(file, bid, sizeof bid);
    if (r != 0) {
        fprintf(stderr, "hotspur debuginfo: %s: %s\n", file, r < 0 ? "not a readable ELF file" : "has no build ID");
        return 1;
    }
    FILE *f = fopen(file, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        fprintf(stderr, "hotspur debuginfo: %s: cannot open it\n", file);
        if (f)
            fclose(f);
        return 1;
    }
    int rc = put_file(server, bid, f, (uint64_t)st.st_size, file);
    fclose(f);
    return rc;
}

/* This host's vDSO image (the kernel's, the same in every process). */
static int upload_vdso(const char *server)
{
    const void *img;
    size_t size;
    char bid[HS_VDSO_BUILD_ID_MAX + 1];
    if (hs_own_vdso(&img, &size, bid, sizeof bid) != 0 || !bid[0]) {
        fprintf(stderr, "hotspur debuginfo: this process has no vDSO with a build ID\n");
        return 1;
    }
    FILE *f = tmpfile();
    if (!f || fwrite(img, 1, size, f) != size || fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "hotspur debuginfo: cannot copy the vDSO to a temporary file\n");
        if (f)
            fclose(f);
        return 1;
    }
    int rc = put_file(server, bid, f, size, "[vdso]");
    fclose(f);
    return rc;
}

static int list(const char *server)
{
    char err[512], *out = NULL;
    size_t len = 0;
    char *url = join(server, "/api/v1/debuginfo");
    if (!url || hs_fetch_url(url, &out, &len, err, sizeof err) != 0) {
        fprintf(stderr, "hotspur debuginfo: %s\n", url ? err : "out of memory");
        free(url);
        return 1;
    }
    free(url);
    json_error_t je;
    json_t *root = json_loadb(out, len, 0, &je), *ups = json_object_get(root, "uploads");
    free(out);
    if (!json_is_array(ups)) {
        fprintf(stderr, "hotspur debuginfo: the server's answer has no uploads list\n");
        json_decref(root);
        return 1;
    }
    printf("%-42s %12s  %s\n", "BUILD ID", "SIZE", "UPLOADED (UTC)");
    size_t i;
    json_t *u;
    json_array_foreach(ups, i, u) {
        time_t t = (time_t)json_integer_value(json_object_get(u, "time"));
        struct tm tm;
        char when[32] = "";
        if (gmtime_r(&t, &tm))
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
        printf("%-42s %12lld  %s\n", json_string_value(json_object_get(u, "build_id")),
               (long long)json_integer_value(json_object_get(u, "size")), when);
    }
    json_decref(root);
    return 0;
}

static int remove_one(const char *server, const char *arg)
{
    char bid[160], err[512];
    if (hs_elf_build_id(arg, bid, sizeof bid) != 0)
        snprintf(bid, sizeof bid, "%s", arg); /* not a file: a build ID */
    char path[256];
    snprintf(path, sizeof path, "/api/v1/debuginfo/%.150s", bid);
    char *url = join(server, path), *out = NULL;
    size_t len = 0;
    int rc = url ? hs_fetch_request("DELETE", url, NULL, 0, &out, &len, err, sizeof err) : -1;
    if (rc == 0)
        printf("%s: removed\n", bid);
    else
        fprintf(stderr, "hotspur debuginfo: %s: %s\n", arg, url ? err : "out of memory");
    free(out);
    free(url);
    return rc == 0 ? 0 : 1;
}

enum { OPT_SERVER = HS_CLI_EXTRA, OPT_VDSO };

typedef struct {
    const char *sub, *server;
    int vdso;
} debuginfo_args;

static int debuginfo_extra(void *ctx, hs_analysis_options *o, int code, const char *arg, char *err,
                           size_t errlen)
{
    debuginfo_args *a = ctx;
    (void)o;
    if (code == OPT_SERVER) {
        a->server = arg;
    } else if (strcmp(a->sub, "upload") == 0) {
        a->vdso = 1;
    } else {
        snprintf(err, errlen, "--vdso goes with upload (see hotspur debuginfo --help)");
        return -1;
    }
    return 0;
}

int hs_cmd_debuginfo(int argc, char **argv)
{
    static const hs_cli_extra extras[] = {
        {"server", required_argument, OPT_SERVER},
        {"vdso", no_argument, OPT_VDSO},
        {NULL, 0, 0},
    };
    static const hs_cli_spec spec = {.name = "debuginfo", .usage = debuginfo_usage, .extras = extras,
                                      .extra = debuginfo_extra, .in_order = true, .max_args = -1};
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        debuginfo_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    debuginfo_args a = {.sub = argv[1], .server = getenv("HOTSPUR_SERVER")};
    if (!a.server || !*a.server)
        a.server = "http://127.0.0.1:4040";
    int first = 0;
    /* the subcommand's options: argv[1] is their argv[0] */
    int prc = hs_cli_parse(&spec, argc - 1, argv + 1, NULL, &a, NULL, &first);
    if (prc >= 0)
        return prc;
    first++;
    const char *sub = a.sub, *server = a.server;
    int vdso = a.vdso;
    int rc = 0;
    if (strcmp(sub, "upload") == 0 || strcmp(sub, "rm") == 0) {
        if (first >= argc && !vdso)
            return hs_cli_fail("debuginfo", sub, "no FILE given (see hotspur debuginfo --help)");
        for (int i = first; i < argc; i++)
            rc |= sub[0] == 'u' ? upload(server, argv[i]) : remove_one(server, argv[i]);
        if (vdso)
            rc |= upload_vdso(server);
        return rc;
    }
    if (strcmp(sub, "ls") == 0) {
        if (first < argc)
            return hs_cli_fail("debuginfo", "ls", "takes no arguments (see hotspur debuginfo --help)");
        return list(server);
    }
    fprintf(stderr, "hotspur debuginfo: unknown subcommand '%s' (upload, ls, rm)\n", sub);
    return 2;
}
