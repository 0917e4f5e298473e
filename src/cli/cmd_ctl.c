/* cmd_ctl.c — `hotspur ctl`: talk to running processes that have the agent
 * loaded, through the control socket each of them listens on,
 * $HOTSPUR_RUNTIME_DIR/<pid>.sock (default /tmp/hotspur-<uid>).
 *
 *   hotspur ctl                 list the processes that can be reached
 *   hotspur ctl PID status      one process's state
 *   hotspur ctl PID dump [-o T] write its profiles now (T: file name template)
 *   hotspur ctl PID stop|start  stop or resume sampling
 *
 * Protocol (the agent's side is src/agent): the client sends one line
 * ("status", "dump", "dump TEMPLATE", "stop", "start"); the agent answers
 * lines and closes the connection: "ok ...", for dump one "file PATH" line
 * per file then "end"; or "error MESSAGE". This file only speaks the
 * protocol: it never signals the process, so the program's own signals are
 * untouched. The agent refuses peers of another uid; this side also checks
 * the uid of the process behind the socket, so a socket planted by another
 * user is never trusted. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent/control_path.h"
#include "base/clock.h"
#include "cli/cli_options.h"
#include "cli/commands.h"

#define CTL_DEFAULT_TIMEOUT 10.0 /* seconds to wait for an answer */
#define CTL_MAX_REPLY 65536      /* bytes of an answer we accept */

static const char ctl_usage[] =
    "usage: hotspur ctl [--timeout SEC]\n"
    "       hotspur ctl [--timeout SEC] PID status|stop|start\n"
    "       hotspur ctl [--timeout SEC] PID dump [-o TEMPLATE]\n"
    "\n"
    "Talk to a running process that has the hotspur agent loaded (started by\n"
    "`hotspur record`, LD_PRELOAD, or linked with -lhotspur). Every such process\n"
    "listens on the Unix socket $HOTSPUR_RUNTIME_DIR/PID.sock (default\n"
    "/tmp/hotspur-UID, a directory only its user can enter); only processes of\n"
    "the same user can be reached. No signal is sent to the process.\n"
    "\n"
    "Without PID: list the reachable processes (pid, command, profile types,\n"
    "state, dumps so far). Sockets left behind by processes that are gone are\n"
    "removed quietly.\n"
    "\n"
    "Commands:\n"
    "  status             print the agent's state (the default without a command)\n"
    "  dump [-o TEMPLATE] write every enabled profile now, covering the time since\n"
    "                     the previous dump (or the start), and print the files\n"
    "                     written, one 'file PATH' line each. Default names: the\n"
    "                     process's output template with the dump's sequence\n"
    "                     number (out.1.pb.gz, out.2.pb.gz, ...); with several\n"
    "                     types each name also carries its type\n"
    "                     (out.1.cpu.pb.gz). TEMPLATE takes %p (pid), %t (start\n"
    "                     time, Unix s), %n (sequence number) and is used as\n"
    "                     given (without %n the next dump to it overwrites it);\n"
    "                     a relative TEMPLATE is relative to the current\n"
    "                     directory of `hotspur ctl`, not of the process\n"
    "  stop               stop sampling (what was collected is kept)\n"
    "  start              resume sampling\n"
    "\n"
    "Options:\n"
    "  -t, --timeout SEC  seconds to wait for the answer (default 10; or a duration:\n"
    "                     500ms, 2m)\n"
    "  -h, --help         show this help\n"
    "\n"
    "The agent's answer is printed on stdout ('ok ...', 'file PATH' lines).\n"
    "Exit status: 0 done; 1 the agent answered 'error ...' (printed on stderr)\n"
    "or did not answer in time; 2 usage error, no such process, no agent in\n"
    "that process, or permission denied.\n";

/* An error line on stderr; returns rc so callers can `return ctl_err(...)`. */
__attribute__((format(printf, 2, 3))) static int ctl_err(int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("hotspur ctl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return rc;
}

/* DIR/PID.sock; -1 if it does not fit. */
static int ctl_sock_path(const char *dir, pid_t pid, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "%s/%d.sock", dir, (int)pid);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

static int ctl_parse_pid(const char *s, pid_t *pid)
{
    long v;
    if (hs_cli_parse_long(s, 1, INT_MAX, &v) < 0)
        return -1;
    *pid = (pid_t)v;
    return 0;
}

/* Seconds, or a duration by the one grammar (base/units.h), in (0, 3600]. */
static int ctl_parse_timeout(const char *s, double *out)
{
    double v;
    if (hs_cli_parse_seconds(s, &v) != 0 || v > 3600)
        return -1;
    *out = v;
    return 0;
}

static int ctl_pid_alive(pid_t pid)
{
    return kill(pid, 0) == 0 || errno == EPERM;
}

static double ctl_now(void)
{
    return hs_monotonic_ns() / 1e9;
}

/* The outcome of one exchange with an agent. */
enum ctl_status {
    CTL_OK,        /* answered "ok ..." */
    CTL_AGENT_ERR, /* answered "error ..." */
    CTL_NO_SOCKET, /* no socket file */
    CTL_REFUSED,   /* socket file without a listener */
    CTL_DENIED,    /* permission denied (directory, socket or peer uid) */
    CTL_FAILED,    /* anything else: timeout, bad answer, I/O error */
};

typedef struct {
    char reply[CTL_MAX_REPLY + 1]; /* the answer, NUL-terminated */
    size_t len;
    char why[256]; /* for CTL_FAILED / CTL_DENIED: what went wrong */
} ctl_answer;

/* Connect to PATH, send REQUEST (one line), read the whole answer. */
static enum ctl_status ctl_exchange(const char *path, const char *request, double timeout,
                                    ctl_answer *a)
{
    a->len = 0;
    a->reply[0] = 0;
    a->why[0] = 0;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(a->why, sizeof a->why, "socket path too long: %s", path);
        return CTL_FAILED;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(a->why, sizeof a->why, "socket: %s", strerror(errno));
        return CTL_FAILED;
    }
    enum ctl_status st = CTL_FAILED;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR)
            st = CTL_NO_SOCKET;
        else if (e == ECONNREFUSED)
            st = CTL_REFUSED;
        else if (e == EACCES || e == EPERM)
            st = CTL_DENIED;
        snprintf(a->why, sizeof a->why, "%s", strerror(e));
        goto out;
    }
    /* Only talk to a process of our own user: a socket someone else planted
     * in our directory is not trusted. */
    struct ucred cred;
    socklen_t clen = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0) {
        snprintf(a->why, sizeof a->why, "SO_PEERCRED: %s", strerror(errno));
        goto out;
    }
    if (cred.uid != getuid()) {
        snprintf(a->why, sizeof a->why, "the socket belongs to uid %u, not to us (uid %u)",
                 (unsigned)cred.uid, (unsigned)getuid());
        st = CTL_DENIED;
        goto out;
    }
    size_t rlen = strlen(request), off = 0;
    while (off < rlen) {
        ssize_t n = send(fd, request + off, rlen - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(a->why, sizeof a->why, "send: %s", strerror(errno));
            goto out;
        }
        off += (size_t)n;
    }
    double deadline = ctl_now() + timeout;
    for (;;) {
        double left = deadline - ctl_now();
        if (left <= 0) {
            snprintf(a->why, sizeof a->why, "no answer within %g s", timeout);
            goto out;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(a->why, sizeof a->why, "poll: %s", strerror(errno));
            goto out;
        }
        if (r == 0)
            continue; /* the deadline check above ends the loop */
        if (a->len == CTL_MAX_REPLY) {
            snprintf(a->why, sizeof a->why, "answer longer than %d bytes", CTL_MAX_REPLY);
            goto out;
        }
        ssize_t n = read(fd, a->reply + a->len, CTL_MAX_REPLY - a->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(a->why, sizeof a->why, "read: %s", strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        a->len += (size_t)n;
    }
    a->reply[a->len] = 0;
    if (strncmp(a->reply, "ok", 2) == 0 && (a->reply[2] == ' ' || a->reply[2] == '\n'))
        st = CTL_OK;
    else if (strncmp(a->reply, "error", 5) == 0 && (a->reply[5] == ' ' || a->reply[5] == '\n'))
        st = CTL_AGENT_ERR;
    else if (a->len == 0)
        snprintf(a->why, sizeof a->why, "closed the connection without answering");
    else
        snprintf(a->why, sizeof a->why, "unexpected answer: %.60s", a->reply);
out:
    close(fd);
    return st;
}

/* The value of KEY in an "ok k=v k=v" line, copied to out ("?" if absent). */
static void ctl_field(const char *line, const char *key, char *out, size_t outlen)
{
    size_t klen = strlen(key);
    const char *p = line;
    snprintf(out, outlen, "?");
    while ((p = strstr(p, key)) != NULL) {
        if ((p == line || p[-1] == ' ') && p[klen] == '=') {
            p += klen + 1;
            size_t n = strcspn(p, " \n");
            snprintf(out, outlen, "%.*s", (int)(n < outlen - 1 ? n : outlen - 1), p);
            return;
        }
        p += klen;
    }
}

static int ctl_pid_cmp(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

/* Remove a socket file nobody listens on (any more): quietly, since dead
 * processes' sockets are routine (a note only if it can't be removed). */
static void ctl_remove_stale(const char *path, pid_t pid, const char *why)
{
    if (unlink(path) != 0 && errno != ENOENT)
        ctl_err(0, "stale socket %s (process %d %s) could not be removed: %s", path, (int)pid,
                why, strerror(errno));
}

/* `hotspur ctl`: every <pid>.sock in the runtime directory, by pid. */
static int ctl_list(double timeout)
{
    char dir[PATH_MAX];
    hs_control_runtime_dir(dir, sizeof dir);
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT) {
            ctl_err(0, "no process to reach (%s does not exist)", dir);
            return 0;
        }
        return ctl_err(2, "%s: %s", dir, strerror(errno));
    }
    pid_t *pids = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char num[32];
        size_t l = strlen(e->d_name);
        pid_t pid;
        if (l < 6 || l - 5 >= sizeof num || strcmp(e->d_name + l - 5, ".sock") != 0)
            continue;
        memcpy(num, e->d_name, l - 5);
        num[l - 5] = 0;
        if (ctl_parse_pid(num, &pid) != 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            pid_t *np = realloc(pids, cap * sizeof *np);
            if (!np) {
                free(pids);
                closedir(d);
                return ctl_err(1, "out of memory");
            }
            pids = np;
        }
        pids[n++] = pid;
    }
    closedir(d);
    qsort(pids, n, sizeof *pids, ctl_pid_cmp);

    ctl_answer *a = malloc(sizeof *a);
    if (!a) {
        free(pids);
        return ctl_err(1, "out of memory");
    }
    size_t shown = 0;
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX];
        if (ctl_sock_path(dir, pids[i], path, sizeof path) != 0)
            continue;
        if (!ctl_pid_alive(pids[i])) {
            ctl_remove_stale(path, pids[i], "its process is gone");
            continue;
        }
        enum ctl_status st = ctl_exchange(path, "status\n", timeout, a);
        if (st == CTL_NO_SOCKET)
            continue; /* went away meanwhile */
        if (st == CTL_REFUSED) {
            /* Nobody listens on that file: its process is gone and the pid
             * reused, unless the agent is between bind and listen right now
             * (then the file is fresh). */
            struct stat sb;
            if (stat(path, &sb) == 0 && time(NULL) - sb.st_mtime > 2)
                ctl_remove_stale(path, pids[i], "nobody listens on it");
            continue;
        }
        if (shown++ == 0)
            printf("%-8s %-16s %-20s %-8s %s\n", "PID", "COMMAND", "TYPES", "STATE", "DUMPS");
        if (st != CTL_OK) {
            const char *msg = st == CTL_AGENT_ERR ? a->reply : a->why;
            printf("%-8d %-16s %-20s %-8s %s\n", (int)pids[i], "?", "?", "?", "?");
            ctl_err(0, "%d: %.*s", (int)pids[i], (int)strcspn(msg, "\n"), msg);
            continue;
        }
        char cmd[64], types[128], state[32], dumps[32];
        ctl_field(a->reply, "cmd", cmd, sizeof cmd);
        ctl_field(a->reply, "types", types, sizeof types);
        ctl_field(a->reply, "state", state, sizeof state);
        ctl_field(a->reply, "dumps", dumps, sizeof dumps);
        printf("%-8d %-16s %-20s %-8s %s\n", (int)pids[i], cmd, types, state, dumps);
    }
    if (shown == 0)
        ctl_err(0, "no process to reach in %s", dir);
    free(a);
    free(pids);
    return 0;
}

/* A relative template is made absolute against our working directory: the
 * agent would resolve it against the process's. */
static int ctl_absolute(const char *tmpl, char *out, size_t outlen)
{
    if (tmpl[0] == '/')
        return snprintf(out, outlen, "%s", tmpl) < (int)outlen ? 0 : -1;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return -1;
    return snprintf(out, outlen, "%s/%s", cwd, tmpl) < (int)outlen ? 0 : -1;
}

/* `hotspur ctl PID CMD`: one request, its answer on stdout. */
static int ctl_one(pid_t pid, const char *request, double timeout)
{
    char dir[PATH_MAX], path[PATH_MAX];
    hs_control_runtime_dir(dir, sizeof dir);
    if (ctl_sock_path(dir, pid, path, sizeof path) != 0)
        return ctl_err(2, "HOTSPUR_RUNTIME_DIR is too long: %s", dir);
    ctl_answer *a = malloc(sizeof *a);
    if (!a)
        return ctl_err(1, "out of memory");
    enum ctl_status st = ctl_exchange(path, request, timeout, a);
    int rc = 0;
    switch (st) {
    case CTL_OK: {
        /* Print the answer without the protocol's closing "end" line; a
         * dump answer must have one (else it was cut short). An "error"
         * line after "ok" (a dump that failed half-way) goes to stderr. */
        int ended = 0, failed = 0;
        char *line = a->reply;
        while (*line) {
            size_t l = strcspn(line, "\n");
            if (l == 3 && strncmp(line, "end", 3) == 0)
                ended = 1;
            else if (l >= 5 && strncmp(line, "error", 5) == 0)
                failed = ctl_err(1, "%d: %.*s", (int)pid, (int)(l > 6 ? l - 6 : 0),
                                 line + (l > 6 ? 6 : l));
            else
                printf("%.*s\n", (int)l, line);
            line += l + (line[l] == '\n');
        }
        if (failed)
            rc = failed;
        else if (strncmp(request, "dump", 4) == 0 && !ended)
            rc = ctl_err(1, "%d: the answer ended before 'end': some files may be missing",
                         (int)pid);
        break;
    }
    case CTL_AGENT_ERR: {
        const char *msg = a->reply + 5 + (a->reply[5] == ' ');
        rc = ctl_err(1, "%d: %.*s", (int)pid, (int)strcspn(msg, "\n"), msg);
        break;
    }
    case CTL_NO_SOCKET:
        if (!ctl_pid_alive(pid))
            rc = ctl_err(2, "no such process: %d", (int)pid);
        else
            rc = ctl_err(2, "process %d has no hotspur agent listening (no %s)", (int)pid, path);
        break;
    case CTL_REFUSED:
        if (!ctl_pid_alive(pid)) {
            ctl_remove_stale(path, pid, "its process is gone");
            rc = ctl_err(2, "no such process: %d", (int)pid);
        } else {
            rc = ctl_err(2, "process %d: nobody listens on %s", (int)pid, path);
        }
        break;
    case CTL_DENIED:
        rc = ctl_err(2, "permission denied: %s: %s (only the same user can reach a process)",
                     path, a->why);
        break;
    case CTL_FAILED:
        rc = ctl_err(1, "%d: %s", (int)pid, a->why);
        break;
    }
    free(a);
    return rc;
}

static void ctl_help(FILE *out)
{
    fputs(ctl_usage, out);
}

enum { OPT_TIMEOUT = HS_CLI_EXTRA };

static int ctl_extra(void *ctx, hs_analysis_options *o, int code, const char *arg, char *err,
                     size_t errlen)
{
    (void)o;
    (void)code; /* OPT_TIMEOUT, the only one */
    if (ctl_parse_timeout(arg, ctx) != 0) {
        snprintf(err, errlen, "bad timeout '%s': seconds (or a duration: 500ms, 2m), more than 0 and at most 3600", arg);
        return -1;
    }
    return 0;
}

int hs_cmd_ctl(int argc, char **argv)
{
    static const hs_cli_extra extras[] = {
        {"timeout", required_argument, OPT_TIMEOUT},
        {NULL, 0, 0},
    };
    static const hs_cli_spec spec = {
        .name = "ctl", .usage = ctl_help, .takes = HS_CLI_OUTPUT, .extras = extras,
        .short_names = "t", .extra = ctl_extra, .min_args = 0, .max_args = 2,
    };
    double timeout = CTL_DEFAULT_TIMEOUT;
    const char *output = NULL;
    int first;
    int prc = hs_cli_parse(&spec, argc, argv, NULL, &timeout, &output, &first);
    if (prc >= 0)
        return prc;
    int npos = argc - first;
    const char *pos[2] = {npos > 0 ? argv[first] : NULL, npos > 1 ? argv[first + 1] : NULL};
    if (npos == 0) {
        if (output)
            return ctl_err(2, "-o applies to 'dump' only (see hotspur ctl --help)");
        return ctl_list(timeout);
    }
    pid_t pid;
    if (ctl_parse_pid(pos[0], &pid) != 0)
        return ctl_err(2, "'%s' is not a process id (see hotspur ctl --help)", pos[0]);
    const char *cmd = pos[1] ? pos[1] : "status";
    char request[PATH_MAX + 16];
    if (strcmp(cmd, "dump") == 0) {
        if (output) {
            char abs[PATH_MAX];
            if (!*output || strpbrk(output, "\n\r"))
                return ctl_err(2, "bad dump template: empty or contains a newline");
            if (ctl_absolute(output, abs, sizeof abs) != 0)
                return ctl_err(2, "dump template too long or no current directory: %s",
                               output);
            snprintf(request, sizeof request, "dump %s\n", abs);
        } else {
            snprintf(request, sizeof request, "dump\n");
        }
    } else if (strcmp(cmd, "status") == 0 || strcmp(cmd, "stop") == 0 ||
               strcmp(cmd, "start") == 0) {
        if (output)
            return ctl_err(2, "-o applies to 'dump' only (see hotspur ctl --help)");
        snprintf(request, sizeof request, "%s\n", cmd);
    } else {
        return ctl_err(2, "unknown command '%s': status, dump, stop or start", cmd);
    }
    return ctl_one(pid, request, timeout);
}
