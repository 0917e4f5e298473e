/* unwind.c — user stacks of `record -p/-a` unwound with libdwfl over the
 * copy of the stack and registers a sample carries (what `perf record
 * --call-graph dwarf` does), with each process image's mappings as its
 * modules; the ELF files opened once for every process's unwinder. */
#define _GNU_SOURCE
#include <dwarf.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/vec.h"
#include "live/live_int.h"

/* ---- libdwfl callbacks: unwind over the copied stack ---- */

static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
    (void)dwfl;
    (void)arg;
    (void)thread_argp;
    return 0;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
    (void)dwfl;
    proc *pr = arg;
    *thread_argp = arg;
    return tid == pr->tid;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    (void)dwfl;
    proc *pr = arg;
    if (addr < pr->sp || addr + 8 > pr->sp + pr->stack_size || addr + 8 < addr)
        return false;
    memcpy(result, pr->stack + (addr - pr->sp), 8);
    return true;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
    proc *pr = arg;
    const uint64_t *r = pr->regs;
#if defined(__x86_64__)
    /* perf order: ax bx cx dx si di bp sp ip r8..r15; DWARF order: ax dx cx
     * bx si di bp sp r8..r15 ip */
    Dwarf_Word d[17] = {r[0], r[3], r[2], r[1], r[4], r[5], r[6], r[7],
                        r[9], r[10], r[11], r[12], r[13], r[14], r[15], r[16], r[8]};
    return dwfl_thread_state_registers(thread, 0, 17, d);
#elif defined(__aarch64__)
    /* DWARF x0..x30, sp are perf's order; the pc apart */
    Dwarf_Word d[32];
    for (int i = 0; i < 32; i++)
        d[i] = r[i];
    if (!dwfl_thread_state_registers(thread, 0, 32, d))
        return false;
    dwfl_thread_state_register_pc(thread, r[PR_IP]);
    return true;
#else
    (void)thread;
    (void)r;
    return false;
#endif
}

static const Dwfl_Thread_Callbacks thread_cbs = {
    .next_thread = cb_next_thread,
    .get_thread = cb_get_thread,
    .memory_read = cb_memory_read,
    .set_initial_registers = cb_set_initial_registers,
};

/* The unwinder reads .eh_frame of the files the process maps, and never
 * looks for their separate debug files: libdwfl falls back to .debug_frame
 * wherever .eh_frame ends a stack (at every outermost frame), and loading
 * a debug file for that (libc6-dbg's, compressed) took half the agent's CPU
 * and tens of MB per process per window. .debug_frame in the file itself
 * is still used. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                        const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                        char **debuginfo_file_name)
{
    (void)mod;
    (void)userdata;
    (void)modname;
    (void)base;
    (void)file_name;
    (void)debuglink_file;
    (void)debuglink_crc;
    *debuginfo_file_name = NULL;
    return -1;
}

/* The session and process whose unwinder libdwfl is working on (it calls
 * find_elf with no context of ours): set around each libdwfl call. */
static live *cur_live;
static proc *cur_proc;

static uint64_t elf_key(const struct stat *st)
{
    return hs_hmap_mix((uint64_t)st->st_dev * 0x9e3779b97f4a7c15ULL ^ (uint64_t)st->st_ino) ^
           hs_hmap_mix((uint64_t)st->st_size ^ ((uint64_t)st->st_mtim.tv_sec << 20) ^ (uint64_t)st->st_mtim.tv_nsec);
}

void lv_forget_elfs(live *L)
{
    for (size_t i = 0; i < L->n_elfs; i++)
        elf_end(L->elfs[i].elf); /* unwinders still using one keep it alive */
    L->n_elfs = 0;
    hs_hmap_clear(&L->elf_ix);
}

/* The ELF file modname of process pid, opened under /proc/PID/root (the
 * file a process in a container sees) and shared by every process that
 * maps the same file (device, inode, size, mtime): the cache's handle, or
 * NULL. */
Elf *lv_shared_elf(live *L, int pid, const char *modname)
{
    char path[4200];
    snprintf(path, sizeof path, "/proc/%d/root%s", pid, modname);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fd = open(modname, O_RDONLY | O_CLOEXEC); /* the process is gone */
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    uint64_t key = elf_key(&st), ix;
    elf_ent *e = NULL;
    if (hs_hmap_get(&L->elf_ix, key, &ix)) {
        elf_ent *c = &L->elfs[ix - 1];
        if (c->dev == st.st_dev && c->ino == st.st_ino && c->size == st.st_size &&
            c->mtime.tv_sec == st.st_mtim.tv_sec && c->mtime.tv_nsec == st.st_mtim.tv_nsec)
            e = c;
    }
    if (!e && L->n_elfs >= MAX_ELFS)
        lv_forget_elfs(L);
    if (!e && (L->n_elfs < L->cap_elfs || HS_VEC_RESERVE(L->elfs, L->cap_elfs, L->n_elfs + 1) == 0)) {
        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (elf && elf_kind(elf) == ELF_K_ELF && elf_cntl(elf, ELF_C_FDDONE) == 0) {
            e = &L->elfs[L->n_elfs++];
            *e = (elf_ent){st.st_dev, st.st_ino, st.st_size, st.st_mtim, elf};
            hs_hmap_put(&L->elf_ix, key, L->n_elfs);
        } else if (elf) {
            elf_end(elf);
        }
    }
    close(fd);
    return e ? e->elf : NULL;
}

/* The vDSO, for every process's "[vdso]" mapping: a copy of this
 * process's own (one kernel, one vDSO; a process that has exec'd since its
 * sample has lost its own). NULL if not found. */
static Elf *own_vdso(live *L)
{
    if (L->vdso_elf || L->vdso_failed)
        return L->vdso_elf;
    L->vdso_failed = 1;
    char *buf = NULL;
    size_t cap = 0;
    if (lv_slurp("/proc/self/maps", &buf, &cap) < 0) {
        free(buf);
        return NULL;
    }
    char *v = strstr(buf, "[vdso]");
    if (v) {
        while (v > buf && v[-1] != '\n')
            v--;
        char *q = v;
        uint64_t s = lv_hex(&q);
        uint64_t e = *q == '-' ? (q++, lv_hex(&q)) : 0;
        if (e > s && (L->vdso = malloc(e - s))) {
            memcpy(L->vdso, (const void *)(uintptr_t)s, e - s);
            L->vdso_elf = elf_memory((char *)L->vdso, e - s);
        }
    }
    free(buf);
    if (L->vdso_elf)
        L->vdso_failed = 0;
    return L->vdso_elf;
}

/* libdwfl's find_elf: shared_elf, one more reference for the unwinder;
 * what libdwfl cannot get that way (the vDSO, deleted files) its own
 * callback finds. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base, char **file_name,
                    Elf **elfp)
{
    Elf *elf = cur_live && cur_proc && modname[0] == '/' ? lv_shared_elf(cur_live, cur_proc->pid, modname) : NULL;
    if (!elf && cur_live && !strcmp(modname, "[vdso]"))
        elf = own_vdso(cur_live);
    if (!elf)
        return dwfl_linux_proc_find_elf(mod, userdata, modname, base, file_name, elfp);
    *elfp = elf_begin(-1, ELF_C_READ_MMAP, elf); /* one more reference */
    *file_name = strdup(modname);
    return -1;
}

static const Dwfl_Callbacks proc_cbs = {
    .find_elf = find_elf,
    .find_debuginfo = no_debuginfo,
};

/* Where libdwfl is to take the module of m's file to start: the address
 * of its first PT_LOAD, from which it derives the load bias (what
 * dwfl_linux_proc_report takes from the offset-0 mapping, which MMAP2
 * records do not report: only executable mappings are). The bias comes
 * from the PT_LOAD that m maps (its file offset). */
static uint64_t module_low(live *L, proc *pr, const map_ent *m)
{
    uint64_t guess = m->start - m->off, page = (uint64_t)sysconf(_SC_PAGESIZE);
    Elf *elf = m->path[0] == '/' ? lv_shared_elf(L, pr->pid, m->path) : NULL;
    size_t n;
    if (!elf || elf_getphdrnum(elf, &n) != 0)
        return guess;
    uint64_t first = UINT64_MAX, bias = 0;
    int have_bias = 0;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        if (first == UINT64_MAX)
            first = ph.p_vaddr & ~(page - 1);
        if (!have_bias && (ph.p_offset & ~(page - 1)) == m->off) {
            bias = m->start - (ph.p_vaddr & ~(page - 1));
            have_bias = 1;
        }
    }
    return have_bias && first != UINT64_MAX ? bias + first : guess;
}

/* The unwinder's modules: the files of pr's mappings as they are known now
 * (from the records, in order), not /proc/PID/maps, which may already show
 * a later image. One module per file and load address. */
static int report_modules(live *L, proc *pr)
{
    pr->dwfl_reported = time(NULL);
    if (!pr->maps_read && !pr->from_records)
        lv_read_maps(L, pr);
    uint64_t *low = calloc(pr->n_maps + 1, sizeof *low);
    if (!low)
        return -1;
    for (size_t i = 0; i < pr->n_maps; i++)
        low[i] = module_low(L, pr, &pr->maps[i]);
    dwfl_report_begin(pr->dwfl);
    int n = 0;
    for (size_t i = 0; i < pr->n_maps; i++) {
        int dup = 0;
        uint64_t high = pr->maps[i].end;
        for (size_t j = 0; j < pr->n_maps; j++) {
            if (low[j] != low[i] || strcmp(pr->maps[j].path, pr->maps[i].path) != 0)
                continue;
            if (j < i)
                dup = 1;
            if (pr->maps[j].end > high)
                high = pr->maps[j].end;
        }
        if (!dup && dwfl_report_module(pr->dwfl, pr->maps[i].path, low[i], high))
            n++;
    }
    dwfl_report_end(pr->dwfl, NULL, NULL);
    free(low);
    return n ? 0 : -1;
}

static Dwfl *proc_dwfl(live *L, proc *pr)
{
    if (pr->dwfl || pr->dwfl_failed)
        return pr->dwfl;
    cur_live = L;
    cur_proc = pr;
    pr->dwfl = dwfl_begin(&proc_cbs);
    L->st.unwinders++;
    if (!pr->dwfl || report_modules(L, pr) != 0 || !dwfl_attach_state(pr->dwfl, NULL, pr->pid, &thread_cbs, pr)) {
        if (pr->dwfl)
            dwfl_end(pr->dwfl);
        pr->dwfl = NULL;
        pr->dwfl_failed = 1;
    }
    return pr->dwfl;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
    frames *f = arg;
    Dwarf_Addr pc;
    bool act;
    if (!dwfl_frame_pc(state, &pc, &act))
        return DWARF_CB_ABORT;
    if (pc == 0)
        return DWARF_CB_ABORT;
    f->pcs[f->n++] = act ? pc : pc - 1;
    return f->n < f->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

int lv_unwind_user(live *L, proc *pr, frames *f)
{
    cur_live = L;
    cur_proc = pr;
    Dwfl *d = proc_dwfl(L, pr);
    uint64_t ip = pr->regs[PR_IP];
    if (d && !dwfl_addrmodule(d, ip) && !pr->from_records && time(NULL) != pr->dwfl_reported) {
        /* Code mapped since its mappings were read (dlopen) and not known
         * from a record: read them again, and a new unwinder. Never dwfl_report_* again on an attached Dwfl: libdw's
         * process state borrows the first module's backend (Ebl), which
         * dwfl_report_end frees when that module went away (dlclose,
         * exec): a use after free that crashed the agent. */
        lv_read_maps(L, pr);
        dwfl_end(pr->dwfl);
        pr->dwfl = NULL;
        d = proc_dwfl(L, pr);
    }
    if (d)
        dwfl_getthread_frames(d, pr->tid, frame_cb, f);
    if (f->n == 0 && ip)
        f->pcs[f->n++] = ip;
    return f->n;
}
