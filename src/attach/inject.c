/* inject.c — calling the target's own dlopen from outside (inject.h).
 *
 * How, in order:
 *   1. check (hs_inject_check): ours, no tracer, yama allows, a dynamic glibc
 *      whose libc.so.6 exports dlopen (glibc >= 2.34; __libc_dlopen_mode is
 *      gone), located from /proc/PID/maps and the file's .dynsym (libelf,
 *      read through /proc/PID/root so a container's libc is the one read);
 *   2. choose one thread, blocked in a system call other than futex if one
 *      is (/proc/PID/task/TID/syscall), PTRACE_SEIZE + PTRACE_INTERRUPT it;
 *   3. save its general registers and its whole FP/vector state (XSAVE area);
 *   4. for each call: a fresh frame below the red zone of its stack holding
 *      the string argument and a return address of 0, orig_rax = -1 (no
 *      system call restart while we run), rip = the function; the return to
 *      0 faults, the SIGSEGV stop is ours and is suppressed;
 *   5. write back the bytes of stack we wrote, the FP state and the
 *      registers as saved (orig_rax and the -ERESTART* rax included: the
 *      kernel then restarts the interrupted system call when the thread
 *      resumes, exactly as after a signal handler, as gdb and CRIU do), and
 *      detach; signals that came for that thread during the calls were held
 *      and are sent again after (tgkill: their siginfo is not kept).
 */
#define _GNU_SOURCE
#include "attach/inject.h"
#include "base/clock.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "hotspur attach: only x86-64 is supported"
#endif

#define MAX_HELD 16 /* signals held during the calls */

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* The value of "Key:" in /proc/PID/status, first number: 0, or -1. */
static int status_field(pid_t pid, const char *key, long *out)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t kl = strlen(key);
    int rc = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
            *out = strtol(line + kl + 1, NULL, 10);
            rc = 0;
            break;
        }
    fclose(f);
    return rc;
}

static int is_descendant(pid_t pid)
{
    pid_t me = getpid();
    long pp = pid;
    for (int i = 0; i < 4096 && pp > 1; i++) {
        if (pp == me)
            return 1;
        if (status_field((pid_t)pp, "PPid", &pp) < 0)
            return 0;
    }
    return 0;
}

typedef struct {
    char path[PATH_MAX];  /* libc's path as mapped in the target */
    uint64_t base;        /* where its first byte (offset 0) is mapped */
    int ld_seen, musl;
    /* the executable mappings of libc, the dynamic loader and the agent
     * (an earlier attach's): a thread stopped in them may hold malloc's,
     * the loader's or the agent's lock */
    uint64_t lo[16], hi[16];
    int nx;
} libc_map;

static int find_libc(pid_t pid, libc_map *m, char *err, size_t errlen)
{
    char path[64], line[PATH_MAX + 128];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return fail(err, errlen, "cannot read %s: %s", path, strerror(errno));
    memset(m, 0, sizeof *m);
    unsigned long cand_lo = 0, cand_hi = 0; /* the last offset-0 mapping of libc seen */
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, off;
        int name = 0;
        if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &lo, &hi, &off, &name) < 3 || !name)
            continue;
        char *p = line + name;
        p[strcspn(p, "\n")] = 0;
        const char *base = strrchr(p, '/');
        base = base ? base + 1 : p;
        if (strncmp(base, "ld-linux", 8) == 0)
            m->ld_seen = 1;
        int is_libc = strcmp(base, "libc.so.6") == 0 || strncmp(base, "libc-2.", 7) == 0;
        char perms[8] = "";
        sscanf(line, "%*s %7s", perms);
        if ((is_libc || strncmp(base, "ld-linux", 8) == 0 || strncmp(base, "libhotspur", 10) == 0) &&
            perms[2] == 'x' && m->nx < 16) {
            m->lo[m->nx] = lo;
            m->hi[m->nx++] = hi;
        }
        if (strncmp(base, "ld-musl", 7) == 0)
            m->musl = 1;
        /* The loaded libc: its offset-0 mapping is the one its code
         * mapping follows (or is). Another mapping of the file at offset 0
         * is a copy read as data (the agent's symbolizer, after an earlier
         * attach, maps libc.so.6 whole to read its symbols): a base taken
         * from it put the injected call in non-executable memory. */
        if (!m->base && is_libc && off == 0 && perms[2] != 'x') {
            cand_lo = lo;
            cand_hi = hi;
        } else if (!m->base && is_libc && perms[2] == 'x' && (off == 0 || lo == cand_hi)) {
            snprintf(m->path, sizeof m->path, "%s", p);
            m->base = off == 0 ? lo : cand_lo;
        }
    }
    fclose(f);
    if (m->musl)
        return fail(err, errlen, "process %d uses musl libc, which attach does not understand "
                    "(start it with the agent instead: hotspur record or LD_PRELOAD)", (int)pid);
    if (!m->base && !m->ld_seen)
        return fail(err, errlen, "process %d is statically linked: nothing can be loaded into it "
                    "(link it dynamically, or profile it from outside: hotspur record -p %d)",
                    (int)pid, (int)pid);
    if (!m->base)
        return fail(err, errlen, "process %d has no glibc libc.so.6 mapped "
                    "(start it with the agent instead: hotspur record or LD_PRELOAD)", (int)pid);
    return 0;
}

/* The addresses in the target of the named functions of its libc (0 when
 * absent). libc.so.6 has dlopen@@GLIBC_2.34 and the compat
 * dlopen@GLIBC_2.2.5 at the same address, so any definition serves. */
static int libc_symbols(pid_t pid, const libc_map *m, const char **names, uint64_t *addrs, int n,
                        char *err, size_t errlen)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "/proc/%d/root%s", (int)pid, m->path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, errlen, "cannot open the target's libc %s: %s", path, strerror(errno));
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    int rc = -1;
    uint64_t first_vaddr = UINT64_MAX;
    size_t nph = 0;
    if (!e || elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &nph) != 0) {
        fail(err, errlen, "the target's libc %s is not an ELF file we can read", m->path);
        goto out;
    }
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < first_vaddr)
            first_vaddr = ph.p_vaddr & ~(uint64_t)0xfff;
    }
    for (int i = 0; i < n; i++)
        addrs[i] = 0;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        size_t cnt = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
        for (size_t j = 0; d && j < cnt; j++) {
            GElf_Sym s;
            if (!gelf_getsym(d, (int)j, &s) || s.st_shndx == SHN_UNDEF || !s.st_value ||
                GELF_ST_TYPE(s.st_info) != STT_FUNC)
                continue;
            const char *nm = elf_strptr(e, sh.sh_link, s.st_name);
            for (int k = 0; nm && k < n; k++)
                if (!addrs[k] && strcmp(nm, names[k]) == 0)
                    addrs[k] = m->base + s.st_value - first_vaddr;
        }
    }
    rc = 0;
out:
    if (e)
        elf_end(e);
    close(fd);
    return rc;
}

int hs_inject_check(pid_t pid, char *err, size_t errlen)
{
    long uid = -1, tracer = 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    if (pid <= 0 || access(path, F_OK) != 0)
        return fail(err, errlen, "no process %d (see ps)", (int)pid);
    if (pid == getpid())
        return fail(err, errlen, "cannot attach to itself");
    if (status_field(pid, "Uid", &uid) < 0)
        return fail(err, errlen, "cannot read /proc/%d/status", (int)pid);
    if (geteuid() != 0 && (uid_t)uid != geteuid())
        return fail(err, errlen, "process %d belongs to uid %ld, not to you (uid %d): run attach as "
                    "that user, or as root", (int)pid, uid, (int)geteuid());
    if (status_field(pid, "TracerPid", &tracer) == 0 && tracer != 0)
        return fail(err, errlen, "process %d is already traced by process %ld (a debugger?): "
                    "detach it first", (int)pid, tracer);
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    int scope = 0;
    if (f) {
        if (fscanf(f, "%d", &scope) != 1)
            scope = 0;
        fclose(f);
    }
    if (scope >= 3)
        return fail(err, errlen, "ptrace is disabled on this host (kernel.yama.ptrace_scope = 3): "
                    "no process can be attached to until reboot");
    if (scope == 2 && geteuid() != 0)
        return fail(err, errlen, "kernel.yama.ptrace_scope = 2 lets only root attach: run as root "
                    "(or sysctl kernel.yama.ptrace_scope=1)");
    if (scope == 1 && geteuid() != 0 && !is_descendant(pid))
        return fail(err, errlen, "kernel.yama.ptrace_scope = 1 lets a process attach only to its "
                    "descendants: run as root, give hotspur CAP_SYS_PTRACE, or sysctl "
                    "kernel.yama.ptrace_scope=0");
    libc_map m;
    if (find_libc(pid, &m, err, errlen) < 0)
        return -1;
    const char *names[] = {"dlopen"};
    uint64_t a[1];
    if (libc_symbols(pid, &m, names, a, 1, err, errlen) < 0)
        return -1;
    if (!a[0])
        return fail(err, errlen, "the libc of process %d (%s) has no dlopen: glibc older than 2.34 "
                    "is not supported (start the program with the agent: hotspur record or "
                    "LD_PRELOAD)", (int)pid, m.path);
    return 0;
}

/* A thread of pid blocked in a system call other than futex, or pid. */
static pid_t choose_thread(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return pid;
    pid_t best = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!isdigit((unsigned char)de->d_name[0]))
            continue;
        pid_t tid = (pid_t)atoi(de->d_name);
        char p2[96], buf[256];
        snprintf(p2, sizeof p2, "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
        FILE *f = fopen(p2, "r");
        if (!f)
            continue;
        long nr = -1;
        if (fgets(buf, sizeof buf, f) && isdigit((unsigned char)buf[0]))
            nr = strtol(buf, NULL, 10);
        fclose(f);
        if (nr >= 0 && nr != SYS_futex && (!best || tid == pid))
            best = tid; /* the main thread first among equals */
    }
    closedir(d);
    return best ? best : pid;
}

typedef struct {
    pid_t tid;
    int memfd;
    struct user_regs_struct saved;
    unsigned char *xstate;
    struct iovec xiov;
    int have_xstate;
    struct user_fpregs_struct fp; /* when XSAVE state cannot be read */
    int held[MAX_HELD], nheld;
    int64_t call_ns;
} tracee;

static int mem_rw(tracee *t, int write, uint64_t addr, void *buf, size_t len)
{
    ssize_t r = write ? pwrite(t->memfd, buf, len, (off_t)addr) : pread(t->memfd, buf, len, (off_t)addr);
    return r == (ssize_t)len ? 0 : -1;
}

/* Wait for the stop of t->tid that ends a call: 0 with the registers, or
 * -1 (the process is gone, or the call crashed; err says). Signals for the
 * thread meanwhile are held. */
static int wait_call(tracee *t, struct user_regs_struct *r, char *err, size_t errlen)
{
    for (;;) {
        int st;
        if (waitpid(t->tid, &st, __WALL) < 0)
            return fail(err, errlen, "waitpid: %s", strerror(errno));
        if (WIFEXITED(st) || WIFSIGNALED(st))
            return fail(err, errlen, "the process ended during the injected call");
        if (!WIFSTOPPED(st))
            continue;
        int sig = WSTOPSIG(st);
        if ((st >> 16) != 0) { /* an event stop (group stop): go on */
            ptrace(PTRACE_CONT, t->tid, 0, 0);
            continue;
        }
        if (sig == SIGSEGV) {
            if (ptrace(PTRACE_GETREGS, t->tid, 0, r) < 0)
                return fail(err, errlen, "PTRACE_GETREGS: %s", strerror(errno));
            if (r->rip == 0)
                return 0; /* our return address */
            /* a real crash in the call: let the process have it */
            ptrace(PTRACE_CONT, t->tid, 0, (void *)(long)sig);
            return fail(err, errlen, "the injected call crashed (SIGSEGV at %#llx)",
                        (unsigned long long)r->rip);
        }
        if (t->nheld < MAX_HELD)
            t->held[t->nheld++] = sig;
        ptrace(PTRACE_CONT, t->tid, 0, 0);
    }
}

/* fn(a0, a1) in the stopped thread; str, when not NULL, is copied onto its
 * stack and passed in place of argument number str_arg (0 or 1). */
static int call(tracee *t, uint64_t fn, const char *str, int str_arg, uint64_t a0, uint64_t a1,
                uint64_t *ret, char *err, size_t errlen)
{
    struct user_regs_struct r = t->saved;
    uint64_t sp = (t->saved.rsp - 128 - 256) & ~(uint64_t)15; /* below the red zone */
    size_t len = str ? strlen(str) + 1 : 0;
    uint64_t lo = (sp - len) & ~(uint64_t)15;
    uint64_t frame = lo - 8; /* the return address; rsp % 16 == 8 at entry, as after a call */
    size_t span = (size_t)(sp - frame);
    unsigned char *old = malloc(span), *buf = calloc(1, span);
    if (!old || !buf) {
        free(old);
        free(buf);
        return fail(err, errlen, "out of memory");
    }
    int rc = -1;
    if (mem_rw(t, 0, frame, old, span) < 0) {
        fail(err, errlen, "cannot read the thread's stack at %#llx", (unsigned long long)frame);
        goto out;
    }
    if (str) {
        memcpy(buf + (lo - frame), str, len);
        if (str_arg == 0)
            a0 = lo;
        else
            a1 = lo;
    }
    if (mem_rw(t, 1, frame, buf, span) < 0) {
        fail(err, errlen, "cannot write the thread's stack at %#llx", (unsigned long long)frame);
        goto out;
    }
    r.rsp = frame;
    r.rip = fn;
    r.rdi = a0;
    r.rsi = a1;
    r.rax = 0;
    r.orig_rax = (unsigned long long)-1; /* not in a system call: nothing to restart */
    r.eflags &= ~(0x400ULL | 0x100ULL); /* DF and TF clear, as the ABI wants */
    int64_t t0 = hs_monotonic_ns();
    if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) < 0 || ptrace(PTRACE_CONT, t->tid, 0, 0) < 0) {
        fail(err, errlen, "ptrace: %s", strerror(errno));
        goto restore;
    }
    if (wait_call(t, &r, err, errlen) < 0)
        goto out; /* the thread is not stopped any more: nothing to write back */
    t->call_ns += hs_monotonic_ns() - t0;
    *ret = r.rax;
    rc = 0;
restore:
    if (mem_rw(t, 1, frame, old, span) < 0 && rc == 0)
        rc = fail(err, errlen, "cannot restore the thread's stack");
out:
    free(old);
    free(buf);
    return rc;
}

static int read_string(tracee *t, uint64_t addr, char *out, size_t outlen)
{
    size_t i = 0;
    for (; i + 1 < outlen; i++)
        if (mem_rw(t, 0, addr + i, out + i, 1) < 0 || !out[i])
            break;
    out[i] = 0;
    return 0;
}

/* Stop t->tid: 0 once it is in the interrupt stop (signals that came
 * first were delivered to it as they would have been). */
static int interrupt_stop(tracee *t, char *err, size_t errlen)
{
    if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) < 0)
        return fail(err, errlen, "PTRACE_INTERRUPT: %s", strerror(errno));
    for (;;) {
        int st;
        if (waitpid(t->tid, &st, __WALL) < 0)
            return fail(err, errlen, "waitpid: %s", strerror(errno));
        if (WIFEXITED(st) || WIFSIGNALED(st))
            return fail(err, errlen, "the process ended");
        if (!WIFSTOPPED(st))
            continue;
        if ((st >> 16) == PTRACE_EVENT_STOP && WSTOPSIG(st) == SIGTRAP)
            return 0;
        /* a signal on its way (passed on) or a group stop (resumed: a
         * stopped process cannot be attached to now) */
        int sig = (st >> 16) ? 0 : WSTOPSIG(st);
        ptrace(PTRACE_CONT, t->tid, 0, (void *)(long)sig);
    }
}

#define STOP_TRIES 500 /* interrupts before giving up on a thread that stays in libc */

/* Seize and stop t->tid at a point where it holds no lock of libc's or
 * the loader's: in a system call, or in code outside libc and ld.so (a
 * thread stopped inside malloc holds the arena's lock, which the dlopen it
 * is made to call would wait for forever). Otherwise let it run a little
 * and stop it again. */
static int stop_thread(tracee *t, const libc_map *m, char *err, size_t errlen)
{
    if (ptrace(PTRACE_SEIZE, t->tid, 0, 0) < 0)
        return fail(err, errlen, "cannot trace process %d: %s%s", (int)t->tid, strerror(errno),
                    errno == EPERM ? " (ptrace not allowed: root, CAP_SYS_PTRACE or "
                                     "kernel.yama.ptrace_scope=0)" : "");
    for (int i = 0;; i++) {
        if (interrupt_stop(t, err, errlen) < 0)
            return -1;
        struct user_regs_struct r;
        if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0)
            return fail(err, errlen, "PTRACE_GETREGS: %s", strerror(errno));
        int inside = 0;
        for (int k = 0; k < m->nx; k++)
            inside |= r.rip >= m->lo[k] && r.rip < m->hi[k];
        if ((long long)r.orig_rax >= 0 || !inside)
            return 0;
        if (i == STOP_TRIES)
            return fail(err, errlen, "thread %d stayed inside libc or the loader over %d stops "
                        "(busy in malloc?): nothing done; try again", (int)t->tid, STOP_TRIES);
        ptrace(PTRACE_CONT, t->tid, 0, 0);
        usleep(100 + (unsigned)(i % 7) * 50); /* not in step with a periodic pattern */
    }
}

/* The waits the kernel ends with EINTR at any stop of the thread, a ptrace
 * stop included, even with no signal handler to run (signal(7), "Interruption
 * of system calls and library functions by stop signals"): x86-64 numbers of
 * epoll_wait, epoll_pwait, epoll_pwait2, semop, semtimedop, rt_sigtimedwait,
 * io_getevents. */
static int eintr_on_stop(long long nr)
{
    static const long long k[] = {232, 281, 441, 65, 220, 128, 208};
    for (size_t i = 0; i < sizeof k / sizeof *k; i++)
        if (nr == k[i])
            return 1;
    return 0;
}

/* The stopped thread was in one of those waits and our stop ended it with
 * EINTR (rax = -EINTR, orig_rax = the call): rewind it to its `syscall`
 * instruction with the call number in rax, so that it is made again when
 * the thread resumes, as after an interruption the kernel restarts (its
 * timeout counted again from then: a wait may last up to the time already
 * waited longer; docs/attach.md). A signal that came meanwhile was held and
 * is sent again after the detach: it interrupts the wait made again as it
 * would have the first. 1 when rewound. */
static int rewind_eintr(tracee *t)
{
    unsigned char insn[2];
    if ((long long)t->saved.rax != -EINTR || !eintr_on_stop((long long)t->saved.orig_rax) || t->saved.rip < 2 ||
        pread(t->memfd, insn, 2, (off_t)(t->saved.rip - 2)) != 2 || insn[0] != 0x0f || insn[1] != 0x05)
        return 0;
    t->saved.rip -= 2;
    t->saved.rax = t->saved.orig_rax;
    return 1;
}

int hs_inject_dlopen(pid_t pid, const char *path, const char *call_sym, const char *call_arg,
                     hs_inject_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    if (path[0] != '/')
        return fail(err, errlen, "the library path must be absolute: %s", path);
    if (hs_inject_check(pid, err, errlen) < 0)
        return -1;
    /* dlopen of a FIFO or a device would block the target's thread in
     * read() with the loader's lock held: only a regular file, as the
     * target sees it (its mount namespace) */
    char rpath[PATH_MAX + 64];
    struct stat sb;
    snprintf(rpath, sizeof rpath, "/proc/%d/root%s", (int)pid, path);
    if (stat(rpath, &sb) < 0)
        return fail(err, errlen, "%s: %s in the target's file system", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return fail(err, errlen, "%s is not a regular file: not loaded", path);
    libc_map m;
    const char *names[] = {"dlopen", "dlerror", "dlsym"};
    uint64_t fn[3];
    if (find_libc(pid, &m, err, errlen) < 0 || libc_symbols(pid, &m, names, fn, 3, err, errlen) < 0)
        return -1;
    if (!fn[0] || !fn[1] || !fn[2])
        return fail(err, errlen, "the target's libc %s lacks dlopen, dlerror or dlsym", m.path);

    tracee t = {.tid = choose_thread(pid), .memfd = -1};
    char mpath[64];
    snprintf(mpath, sizeof mpath, "/proc/%d/mem", (int)pid);
    int64_t t0 = hs_monotonic_ns();
    if (stop_thread(&t, &m, err, errlen) < 0) {
        ptrace(PTRACE_DETACH, t.tid, 0, 0);
        return -1;
    }
    int rc = -1;
    size_t xsize = 1 << 16;
    t.xstate = malloc(xsize);
    t.memfd = open(mpath, O_RDWR | O_CLOEXEC);
    if (t.memfd < 0) {
        fail(err, errlen, "cannot open %s: %s", mpath, strerror(errno));
        goto detach;
    }
    if (ptrace(PTRACE_GETREGS, t.tid, 0, &t.saved) < 0) {
        fail(err, errlen, "PTRACE_GETREGS: %s", strerror(errno));
        goto detach;
    }
    t.xiov = (struct iovec){t.xstate, xsize};
    if (t.xstate && ptrace(PTRACE_GETREGSET, t.tid, (void *)(long)NT_X86_XSTATE, &t.xiov) == 0)
        t.have_xstate = 1;
    else if (ptrace(PTRACE_GETFPREGS, t.tid, 0, &t.fp) < 0) {
        fail(err, errlen, "cannot read the thread's FP registers: %s", strerror(errno));
        goto detach;
    }
    res->tid = t.tid;
    res->restarted = (long long)t.saved.orig_rax >= 0 && (long long)t.saved.rax >= -516 &&
                     (long long)t.saved.rax <= -512; /* -ERESTARTSYS .. -ERESTART_RESTARTBLOCK */
    if (rewind_eintr(&t))
        res->restarted = 1;

    uint64_t h = 0;
    if (call(&t, fn[0], path, 0, 0, RTLD_NOW, &h, err, errlen) < 0)
        goto restore;
    res->handle = h;
    if (!h) {
        uint64_t msg = 0;
        char text[512] = "unknown error";
        if (call(&t, fn[1], NULL, 0, 0, 0, &msg, err, errlen) == 0 && msg)
            read_string(&t, msg, text, sizeof text);
        fail(err, errlen, "dlopen in process %d failed: %s", (int)pid, text);
        goto restore;
    }
    if (call_sym) {
        uint64_t a = 0;
        if (call(&t, fn[2], call_sym, 1, h, 0, &a, err, errlen) < 0)
            goto restore;
        if (!a) {
            fail(err, errlen, "%s has no function %s", path, call_sym);
            goto restore;
        }
        res->sym = a;
        if (call(&t, a, call_arg, 0, 0, 0, &res->sym_ret, err, errlen) < 0)
            goto restore;
    }
    rc = 0;
restore:
    if (t.have_xstate)
        ptrace(PTRACE_SETREGSET, t.tid, (void *)(long)NT_X86_XSTATE, &t.xiov);
    else
        ptrace(PTRACE_SETFPREGS, t.tid, 0, &t.fp);
    if (ptrace(PTRACE_SETREGS, t.tid, 0, &t.saved) < 0 && rc == 0)
        rc = fail(err, errlen, "cannot restore the thread's registers: %s", strerror(errno));
detach:
    res->call_ns = t.call_ns;
    ptrace(PTRACE_DETACH, t.tid, 0, 0);
    res->stopped_ns = hs_monotonic_ns() - t0;
    for (int i = 0; i < t.nheld; i++)
        syscall(SYS_tgkill, pid, t.tid, t.held[i]);
    res->signals_held = t.nheld;
    if (t.memfd >= 0)
        close(t.memfd);
    free(t.xstate);
    return rc;
}
