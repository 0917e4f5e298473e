/* control.c — the agent thread ("hotspur").
 *
 * One thread, created with the real pthread_create so it is never profiled,
 * with every signal blocked so it never takes the program's signals. It
 * sleeps in poll() on the control socket until the next wall-clock tick or
 * periodic event:
 *  - control socket: $HOTSPUR_RUNTIME_DIR/<pid>.sock (default directory
 *    /tmp/hotspur-<uid>, mode 0700); a peer of another uid is refused
 *    (SO_PEERCRED). One request line per connection: "status", "dump
 *    [TEMPLATE]", "stop", "start"; answers "ok ..." (dump: then a "file PATH"
 *    line per file and "end") or "error MESSAGE". No signals are involved,
 *    so the program's own signals are untouched. The thread binds it once
 *    the process has run LISTEN_DELAY_NS: a process that ends before (a
 *    shell of `make`, /bin/true) never creates and deletes a file for it,
 *    which on ext4 cost ~0.2 ms per process start;
 *  - periodic profiles (HOTSPUR_PERIOD, HOTSPUR_DURATION): at each period's
 *    start the counters are marked, after the duration every type is dumped;
 *    in continuous mode (upload.c) the window starts at a random point of
 *    the period and is uploaded instead, and the CPU, wall and lock
 *    samplers record only inside windows;
 *  - wall-clock ticks (wall.c); pre-faulting the sample tables once the
 *    process has lived 100 ms (the populate_tables operation);
 *  - a fatal SIGINT, SIGTERM or SIGHUP that the program left to the default
 *    action (so it would die writing nothing): the agent's handler hands it
 *    to this thread through a pipe; the thread writes the profiles as at
 *    exit, restores the default action and sends the signal again, so the
 *    process still ends by that signal. A second such signal while writing
 *    ends the process at once. Signals the program handles are untouched;
 *  - a crash (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL left at the default
 *    action) and _exit: the thread that crashes or calls _exit asks this
 *    thread to write the profiles (writing on a crashed thread, or in a
 *    signal handler that calls _exit, could deadlock on a lock the
 *    interrupted code holds) and waits for it, 10 s at most; then the
 *    crash takes its default course (the faulting instruction runs again
 *    with the default action: same status, same core dump) and _exit
 *    proceeds.
 */
#define _GNU_SOURCE
#include "agent/control.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent/core.h"
#include "agent/control_path.h"
#include "agent/upload.h"
#include "agent/fds.h"
#include "agent/sampler.h"
#include "agent/wall.h"


static const hs_control_ops *g_ops; /* what the agent thread asks of the agent */
static hs_fd g_listen = {.fd = -1};
static char g_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static _Atomic int g_stop;
static _Atomic int g_window_open;
static _Atomic int g_paused;
static hs_fd g_wake[2] = {{.fd = -1}, {.fd = -1}}; /* fatal-signal handler -> agent thread */
static _Atomic int g_fatal;      /* the fatal signal being handled, 0 none */
static int need_listen, need_wake; /* lost to the program: open again */
/* Set while the thread binds the socket. With g_stop (both sequentially
 * consistent) the thread either sees g_stop and binds nothing, or
 * hs_control_stop sees g_binding and waits for it: the exit never leaves a
 * socket file behind. No lock: hs_control_stop runs at exit, also in _exit
 * called from a signal handler. */
static _Atomic int g_binding;
#define LISTEN_DELAY_NS 50000000LL /* the socket appears once the process has run 50 ms */
static const int k_fatal[] = {SIGINT, SIGTERM, SIGHUP};
#define N_FATAL (sizeof k_fatal / sizeof *k_fatal)
static const int k_crash[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
#define N_CRASH (sizeof k_crash / sizeof *k_crash)
#define WAKE_WRITE 0x40          /* wake byte: write the profiles, then report */
#define WAKE_STOP 0x41           /* wake byte: g_stop is set (a detach): end now, not within 1 s */
static _Atomic int g_written;    /* the agent thread wrote them (WAKE_WRITE) */
static _Atomic int g_running;    /* the agent thread runs */

int hs_control_window_open(void)
{
    return atomic_load(&g_window_open);
}

int hs_control_window_close(void)
{
    return atomic_exchange(&g_window_open, 0);
}

/* ---- the socket ---- */

static int socket_dir(char *dir, size_t len)
{
    hs_control_runtime_dir(dir, len);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (lstat(dir, &st) != 0)
        return -1;
    /* Someone else's directory, or one others may write to: don't trust it. */
    if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 0077)) {
        errno = EPERM;
        return -1;
    }
    return 0;
}

static int open_socket(void)
{
    char dir[sizeof g_path - 24];
    if (socket_dir(dir, sizeof dir) != 0)
        return -1;
    snprintf(g_path, sizeof g_path, "%s/%d.sock", dir, (int)getpid());
    unlink(g_path); /* a stale socket of an earlier process with this pid */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", g_path);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || chmod(g_path, 0600) != 0 || listen(fd, 8) != 0) {
        int e = errno;
        close(fd);
        unlink(g_path);
        g_path[0] = 0;
        errno = e;
        return -1;
    }
    return fd;
}

/* Open the control socket into g_listen, unless the process is ending
 * (hs_control_stop); 0, or -1 with errno. */
static int listen_socket(void)
{
    atomic_store(&g_binding, 1);
    int fd = atomic_load(&g_stop) ? (errno = ESRCH, -1) : open_socket(), rc = 0;
    if (fd < 0) {
        rc = -1;
    } else if (hs_fd_keep(&g_listen, fd) != 0) {
        int e = errno;
        unlink(g_path);
        g_path[0] = 0;
        errno = e;
        rc = -1;
    }
    atomic_store(&g_binding, 0);
    return rc;
}

static void reply(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply(int fd, const char *fmt, ...)
{
    char buf[PATH_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0)
        (void)!write(fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* The path as the caller can use it: a daemon may have changed its
 * directory, so a relative name is made absolute here. */
static void on_file(const char *path, void *arg)
{
    char cwd[PATH_MAX];
    if (path[0] != '/' && getcwd(cwd, sizeof cwd))
        reply(*(int *)arg, "file %s/%s\n", strcmp(cwd, "/") == 0 ? "" : cwd, path);
    else
        reply(*(int *)arg, "file %s\n", path);
}

static void types_list(char *out, size_t len)
{
    out[0] = 0;
    const hs_config *c = &hs_g.cfg;
    snprintf(out, len, "%s%s%s%s", c->cpu ? "cpu," : "", c->wall_hz > 0 ? "wall," : "",
             c->lock ? "lock," : "", c->heap ? "heap," : "");
    size_t n = strlen(out);
    if (n)
        out[n - 1] = 0;
}

/* Answer request `line` (one line, without its newline) on fd. */
static void handle(int fd, const char *line)
{
    if (strcmp(line, "status") == 0) {
        char comm[32] = "?", types[64];
        FILE *f = fopen("/proc/self/comm", "re");
        if (f) {
            if (fgets(comm, sizeof comm, f))
                comm[strcspn(comm, "\n")] = 0;
            fclose(f);
        }
        types_list(types, sizeof types);
        char up[160] = "";
        if (hs_g.cfg.continuous)
            hs_upload_status(up, sizeof up);
        reply(fd, "ok pid=%d cmd=%s types=%s state=%s dumps=%d%s\n", (int)getpid(), comm, types,
              atomic_load(&g_paused) ? "stopped" : "running", hs_g.dumps, up);
    } else if (strcmp(line, "dump") == 0 || strncmp(line, "dump ", 5) == 0) {
        const char *tmpl = line[4] ? line + 5 : NULL;
        reply(fd, "ok dumping\n");
        int rc = g_ops->dump(tmpl && *tmpl ? tmpl : NULL, on_file, &fd);
        if (rc < 0)
            reply(fd, "error some profiles could not be written (see the program's stderr)\n");
        else
            reply(fd, "end\n");
    } else if (strcmp(line, "stop") == 0) {
        g_ops->pause();
        atomic_store(&g_paused, 1);
        reply(fd, "ok stopped\n");
    } else if (strcmp(line, "start") == 0) {
        g_ops->resume();
        atomic_store(&g_paused, 0);
        reply(fd, "ok running\n");
    } else {
        reply(fd, "error unknown request '%.64s' (want status, dump, stop or start)\n", line);
    }
}

/* ---- clients ----
 * A connection is read as its bytes come, in the thread's poll loop: a
 * client slowed down by a loaded machine is answered, and a silent one
 * never holds the thread (wall ticks, periodic windows) nor other clients. */

#define N_CLIENTS 4
#define CLIENT_WAIT_NS 10000000000LL /* to send the request line (ctl waits 10 s too) */

typedef struct {
    hs_fd fd; /* fd.fd < 0: free */
    int64_t deadline;
    size_t n;
    char line[PATH_MAX + 16];
} client;

static client g_clients[N_CLIENTS] = {[0 ... N_CLIENTS - 1] = {.fd = {.fd = -1}}};

static void client_close(client *c)
{
    hs_fd_drop(&c->fd);
}

static void clients_close_all(void)
{
    for (int i = 0; i < N_CLIENTS; i++)
        client_close(&g_clients[i]);
}

/* Read what client c sent; once its line is complete (newline, end of
 * stream, or full), answer it and close. */
static void client_read(client *c)
{
    for (;;) {
        ssize_t k = read(c->fd.fd, c->line + c->n, sizeof c->line - 1 - c->n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return; /* the rest later */
        if (k < 0) {
            client_close(c);
            return;
        }
        c->n += (size_t)k;
        c->line[c->n] = 0;
        char *nl = strchr(c->line, '\n');
        if (!nl && k > 0 && c->n < sizeof c->line - 1)
            continue;
        if (nl)
            *nl = 0;
        /* The socket stays non-blocking: an answer is a few lines, which
         * fit its buffer, and a client that doesn't read can't hold us. */
        handle(c->fd.fd, c->line);
        client_close(c);
        return;
    }
}

/* A connection waits on the listening socket: take it into a free slot. */
static void client_accept(int64_t now)
{
    client *c = NULL;
    for (int i = 0; i < N_CLIENTS && !c; i++)
        if (g_clients[i].fd.fd < 0)
            c = &g_clients[i];
    int fd = accept4(g_listen.fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0 || !c) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 || cred.uid != getuid()) {
        reply(fd, "error permission denied: not the same user\n");
        close(fd);
        return;
    }
    if (hs_fd_keep(&c->fd, fd) != 0)
        return;
    c->n = 0;
    c->deadline = now + CLIENT_WAIT_NS;
    client_read(c); /* usually all there already */
}

/* One poll entry per client (fd -1 when free or no longer ours); the
 * earliest deadline of a waiting client into *next. */
static void clients_poll_set(struct pollfd *p, int64_t *next)
{
    for (int i = 0; i < N_CLIENTS; i++) {
        client *c = &g_clients[i];
        if (c->fd.fd >= 0 && !hs_fd_valid(&c->fd))
            c->fd.fd = -1; /* the program closed it: never ours to close now */
        p[i] = (struct pollfd){c->fd.fd, POLLIN, 0};
        if (c->fd.fd >= 0 && c->deadline < *next)
            *next = c->deadline;
    }
}

/* After poll: read the clients that sent something, close the late ones. */
static void clients_serve(const struct pollfd *p, int64_t now)
{
    for (int i = 0; i < N_CLIENTS; i++) {
        client *c = &g_clients[i];
        if (c->fd.fd < 0 || p[i].fd != c->fd.fd)
            continue;
        if (p[i].revents)
            client_read(c);
        if (c->fd.fd >= 0 && now >= c->deadline) {
            reply(c->fd.fd, "error no request line within %lld s\n", CLIENT_WAIT_NS / 1000000000LL);
            client_close(c);
        }
    }
}

static int clients_full(void)
{
    for (int i = 0; i < N_CLIENTS; i++)
        if (g_clients[i].fd.fd < 0)
            return 0;
    return 1;
}

/* ---- fatal signals ---- */

static void on_fatal(int sig)
{
    int saved = errno, none = 0;
    if (atomic_compare_exchange_strong(&g_fatal, &none, sig) && hs_fd_valid(&g_wake[1])) {
        char c = (char)sig;
        if (send(g_wake[1].fd, &c, 1, MSG_NOSIGNAL) == 1) {
            errno = saved;
            return; /* the agent thread writes, then ends the process */
        }
    }
    /* A second one, or nobody to write: end as the default action would. */
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
    errno = saved;
}

/* Ask the agent thread to write the profiles; wait for it (10 s at most).
 * 0 written, -1 no agent thread to ask (or it did not finish). */
static int write_on_agent_thread(void)
{
    if (!atomic_load(&g_running) || !hs_fd_valid(&g_wake[1]))
        return -1;
    char c = WAKE_WRITE;
    if (send(g_wake[1].fd, &c, 1, MSG_NOSIGNAL) != 1)
        return -1;
    for (int i = 0; i < 10000 && !atomic_load(&g_written); i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return atomic_load(&g_written) ? 0 : -1;
}

int hs_control_write_before_exit(void)
{
    int none = 0;
    if (!atomic_compare_exchange_strong(&g_fatal, &none, WAKE_WRITE))
        return -1; /* a fatal signal is being handled already */
    return write_on_agent_thread();
}

static void on_crash(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    int saved = errno, none = 0;
    if (atomic_compare_exchange_strong(&g_fatal, &none, sig))
        write_on_agent_thread();
    /* Now the default action: a fault re-runs the faulting instruction and
     * dies of it; a signal that was sent (abort, kill) is sent again and
     * taken when this handler returns. */
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    if (si->si_code <= 0)
        raise(sig);
    errno = saved;
}

/* Take over the fatal signals the program left at their default action. */
/* The wake channel is a socket pair, written with MSG_NOSIGNAL: a program
 * thread that writes to it (a fatal signal, _exit) never gets SIGPIPE, even
 * if the agent thread's end is gone. */
static int open_wake(void)
{
    int p[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, p) != 0)
        return -1;
    if (hs_fd_keep(&g_wake[0], p[0]) != 0) {
        close(p[1]);
        return -1;
    }
    if (hs_fd_keep(&g_wake[1], p[1]) != 0) {
        hs_fd_drop(&g_wake[0]);
        return -1;
    }
    return 0;
}

static void catch_fatal(void)
{
    if (g_wake[0].fd < 0) /* start_thread opens it before the thread runs */
        return;
    for (size_t i = 0; i < N_FATAL; i++) {
        struct sigaction old;
        if (sigaction(k_fatal[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
            old.sa_handler != SIG_DFL)
            continue;
        struct sigaction sa = {.sa_handler = on_fatal, .sa_flags = SA_RESTART | SA_ONSTACK};
        sigemptyset(&sa.sa_mask);
        sigaction(k_fatal[i], &sa, NULL);
    }
    for (size_t i = 0; i < N_CRASH; i++) {
        struct sigaction old;
        if (sigaction(k_crash[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
            old.sa_handler != SIG_DFL)
            continue;
        struct sigaction sa = {.sa_sigaction = on_crash, .sa_flags = SA_SIGINFO | SA_ONSTACK};
        sigemptyset(&sa.sa_mask);
        sigaction(k_crash[i], &sa, NULL);
    }
}

/* Give the fatal signals still ours back to the default action. */
static void release_fatal(void)
{
    for (size_t i = 0; i < N_FATAL; i++) {
        struct sigaction cur;
        if (sigaction(k_fatal[i], NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
            cur.sa_handler == on_fatal) {
            struct sigaction dfl = {.sa_handler = SIG_DFL};
            sigemptyset(&dfl.sa_mask);
            sigaction(k_fatal[i], &dfl, NULL);
        }
    }
    for (size_t i = 0; i < N_CRASH; i++) {
        struct sigaction cur;
        if (sigaction(k_crash[i], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
            cur.sa_sigaction == on_crash) {
            struct sigaction dfl = {.sa_handler = SIG_DFL};
            sigemptyset(&dfl.sa_mask);
            sigaction(k_crash[i], &dfl, NULL);
        }
    }
}

static void close_wake(void)
{
    for (int i = 0; i < 2; i++)
        hs_fd_drop(&g_wake[i]);
    atomic_store(&g_fatal, 0);
}

/* On the agent thread: the profiles, then the signal's own end. */
static void die_of(int sig)
{
    g_ops->final_write();
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    kill(getpid(), sig); /* taken by a program thread: this one blocks all */
}

/* ---- the thread ---- */

/* The program may have closed our fds (closefrom(3)) and reused the
 * numbers: never poll, read or accept on what is no longer ours. A lost
 * socket or pipe is opened again (at most once a second). */
static void check_fds(int64_t now)
{
    static int64_t last_try;
    int lost_listen = g_listen.fd >= 0 && !hs_fd_valid(&g_listen);
    int lost_wake = g_wake[0].fd >= 0 && (!hs_fd_valid(&g_wake[0]) || !hs_fd_valid(&g_wake[1]));
    if (lost_listen) {
        g_listen.fd = -1; /* not ours any more: never closed by us */
        need_listen = 1;
    }
    if (lost_wake) {
        for (int i = 0; i < 2; i++)
            hs_fd_drop(&g_wake[i]); /* closes only an end still ours */
        need_wake = 1;
    }
    if ((!need_listen && !need_wake) || now - last_try < 1000000000LL)
        return;
    last_try = now;
    if (need_listen && listen_socket() == 0)
        need_listen = 0;
    if (need_wake && open_wake() == 0)
        need_wake = 0;
}

/* Continuous mode: the CPU, wall and lock samplers record only inside
 * windows (the heap keeps following its blocks: in-use is a state). */
static void window_samplers(int on)
{
    if (!hs_g.cfg.continuous || atomic_load(&g_paused))
        return;
    atomic_store(&hs_g.cpu_on, on && hs_g.cfg.cpu);
    atomic_store(&hs_g.wall_on, on && hs_g.cfg.wall_hz > 0);
    atomic_store(&hs_g.lock_on, on && hs_g.cfg.lock);
}

static void *control_main(void *unused)
{
    (void)unused;
    hs_self.in_agent = 1; /* nothing this thread does is the program's */
    atomic_store(&g_running, 1);
    hs_self.tid = hs_gettid();
    /* Named by itself (prctl): naming another thread writes its
     * /proc/self/task/TID/comm, which cost a short process ~3 ms of CPU. */
    pthread_setname_np(pthread_self(), "hotspur");
    int64_t now = hs_now_ns(CLOCK_MONOTONIC);
    int64_t wall_period = hs_g.cfg.wall_hz > 0 ? 1000000000LL / hs_g.cfg.wall_hz : 0;
    int64_t next_wall = wall_period ? now + wall_period : INT64_MAX;
    int64_t next_period = hs_g.cfg.period_ns ? now : INT64_MAX; /* the first period starts now */
    int first_period = 1; /* its window comes early (hs_upload_phase) */
    int64_t window_start = INT64_MAX, window_end = INT64_MAX;
    int64_t populate_at = now + 100000000LL; /* a process that lives 100 ms */
    int64_t listen_at = hs_g.cfg.control ? now + LISTEN_DELAY_NS : INT64_MAX;
    window_samplers(0);
    while (!atomic_load(&g_stop)) {
        now = hs_now_ns(CLOCK_MONOTONIC);
        int64_t next = next_wall;
        if (next_period < next)
            next = next_period;
        if (window_start < next)
            next = window_start;
        if (window_end < next)
            next = window_end;
        if (populate_at < next)
            next = populate_at;
        if (listen_at < next)
            next = listen_at;
        check_fds(now);
        struct pollfd p[2 + N_CLIENTS] = {{clients_full() ? -1 : g_listen.fd, POLLIN, 0}, {g_wake[0].fd, POLLIN, 0}};
        clients_poll_set(p + 2, &next);
        int timeout = next == INT64_MAX ? 1000 : (int)((next - now + 999999) / 1000000);
        if (timeout < 0)
            timeout = 0;
        if (timeout > 1000)
            timeout = 1000; /* notice g_stop */
        int r = poll(p, 2 + N_CLIENTS, timeout); /* a negative fd is ignored */
        if (r > 0 && (p[1].revents & POLLIN) && hs_fd_valid(&g_wake[0])) {
            char sig;
            if (read(g_wake[0].fd, &sig, 1) == 1 && sig != WAKE_STOP) { /* WAKE_STOP: the loop sees g_stop */
                if (sig == WAKE_WRITE) { /* a crash or _exit: its thread waits */
                    g_ops->final_write();
                    atomic_store(&g_written, 1);
                } else {
                    die_of(sig);
                }
                atomic_store(&g_running, 0);
                return NULL;
            }
        }
        now = hs_now_ns(CLOCK_MONOTONIC);
        clients_serve(p + 2, now);
        if (r > 0 && (p[0].revents & POLLIN) && hs_fd_valid(&g_listen))
            client_accept(now);
        if (now >= populate_at) {
            g_ops->populate_tables();
            populate_at = INT64_MAX;
        }
        if (now >= listen_at) {
            listen_at = INT64_MAX;
            if (listen_socket() != 0 && !atomic_load(&g_stop))
                fprintf(stderr, "hotspur: no control socket (%s): hotspur ctl can't reach this process\n",
                        strerror(errno));
        }
        if (now >= next_wall) {
            hs_wall_tick();
            next_wall += wall_period;
            if (next_wall <= now) /* fell behind (e.g. a long dump): skip ticks */
                next_wall = now + wall_period;
        }
        if (now >= next_period) { /* a period starts: place its window */
            const hs_config *c = &hs_g.cfg;
            window_start = next_period + (c->continuous ? hs_upload_phase(c->period_ns, c->duration_ns, first_period) : 0);
            first_period = 0;
            next_period += hs_g.cfg.period_ns;
            if (next_period <= now) /* fell behind: skip periods */
                next_period = now + hs_g.cfg.period_ns;
        }
        if (now >= window_start && window_end == INT64_MAX) {
            g_ops->mark();
            window_samplers(1);
            atomic_store(&g_window_open, 1);
            window_end = now + hs_g.cfg.duration_ns;
            window_start = INT64_MAX;
        }
        if (now >= window_end) {
            window_samplers(0);
            g_ops->window_end(); /* unless the exit write took it */
            window_end = INT64_MAX;
        }
    }
    /* Stopped: the socket (its file is unlinked by hs_control_stop) and the
     * clients are closed, not left open: after a detach the process runs
     * on, and each attach used to leave one listening socket behind. */
    hs_fd_drop(&g_listen);
    clients_close_all();
    atomic_store(&g_running, 0);
    return NULL;
}

static int start_thread(void)
{
    atomic_store(&g_stop, 0);
    atomic_store(&g_window_open, 0);
    atomic_store(&g_written, 0);
    atomic_store(&g_running, 0);
    need_listen = need_wake = 0;
    g_listen.fd = -1; /* bound by the thread, LISTEN_DELAY_NS from now */
    if (!hs_g.cfg.control && !hs_g.cfg.period_ns && !hs_g.cfg.wall_hz)
        return 0; /* nothing for a thread to do */
    /* Both ends before the thread runs: its check_fds, seeing one end set
     * and the other not yet, took the pair for lost and closed the read
     * end; the exit write then raised SIGPIPE in the program (a profiled
     * make -j2, ~2 000 processes, died of it, "Broken pipe", in about one
     * build of five). Without the pair the thread still runs, without
     * fatal-signal writes (catch_fatal gives up). */
    if (g_wake[0].fd < 0)
        (void)open_wake();
    sigset_t all, old;
    sigfillset(&all);
    hs_sampler_real_sigmask(SIG_SETMASK, &all, &old); /* the new thread inherits it */
    pthread_t t;
    int rc = hs_agent_thread_create(&t, control_main, NULL);
    hs_sampler_real_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    pthread_detach(t);
    catch_fatal();
    return 0;
}

int hs_control_start(const hs_control_ops *ops)
{
    g_ops = ops;
    return start_thread();
}

void hs_control_stop(void)
{
    atomic_store(&g_stop, 1);
    release_fatal(); /* exiting anyway: a signal now ends it the usual way */
    for (int i = 0; i < 1000 && atomic_load(&g_binding); i++) { /* a bind takes microseconds */
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    if (g_path[0])
        unlink(g_path);
    g_path[0] = 0;
    /* A detach (the process runs on): wake the thread so that it ends now;
     * the next attach waits for it (hotspur_attach_start). At an exit the
     * thread is left to its poll, as it always was. */
    char c = WAKE_STOP;
    if (hs_g.attached && atomic_load(&g_running) && hs_fd_valid(&g_wake[1]))
        (void)send(g_wake[1].fd, &c, 1, MSG_NOSIGNAL);
}

int hs_control_running(void)
{
    return atomic_load(&g_running);
}

void hs_control_forget_parent(void)
{
    /* The parent's thread did not come along; its socket and pipe did: a
     * child must never wake its parent's thread, nor wait for its bind. */
    atomic_store(&g_binding, 0);
    hs_fd_drop(&g_listen);
    g_path[0] = 0;
    close_wake();
    clients_close_all(); /* the parent answers them */
}

void hs_control_after_fork(void)
{
    atomic_store(&g_paused, 0);
    if (start_thread() != 0)
        fprintf(stderr, "hotspur: no control thread in child %d\n", (int)getpid());
}
