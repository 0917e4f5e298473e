/* procs.c — the process table of `record -p/-a` and the host agent: what
 * is known of each process (pid, start time, name, cgroup) and of each of
 * its images' mappings, from /proc (read by hand: stdio was a tenth of the
 * host agent's CPU) or from the kernel's records (records.c); processes
 * forgotten when they end or go unsampled. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "live/live_int.h"

int lv_read_small(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = 0;
    while (n && (buf[n - 1] == '\n'))
        buf[--n] = 0;
    return 0;
}

/* Field 22 of /proc/PID/stat: the start time, which tells a process from a
 * later one that got the same pid. 0 when unknown. */
unsigned long long lv_start_time(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (lv_read_small(path, buf, sizeof buf))
        return 0;
    char *s = strrchr(buf, ')');
    if (!s)
        return 0;
    unsigned long long v = 0;
    /* after ") " come fields 3.. ; starttime is field 22 */
    if (sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &v) != 1)
        return 0;
    return v;
}

/* The whole of a /proc file in *buf (NUL-terminated; *cap grows): its
 * length, or -1. */
ssize_t lv_slurp(const char *path, char **buf, size_t *cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    for (;;) {
        if (*cap - len < 4096) {
            size_t nc = *cap ? *cap * 2 : 65536;
            char *nb = realloc(*buf, nc);
            if (!nb)
                break;
            *buf = nb;
            *cap = nc;
        }
        ssize_t r = read(fd, *buf + len, *cap - len - 1);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (*buf)
        (*buf)[len] = 0;
    return *buf ? (ssize_t)len : -1;
}

uint64_t lv_hex(char **s)
{
    uint64_t v = 0;
    for (;; (*s)++) {
        char c = **s;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return v;
        v = v << 4 | (uint64_t)d;
    }
}

/* A thread of pid other than its main one that has not ended (state
 * neither Z nor X): its tid, or 0. */
static int other_thread(int pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    struct dirent *de;
    int found = 0;
    while (d && !found && (de = readdir(d))) {
        int tid = atoi(de->d_name);
        char st[512];
        snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, tid);
        if (tid <= 0 || tid == pid || lv_read_small(path, st, sizeof st) != 0)
            continue;
        char *c = strrchr(st, ')');
        if (c && c[1] && c[2] != 'Z' && c[2] != 'X')
            found = tid;
    }
    if (d)
        closedir(d);
    return found;
}

/* Whether pr runs on though its main thread ended (pthread_exit): the same
 * process (start time) with another thread that has not ended. */
int lv_threads_left(proc *pr)
{
    if (pr->starttime && lv_start_time(pr->pid) != pr->starttime)
        return 0;
    return other_thread(pr->pid) != 0;
}

/* The executable file mappings of pr (and "[vdso]"), added to those known:
 * one read of /proc/PID/maps, parsed by hand (stdio and sscanf were a
 * tenth of the host agent's CPU). A process whose main thread ended has an
 * empty /proc/PID/maps: then a living thread's. */
void lv_read_maps(live *L, proc *pr)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", pr->pid);
    pr->maps_read = time(NULL);
    if (pr->exit_time || (pr->starttime && lv_start_time(pr->pid) != pr->starttime))
        return; /* it ended (its pid may be another process's now) */
    ssize_t len = lv_slurp(path, &L->mapsbuf, &L->mapscap);
    int tid = len == 0 ? other_thread(pr->pid) : 0;
    if (tid) {
        snprintf(path, sizeof path, "/proc/%d/task/%d/maps", pr->pid, tid);
        len = lv_slurp(path, &L->mapsbuf, &L->mapscap);
    }
    if (len < 0)
        return;
    for (char *line = L->mapsbuf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        /* start-end perms offset dev inode name */
        char *q = line;
        uint64_t s = lv_hex(&q);
        if (*q++ != '-')
            continue;
        uint64_t e = lv_hex(&q);
        if (*q++ != ' ' || strlen(q) < 5 || q[2] != 'x')
            continue;
        q += 5;
        uint64_t off = lv_hex(&q);
        for (int field = 0; field < 2 && *q; field++) { /* dev, inode */
            while (*q == ' ')
                q++;
            while (*q && *q != ' ')
                q++;
        }
        while (*q == ' ')
            q++;
        char *name = q;
        char *del = strstr(name, " (deleted)");
        if (del)
            *del = 0;
        if (name[0] != '/' && strcmp(name, "[vdso]") != 0)
            continue;
        int known = 0;
        for (size_t i = 0; i < pr->n_maps; i++)
            if (pr->maps[i].start == s && pr->maps[i].end == e && strcmp(pr->maps[i].path, name) == 0)
                known = 1;
        if (known)
            continue;
        map_ent *nm = realloc(pr->maps, (pr->n_maps + 1) * sizeof *nm);
        if (!nm)
            break;
        pr->maps = nm;
        pr->maps[pr->n_maps] = (map_ent){.start = s, .end = e, .off = off, .path = strdup(name)};
        if (pr->maps[pr->n_maps].path)
            pr->n_maps++;
    }
}

/* A mapping reported by the kernel (MMAP2): it replaces what it overlaps
 * (unmaps are not reported; a new mapping over a range is). */
void lv_add_map(proc *pr, uint64_t s, uint64_t e, uint64_t off, const char *name)
{
    size_t k = 0;
    for (size_t i = 0; i < pr->n_maps; i++) {
        map_ent *m = &pr->maps[i];
        if (m->start < e && s < m->end) {
            free(m->path);
            continue;
        }
        pr->maps[k++] = *m;
    }
    pr->n_maps = k;
    map_ent *nm = realloc(pr->maps, (pr->n_maps + 1) * sizeof *nm);
    if (nm) {
        pr->maps = nm;
        pr->maps[pr->n_maps] = (map_ent){.start = s, .end = e, .off = off, .path = strdup(name)};
        if (pr->maps[pr->n_maps].path)
            pr->n_maps++;
    }
    hs_hmap_clear(&pr->locs); /* addresses may name other code now */
    pr->maps_stale = 1;
}

/* Whether pr is to be sampled: the caller's choice, and not a process
 * that runs the in-process agent. Asked once, before any unwinding. */
int lv_wanted(live *L, proc *pr)
{
    if (L->want && !L->want(L->want_arg, pr->pid, pr->comm, pr->cgroup))
        return 0;
    if (L->skip_inprocess) {
        if (!pr->maps_read && !pr->from_records)
            lv_read_maps(L, pr);
        for (size_t i = 0; i < pr->n_maps; i++) {
            const char *b = strrchr(pr->maps[i].path, '/');
            if (b && !strncmp(b, "/libhotspur.so", 14))
                return 0;
        }
    }
    return 1;
}

/* The process known as pid at perf time tm (0: now), or NULL: a pid whose
 * exit was seen before tm is another process now. */
proc *lv_find_proc(live *L, int pid, uint64_t tm)
{
    uint64_t ix;
    if (hs_hmap_get(&L->pid_ix, (uint64_t)pid, &ix)) {
        proc *old = L->procs[ix - 1];
        if (!old->exit_time || tm <= old->exit_time)
            return old;
    }
    return NULL;
}

/* The process pid was at perf time tm (0: now): a fresh entry when it is
 * not known (or a process that ended had that pid). With no_maps, its
 * mappings are left for the caller to fill (from records). */
proc *lv_get_proc(live *L, int pid, uint64_t tm)
{
    proc *old = lv_find_proc(L, pid, tm);
    return old ? old : lv_new_proc(L, pid, 0);
}

proc *lv_new_proc(live *L, int pid, int no_maps)
{
    proc *pr = calloc(1, sizeof *pr);
    proc **np = pr ? realloc(L->procs, (L->n_procs + 1) * sizeof *np) : NULL;
    if (!np) {
        free(pr);
        return NULL;
    }
    L->procs = np;
    pr->pid = pid;
    pr->space = ++L->n_spaces;
    snprintf(pr->comm, sizeof pr->comm, "%d", pid);
    pr->born = L->window; /* kept KEEP_WINDOWS windows even if never sampled */
    if (no_maps) /* known from records (most never sampled): its /proc files are read at its first sample */
        pr->from_records = 1, pr->maps_read = time(NULL), pr->info_pending = 1;
    else
        lv_proc_info(pr);
    if (!no_maps && !L->all)
        lv_read_maps(L, pr); /* -p: now, in case it exits early; -a: at its first unwinding */
    L->procs[L->n_procs++] = pr; /* a replaced entry stays here, freed at the end */
    pr->skip = -1;
    L->st.new_processes++;
    hs_hmap_put(&L->pid_ix, (uint64_t)pid, L->n_procs);
    return pr;
}

/* Its start time, name (unless a record gave it) and cgroup, from /proc. */
void lv_proc_info(proc *pr)
{
    int pid = pr->pid;
    pr->info_pending = 0;
    pr->starttime = lv_start_time(pid);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    if (!pr->comm_known && lv_read_small(path, pr->comm, sizeof pr->comm))
        snprintf(pr->comm, sizeof pr->comm, "%d", pid);
    char cg[4096];
    snprintf(path, sizeof path, "/proc/%d/cgroup", pid);
    if (lv_read_small(path, cg, sizeof cg) == 0)
        lv_cgroup_path(cg, pr->cgroup, sizeof pr->cgroup);
}

/* Lines "ID:CONTROLLERS:PATH" (the path may hold ':'). cgroup v2 has one,
 * "0::PATH"; v1 one per hierarchy, where the controllers nobody divides
 * (rdma, hugetlb, often cpuset) say "/" for every process, so the label is
 * the first path other than "/" of: the v2 line (hybrid hosts have both),
 * systemd's own hierarchy (name=systemd: the unit), any other. */
void lv_cgroup_path(const char *text, char *out, size_t len)
{
    const char *best = NULL;
    size_t best_len = 0;
    int best_rank = 4;
    for (const char *line = text; *line;) {
        size_t n = strcspn(line, "\n");
        const char *c1 = memchr(line, ':', n);
        const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line)) : NULL;
        if (c2) {
            const char *p = c2 + 1;
            size_t plen = n - (size_t)(p - line);
            size_t clen = (size_t)(c2 - c1 - 1);
            int rank = clen == 0 ? 0 : clen == 12 && !memcmp(c1 + 1, "name=systemd", 12) ? 1 : 2;
            if (plen == 1 && p[0] == '/')
                rank = 3; /* the root: only if nothing says more */
            if (plen && rank < best_rank) {
                best = p;
                best_len = plen;
                best_rank = rank;
            }
        }
        line += n;
        line += *line == '\n';
    }
    if (len)
        snprintf(out, len, "%.*s", (int)(best_len < 255 ? best_len : 255), best ? best : "");
}

/* Forget pr's image: its unwinder, mappings and address cache (after an
 * exec; the pid, name and cgroup stay). */
void lv_drop_image(proc *pr, uint64_t new_space)
{
    pr->space = new_space;
    if (pr->dwfl)
        dwfl_end(pr->dwfl);
    pr->dwfl = NULL;
    pr->dwfl_failed = 0;
    for (size_t i = 0; i < pr->n_maps; i++)
        free(pr->maps[i].path);
    free(pr->maps);
    pr->maps = NULL;
    pr->n_maps = 0;
    pr->maps_read = 0;
    pr->from_records = 0;
    hs_hmap_clear(&pr->locs);
}

/* At an exec: pr's image so far becomes pr->prev (see live_int.h), the one
 * before is let go; pr is left with no mappings. */
void lv_keep_prev(proc *pr)
{
    if (pr->prev)
        lv_free_proc(pr->prev);
    pr->prev = NULL;
    proc *g = pr->n_maps ? calloc(1, sizeof *g) : NULL;
    if (!g)
        return;
    g->pid = pr->pid;
    g->starttime = pr->starttime;
    g->root = pr->root;
    memcpy(g->comm, pr->comm, sizeof g->comm);
    memcpy(g->cgroup, pr->cgroup, sizeof g->cgroup);
    g->maps = pr->maps;
    g->n_maps = pr->n_maps;
    g->space = pr->space;
    g->from_records = 1; /* never read from /proc: that is the new image */
    g->maps_read = time(NULL);
    pr->maps = NULL;
    pr->n_maps = 0;
    pr->prev = g;
}

/* Whether addr is in one of pr's mappings. */
int lv_maps_cover(const proc *pr, uint64_t addr)
{
    for (size_t i = 0; i < pr->n_maps; i++)
        if (addr >= pr->maps[i].start && addr < pr->maps[i].end)
            return 1;
    return 0;
}

void lv_free_proc(proc *pr)
{
    if (pr->prev)
        lv_free_proc(pr->prev);
    pr->prev = NULL;
    lv_drop_image(pr, 0);
    hs_hmap_free(&pr->locs);
    free(pr);
}

/* Free the processes that ended, that a newer process with their pid
 * replaced, or that were not sampled in the last KEEP_WINDOWS windows
 * (their unwinders hold memory); between windows only. */
void lv_forget_procs(live *L)
{
    size_t k = 0;
    for (size_t i = 0; i < L->n_procs; i++) {
        proc *pr = L->procs[i];
        uint64_t ix = 0;
        hs_hmap_get(&L->pid_ix, (uint64_t)pr->pid, &ix);
        if (ix != i + 1 || pr->exit_time || L->window - (pr->seen > pr->born ? pr->seen : pr->born) > KEEP_WINDOWS) {
            lv_free_proc(pr);
            continue;
        }
        if (pr->prev) { /* the window's samples are in: its image before an exec is not needed */
            lv_free_proc(pr->prev);
            pr->prev = NULL;
        }
        L->procs[k++] = pr;
    }
    L->n_procs = k;
    hs_hmap_clear(&L->pid_ix);
    for (size_t i = 0; i < k; i++)
        hs_hmap_put(&L->pid_ix, (uint64_t)L->procs[i]->pid, i + 1);
}
