/* records.c — the perf ring buffers of `record -p/-a` read in time order
 * across CPUs: samples (kernel callchain, user registers and stack, unwound
 * and added to the window's profile) and the exec, fork, exit, mmap and
 * switch records that keep each process's image true. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "live/live_int.h"

/* ---- ring buffer records ---- */

static void on_comm(live *L, const unsigned char *r, size_t len, uint16_t misc, uint64_t tm)
{
    if (len < 8 + 8 + 1)
        return;
    uint32_t pid, tid;
    memcpy(&pid, r + 8, 4);
    memcpy(&tid, r + 12, 4);
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(len - 16 < 63 ? len - 16 : 63), (const char *)r + 16);
    if (L->p)
        hs_hmap_put(&L->tid_name, tid, (uint64_t)hs_profile_str(L->p, name));
    else
        hs_hmap_del(&L->tid_name, tid);
    if (pid != tid)
        return;
    int exec = (misc & PERF_RECORD_MISC_COMM_EXEC) != 0;
    proc *pr = lv_find_proc(L, (int)pid, tm);
    if (!pr && exec)
        pr = lv_new_proc(L, (int)pid, 1); /* its new image is built from the records that follow */
    if (!pr)
        return;
    memcpy(pr->comm, name, sizeof name);
    pr->comm_known = 1;
    pr->skip = -1; /* another name, maybe another program: ask again */
    if (exec) { /* a new program: its mappings come from the MMAP2 records that follow */
        lv_keep_prev(pr);
        lv_drop_image(pr, ++L->n_spaces);
        pr->from_records = 1;
        pr->maps_read = time(NULL);
    }
}

/* PERF_RECORD_FORK: pid, ppid, tid, ptid, time. A new process (not a
 * thread) of a process whose mappings are known starts with a copy of
 * them, not with /proc/PID/maps read later (by then it may have exec'd). */
static void on_fork(live *L, const unsigned char *r, size_t len)
{
    if (len < 8 + 24)
        return;
    uint32_t pid, ppid, tid;
    uint64_t tm;
    memcpy(&pid, r + 8, 4);
    memcpy(&ppid, r + 12, 4);
    memcpy(&tid, r + 16, 4);
    memcpy(&tm, r + 24, 8);
    if (pid != tid || pid == ppid)
        return;
    proc *parent = lv_find_proc(L, (int)ppid, tm);
    if (!parent || (!parent->from_records && !parent->maps_read))
        return; /* unknown: its mappings are read when it is first sampled */
    proc *old = lv_find_proc(L, (int)pid, tm);
    if (old && !old->exit_time)
        old->exit_time = tm; /* its exit went unseen: the pid is the child's now */
    proc *pr = lv_new_proc(L, (int)pid, 1);
    if (!pr)
        return;
    memcpy(pr->comm, parent->comm, sizeof pr->comm); /* a child has its parent's name until it execs */
    pr->comm_known = 1;
    if (!parent->from_records) /* it may have mapped more since its maps were read */
        pr->from_records = 0;
    for (size_t i = 0; i < parent->n_maps; i++)
        lv_add_map(pr, parent->maps[i].start, parent->maps[i].end, parent->maps[i].off, parent->maps[i].path);
}

/* PERF_RECORD_EXIT: pid, ppid, tid, ptid, time. A later sample of this pid
 * is a new process (pid reuse); a later thread with this tid is named anew.
 * The main thread's exit is the process's unless other threads run on
 * (pthread_exit in main): then the process ends with the exit of the last
 * of them. */
static void on_exit_rec(live *L, const unsigned char *r, size_t len)
{
    /* pid, ppid, tid, ptid, time */
    if (len < 8 + 24)
        return;
    uint32_t pid, tid;
    uint64_t tm;
    memcpy(&pid, r + 8, 4);
    memcpy(&tid, r + 16, 4);
    memcpy(&tm, r + 24, 8);
    hs_hmap_del(&L->tid_name, tid);
    proc *pr = lv_find_proc(L, (int)pid, tm);
    if (!pr || (pid != tid && !pr->leader_gone))
        return;
    if (lv_threads_left(pr))
        pr->leader_gone = 1;
    else
        pr->exit_time = tm ? tm : 1;
}

/* PERF_RECORD_MMAP2 (executable mappings): pid, tid, addr, len, pgoff,
 * maj, min, ino, ino_generation, prot, flags, filename. A process we know
 * mapped code (exec, dlopen): the mapping joins its list, and it takes a
 * fresh unwinder at its next sample. */
static void on_mmap(live *L, const unsigned char *r, size_t len, uint64_t tm)
{
    if (len < 72 + 2)
        return;
    uint32_t pid;
    uint64_t addr, mlen, pgoff;
    memcpy(&pid, r + 8, 4);
    memcpy(&addr, r + 16, 8);
    memcpy(&mlen, r + 24, 8);
    memcpy(&pgoff, r + 32, 8);
    char name[4096];
    snprintf(name, sizeof name, "%.*s", (int)(len - 72), (const char *)r + 72);
    if (name[0] != '/' && strcmp(name, "[vdso]") != 0)
        return;
    proc *pr = lv_find_proc(L, (int)pid, tm);
    if (!pr)
        return;
    if (!pr->from_records && !pr->maps_read) {
        pr->maps_stale = 1; /* its mappings, when read, will have it */
        return;
    }
    lv_add_map(pr, addr, addr + mlen, pgoff, name);
}

static void on_sample(live *L, const unsigned char *r, size_t len)
{
    const unsigned char *q = r + 8, *end = r + len;
#define TAKE(dst, n)                                                                               \
    do {                                                                                           \
        if ((size_t)(end - q) < (n))                                                               \
            return;                                                                                \
        memcpy((dst), q, (n));                                                                     \
        q += (n);                                                                                  \
    } while (0)
    uint64_t ip, tm, period, nr, abi = 0;
    uint32_t pid, tid, cpu[2];
    TAKE(&ip, 8);
    TAKE(&pid, 4);
    TAKE(&tid, 4);
    TAKE(&tm, 8);
    TAKE(cpu, 8);
    TAKE(&period, 8);
    TAKE(&nr, 8);
    if (nr > 4096 || (size_t)(end - q) < nr * 8)
        return;
    const unsigned char *chain = q;
    q += nr * 8;
    uint64_t regs[N_REGS] = {0};
    TAKE(&abi, 8);
    if (abi != PERF_SAMPLE_REGS_ABI_NONE)
        TAKE(regs, sizeof regs);
    uint64_t size = 0, dyn = 0;
    TAKE(&size, 8);
    const unsigned char *stack = q;
    if (size) {
        if ((uint64_t)(end - q) < size + 8)
            return;
        q += size;
        TAKE(&dyn, 8);
    }
#undef TAKE
    if (pid == 0 || (int)pid == L->self)
        return; /* idle, or ourselves */
    proc *pr = lv_get_proc(L, (int)pid, tm);
    if (!pr)
        return;
    if (pr->info_pending)
        lv_proc_info(pr);
    if (pr->maps_stale && L->skip_inprocess)
        pr->skip = -1; /* the in-process agent may have been loaded (hotspur attach) */
    if (pr->skip < 0) /* decided at its first sample (after an exec: its preloads are mapped by then) */
        pr->skip = !lv_wanted(L, pr);
    if (pr->skip)
        return;
    if (pr->seen != L->window) { /* its first sample in this window */
        pr->seen = L->window;
        L->st.processes++;
    }
    if (pr->maps_stale) { /* its mappings changed (on_mmap) */
        pr->maps_stale = 0;
        if (!pr->from_records && pr->maps_read)
            lv_read_maps(L, pr); /* mapped before we knew it: its maps may lack some */
        if (pr->dwfl) /* never report modules again on an attached Dwfl: a new one */
            dwfl_end(pr->dwfl);
        pr->dwfl = NULL;
        pr->dwfl_failed = 0;
    }
    uint64_t ids[MAX_FRAMES * 2];
    size_t n = 0;
    int in_kernel = 0, first_k = 1;
    for (uint64_t i = 0; i < nr && n < MAX_FRAMES; i++) {
        uint64_t a;
        memcpy(&a, chain + i * 8, 8);
        if (a >= (uint64_t)PERF_CONTEXT_MAX) {
            in_kernel = a == (uint64_t)PERF_CONTEXT_KERNEL;
            continue;
        }
        if (!in_kernel)
            continue;
        ids[n++] = lv_kernel_location(L, first_k ? a : a - 1);
        first_k = 0;
    }
    if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
        memcpy(pr->regs, regs, sizeof regs);
        pr->sp = regs[PR_SP];
        pr->stack = stack;
        pr->stack_size = dyn < size ? dyn : size;
        pr->tid = (int)tid;
        uint64_t pcs[MAX_FRAMES];
        frames f = {pcs, 0, MAX_FRAMES};
        lv_unwind_user(L, pr, &f);
        if (f.n <= 1)
            L->st.unwound_short++;
        /* inside execve after the image switch: the pc is the old image's
         * (its stack is gone): named from that image */
        proc *img = f.n == 1 && pr->prev && !lv_maps_cover(pr, pcs[0]) && lv_maps_cover(pr->prev, pcs[0]) ? pr->prev : pr;
        for (int i = 0; i < f.n; i++)
            ids[n++] = lv_user_location(L, img, pcs[i]);
    }
    if (n == 0)
        return;
    int64_t vals[2] = {1, (int64_t)period};
    hs_label lb[5] = {
        {L->k_pid, 0, pid, 0},
        {L->k_tid, 0, tid, 0},
        {L->k_process, hs_profile_str(L->p, pr->comm), 0, 0},
        {L->k_thread, lv_thread_name(L, (int)pid, (int)tid), 0, 0},
        {L->k_cgroup, hs_profile_str(L->p, pr->cgroup), 0, 0},
    };
    size_t n_lb = pr->cgroup[0] ? 5 : 4;
    if (L->off_cpu) {
        offev *e = lv_push_ev(L);
        if (!e || !(e->ids = malloc(n * sizeof *ids)))
            return;
        memcpy(e->ids, ids, n * sizeof *ids);
        e->n_ids = n;
        e->time = tm;
        e->tid = tid;
        memcpy(e->lb, lb, sizeof lb);
        e->n_lb = n_lb;
        return;
    }
    hs_profile_add_sample(L->p, ids, n, vals, lb, n_lb);
    L->st.samples++;
}

/* n bytes of rb's data at position pos (wrapping) into dst. */
static void ring_copy(const ring *rb, uint64_t pos, void *dst, size_t n)
{
    const unsigned char *data = (const unsigned char *)rb->pg + rb->pg->data_offset;
    uint64_t size = rb->pg->data_size, off = pos % size;
    size_t first = off + n <= size ? n : (size_t)(size - off);
    memcpy(dst, data + off, first);
    memcpy((unsigned char *)dst + first, data, n - first);
}

typedef struct {
    uint64_t tail, head, time; /* time of the record at tail; UINT64_MAX: none */
    struct perf_event_header h;
} cursor;

/* The record at c->tail: its header and time (samples: after ip, pid/tid;
 * other records: the sample_id trailer's pid/tid, time, cpu). */
static void cursor_peek(const ring *rb, cursor *c)
{
    c->time = UINT64_MAX;
    if (c->tail + sizeof c->h > c->head)
        return;
    ring_copy(rb, c->tail, &c->h, sizeof c->h);
    if (c->h.size < sizeof c->h || c->tail + c->h.size > c->head)
        return;
    uint64_t t = 0;
    if (c->h.type == PERF_RECORD_SAMPLE && c->h.size >= 32)
        ring_copy(rb, c->tail + 24, &t, 8);
    else if (c->h.type != PERF_RECORD_SAMPLE && c->h.size >= 8 + 24)
        ring_copy(rb, c->tail + c->h.size - 16, &t, 8);
    c->time = t;
}

static void dispatch(live *L, const unsigned char *rec, const struct perf_event_header *h, uint64_t tm,
                     int samples_only)
{
    if (h->type == PERF_RECORD_SAMPLE && L->p)
        on_sample(L, rec, h->size);
    else if (h->type == PERF_RECORD_MMAP2)
        on_mmap(L, rec, h->size, tm);
    else if (h->type == PERF_RECORD_COMM)
        on_comm(L, rec, h->size, h->misc, tm);
    else if (h->type == PERF_RECORD_FORK)
        on_fork(L, rec, h->size);
    else if (h->type == PERF_RECORD_EXIT)
        on_exit_rec(L, rec, h->size);
    else if (h->type == PERF_RECORD_SWITCH && L->off_cpu && !(h->misc & PERF_RECORD_MISC_SWITCH_OUT) &&
             h->size >= 8 + 16) {
        /* sample_id: pid, tid, time */
        offev *e = lv_push_ev(L);
        if (e) {
            memcpy(&e->tid, rec + 12, 4);
            memcpy(&e->time, rec + 16, 8);
            e->in = 1;
        }
    } else if (h->type == PERF_RECORD_LOST && h->size >= 24) {
        uint64_t lost;
        memcpy(&lost, rec + 16, 8);
        if (samples_only || !L->track)
            L->st.lost += lost;
        if (samples_only)
            return; /* -a's sample ring: the records travel in the track rings */
        /* An exec or mmap may be among them: every image is read afresh
         * from /proc/PID/maps, as for a process mapped before the
         * recording (drop_image). */
        for (size_t i = 0; i < L->n_procs; i++)
            lv_drop_image(L->procs[i], ++L->n_spaces);
    }
}

/* Take in what every ring buffer holds, merged in time order: each CPU's
 * ring is in order, but a process that execs, maps or exits on one CPU and
 * is sampled on another must be seen in the order it happened, so each
 * sample is unwound and named against the mappings live when it was taken
 * (and a pid's next process is not charged to the one before). */
void lv_drain(live *L)
{
    cursor stack_cur[8], *cur = L->n_rings <= 8 ? stack_cur : calloc(L->n_rings, sizeof *cur);
    if (!cur)
        return;
    /* the sample rings' ends first, then the track rings': every record
     * older than a sample taken in is taken in too */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < L->n_rings; i++) {
            if (L->rings[i].track != pass)
                continue;
            cur[i].time = UINT64_MAX;
            if (!L->rings[i].pg)
                continue;
            cur[i].head = __atomic_load_n(&L->rings[i].pg->data_head, __ATOMIC_ACQUIRE);
            cur[i].tail = L->rings[i].pg->data_tail;
            cursor_peek(&L->rings[i], &cur[i]);
        }
    for (;;) {
        size_t best = L->n_rings;
        for (size_t i = 0; i < L->n_rings; i++)
            if (cur[i].time != UINT64_MAX && (best == L->n_rings || cur[i].time < cur[best].time))
                best = i;
        if (best == L->n_rings)
            break;
        ring *rb = &L->rings[best];
        cursor *c = &cur[best];
        const unsigned char *data = (const unsigned char *)rb->pg + rb->pg->data_offset;
        uint64_t off = c->tail % rb->pg->data_size;
        const unsigned char *rec = data + off;
        if (off + c->h.size > rb->pg->data_size) { /* wraps: a copy */
            if (L->tmpcap < c->h.size) {
                unsigned char *nt = realloc(L->tmp, c->h.size);
                if (!nt)
                    break;
                L->tmp = nt;
                L->tmpcap = c->h.size;
            }
            ring_copy(rb, c->tail, L->tmp, c->h.size);
            rec = L->tmp;
        }
        dispatch(L, rec, &c->h, c->time, L->track && !rb->track);
        c->tail += c->h.size;
        __atomic_store_n(&rb->pg->data_tail, c->tail, __ATOMIC_RELEASE);
        cursor_peek(rb, c);
    }
    if (cur != stack_cur)
        free(cur);
}

int lv_open_ring(ring *rb, int fd, size_t page, size_t pages)
{
    rb->fd = fd;
    rb->len = (pages + 1) * page;
    void *m = mmap(NULL, rb->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        rb->pg = NULL;
        return -1;
    }
    rb->pg = m;
    return 0;
}
