/* sleepregs.c — every user register of a thread asleep in the kernel,
 * without stopping it (no ptrace): a BPF task iterator, pinned to the
 * thread, copies the registers the thread entered the kernel with
 * (bpf_task_pt_regs) out through its seq file. /proc gives only the stack
 * pointer and pc of a sleeping thread (/proc/PID/task/TID/syscall); with
 * the callee-saved registers too (the frame pointer among them) its user
 * stack unwinds as a sample's does, through frames whose CFA is computed
 * from the frame pointer. Needs CAP_BPF + CAP_PERFMON (root), kernel BTF
 * and a kernel of 6.1 or later (iterators pinned to one thread); where any
 * of that is missing, lv_sleeping_regs fails and the caller keeps sp + pc.
 * The program is a dozen instructions, assembled here: no BPF compiler or
 * libbpf at build or run time. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "live/live_int.h"

#if defined(__x86_64__) && defined(__NR_bpf)
#include <linux/bpf.h>

/* The BTF type id of the function NAME in the kernel's BTF, 0 if none. */
static uint32_t btf_func_id(const char *name)
{
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len = lv_slurp("/sys/kernel/btf/vmlinux", &buf, &cap);
    uint32_t found = 0;
    struct {
        uint16_t magic;
        uint8_t version, flags;
        uint32_t hdr_len, type_off, type_len, str_off, str_len;
    } h;
    if (len < (ssize_t)sizeof h)
        goto out;
    memcpy(&h, buf, sizeof h);
    if (h.magic != 0xeB9F || (uint64_t)h.hdr_len + h.type_off + h.type_len > (uint64_t)len ||
        (uint64_t)h.hdr_len + h.str_off + h.str_len > (uint64_t)len)
        goto out;
    const char *types = buf + h.hdr_len + h.type_off, *strs = buf + h.hdr_len + h.str_off;
    size_t want = strlen(name) + 1;
    uint32_t id = 1;
    for (size_t off = 0; off + 12 <= h.type_len; id++) {
        uint32_t t[3];
        memcpy(t, types + off, 12);
        off += 12;
        uint32_t kind = (t[1] >> 24) & 0x1f, vlen = t[1] & 0xffff;
        if (kind == 12 /* FUNC */ && t[0] + want <= h.str_len && !memcmp(strs + t[0], name, want)) {
            found = id;
            break;
        }
        switch (kind) { /* the data after struct btf_type, by kind */
        case 1: case 14: case 17: off += 4; break;                  /* INT, VAR, DECL_TAG */
        case 3: off += 12; break;                                   /* ARRAY */
        case 4: case 5: case 15: case 19: off += 12 * vlen; break;  /* STRUCT, UNION, DATASEC, ENUM64 */
        case 6: case 13: off += 8 * vlen; break;                    /* ENUM, FUNC_PROTO */
        case 2: case 7: case 8: case 9: case 10: case 11: case 12: case 16: case 18: break;
        default: goto out; /* a kind this reader does not know: stop */
        }
    }
out:
    free(buf);
    return found;
}

static long sys_bpf(int cmd, union bpf_attr *a)
{
    return syscall(__NR_bpf, cmd, a, sizeof *a);
}

#define INSN(c, d, s, o, i) ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})
#define PT_REGS_BYTES (21 * 8) /* struct pt_regs, x86_64 */

/* Load the iterator program at the first call; its fd, or -1. */
static int prog_fd(live *L)
{
    if (L->sleepregs_tried)
        return L->sleepregs_fd;
    L->sleepregs_tried = 1;
    L->sleepregs_fd = -1;
    uint32_t btf_id = btf_func_id("bpf_iter_task");
    if (!btf_id)
        return -1;
    /* r6 = ctx->meta; r7 = ctx->task; if (!r7) return 0;
     * r0 = bpf_task_pt_regs(r7); bpf_probe_read_kernel(fp - 168, 168, r0);
     * bpf_seq_write(r6->seq, fp - 168, 168); return 0; */
    struct bpf_insn p[] = {
        INSN(BPF_LDX | BPF_MEM | BPF_DW, 6, 1, 0, 0),
        INSN(BPF_LDX | BPF_MEM | BPF_DW, 7, 1, 8, 0),
        INSN(BPF_JMP | BPF_JEQ | BPF_K, 7, 0, 12, 0), /* to r0 = 0 */
        INSN(BPF_ALU64 | BPF_MOV | BPF_X, 1, 7, 0, 0),
        INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_task_pt_regs),
        INSN(BPF_ALU64 | BPF_MOV | BPF_X, 3, 0, 0, 0),
        INSN(BPF_ALU64 | BPF_MOV | BPF_X, 1, 10, 0, 0),
        INSN(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 0, -PT_REGS_BYTES),
        INSN(BPF_ALU64 | BPF_MOV | BPF_K, 2, 0, 0, PT_REGS_BYTES),
        INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_probe_read_kernel),
        INSN(BPF_LDX | BPF_MEM | BPF_DW, 1, 6, 0, 0),
        INSN(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0),
        INSN(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -PT_REGS_BYTES),
        INSN(BPF_ALU64 | BPF_MOV | BPF_K, 3, 0, 0, PT_REGS_BYTES),
        INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_seq_write),
        INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0),
        INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
    };
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.prog_type = BPF_PROG_TYPE_TRACING;
    a.expected_attach_type = BPF_TRACE_ITER;
    a.insns = (uint64_t)(uintptr_t)p;
    a.insn_cnt = sizeof p / sizeof *p;
    a.license = (uint64_t)(uintptr_t) "Dual MIT/GPL"; /* the helpers are GPL-only */
    a.attach_btf_id = btf_id;
    snprintf(a.prog_name, sizeof a.prog_name, "hs_sleepregs");
    long fd = sys_bpf(BPF_PROG_LOAD, &a);
    if (fd >= 0)
        L->sleepregs_fd = (int)fd;
    return L->sleepregs_fd;
}

int lv_sleeping_regs(live *L, int tid, uint64_t *regs)
{
    int prog = prog_fd(L);
    if (prog < 0)
        return -1;
    union bpf_iter_link_info info;
    memset(&info, 0, sizeof info);
    info.task.tid = (uint32_t)tid;
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.link_create.prog_fd = (uint32_t)prog;
    a.link_create.attach_type = BPF_TRACE_ITER;
    a.link_create.iter_info = (uint64_t)(uintptr_t)&info;
    a.link_create.iter_info_len = sizeof info;
    long link = sys_bpf(BPF_LINK_CREATE, &a);
    if (link < 0)
        return -1;
    memset(&a, 0, sizeof a);
    a.iter_create.link_fd = (uint32_t)link;
    long it = sys_bpf(BPF_ITER_CREATE, &a);
    uint64_t pt[21];
    ssize_t got = 0;
    if (it >= 0) {
        for (ssize_t r; got < (ssize_t)sizeof pt; got += r)
            if ((r = read((int)it, (char *)pt + got, sizeof pt - (size_t)got)) <= 0)
                break;
        close((int)it);
    }
    close((int)link);
    if (got != (ssize_t)sizeof pt)
        return -1; /* the thread ended, or the iterator failed */
    /* struct pt_regs (r15 r14 r13 r12 bp bx r11 r10 r9 r8 ax cx dx si di
     * orig_ax ip cs flags sp ss) into perf's order, compacted by REGS_MASK */
    memset(regs, 0, N_REGS * sizeof *regs);
    regs[PR_AX] = pt[10], regs[PR_BX] = pt[5], regs[PR_CX] = pt[11], regs[PR_DX] = pt[12];
    regs[PR_SI] = pt[13], regs[PR_DI] = pt[14], regs[PR_BP] = pt[4], regs[PR_SP] = pt[19];
    regs[PR_IP] = pt[16];
    const int r8_r15[8] = {9, 8, 7, 6, 3, 2, 1, 0};
    for (int i = 0; i < 8; i++)
        regs[9 + i] = pt[r8_r15[i]];
    return 0;
}

void lv_sleeping_regs_end(live *L)
{
    if (L->sleepregs_tried && L->sleepregs_fd >= 0)
        close(L->sleepregs_fd);
    L->sleepregs_tried = 0;
}

#else

int lv_sleeping_regs(live *L, int tid, uint64_t *regs)
{
    (void)L, (void)tid, (void)regs;
    return -1;
}

void lv_sleeping_regs_end(live *L)
{
    (void)L;
}

#endif
