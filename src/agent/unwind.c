/* unwind.c — async-signal-safe x86_64 stack unwinder: DWARF CFI with a
 * frame-pointer fallback.
 *
 * For each frame: find the code object with _dl_find_object() (lock-free in
 * glibc >= 2.35), binary-search its .eh_frame_hdr table for the FDE, run the
 * CIE and FDE call-frame programs up to the pc to get the CFA and register
 * rules, and compute the caller's registers. No allocation, no locks, no
 * stdio: all state lives on the (signal handler's) stack.
 */
#define _GNU_SOURCE
#include "agent/unwind.h"

#include "agent/hotpath.h"

#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

/* DWARF register numbers on x86_64. */
enum { R_RAX, R_RDX, R_RCX, R_RBX, R_RSI, R_RDI, R_RBP, R_RSP, R_R8, R_R9, R_R10, R_R11, R_R12,
       R_R13, R_R14, R_R15, R_RA, N_REGS };

typedef struct {
    uint64_t r[N_REGS];
    uint32_t valid; /* bit i: r[i] is known */
} regs_t;

enum { RULE_SAME, RULE_UNDEF, RULE_OFFSET, RULE_VAL_OFFSET, RULE_REG, RULE_EXPR, RULE_VAL_EXPR };

typedef struct {
    uint8_t type;
    int64_t value;       /* offset, or register number */
    const uint8_t *expr; /* for EXPR / VAL_EXPR: uleb length + bytes */
} rule_t;

typedef struct {
    bool cfa_is_expr;
    uint8_t cfa_reg;
    int64_t cfa_off;
    const uint8_t *cfa_expr;
    rule_t reg[N_REGS];
} row_t;

typedef struct {
    const uint8_t *insns, *insns_end;
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    bool signal_frame;
    bool has_aug_data; /* augmentation starts with 'z' */
} cie_t;

typedef struct {
    const hs_stack_bounds *bounds;
} mem_t;

/* ---- memory ---- */

/* Raw stack words (other frames' slots): not for AddressSanitizer to check. */
__attribute__((no_sanitize_address)) static bool read_u64(const mem_t *m, uint64_t addr, uint64_t *out)
{
    const hs_stack_bounds *b = m->bounds;
    if (b && b->hi && addr >= b->lo && addr + 8 <= b->hi && addr % 8 == 0) {
        *out = *(const uint64_t *)(uintptr_t)addr;
        return true;
    }
    /* Outside the known stack: let the kernel check the address. */
    struct iovec local = {out, 8};
    struct iovec remote = {(void *)(uintptr_t)addr, 8};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 8;
}

/* ---- the initial thread's stack ---- */

extern void *__libc_stack_end; /* ld.so's: the stack pointer at the program's entry */

/* As glibc takes them: the top is the page boundary above the entry's
 * stack pointer (above it are the arguments and the environment), the
 * bottom the stack limit below the end of the stack mapping. That end is
 * found without /proc/self/maps: the kernel puts the program's file name
 * (AT_EXECFN) in the highest bytes of the mapping, 8 below its end. */
int hs_unwind_initial_stack(hs_stack_bounds *b)
{
    const char *fn = (const char *)getauxval(AT_EXECFN);
    long page = sysconf(_SC_PAGESIZE);
    struct rlimit rl;
    if (!fn || page <= 0 || getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return -1;
    uintptr_t p = (uintptr_t)page, entry = (uintptr_t)__libc_stack_end;
    uintptr_t end = ((uintptr_t)fn + strlen(fn) + 1 + 8 + p - 1) & ~(p - 1);
    uintptr_t size = (uintptr_t)rl.rlim_cur & ~(p - 1);
    if (!(entry < (uintptr_t)fn && end - entry < size && size < end))
        return -1;
    uintptr_t lo = end - size, hi = (entry & ~(p - 1)) + p;
    /* A fork child of another thread runs on that thread's stack. */
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    if (here < lo || here >= hi)
        return -1;
    b->lo = lo;
    b->hi = hi;
    return 0;
}

/* ---- DWARF primitive decoding (unwind tables are mapped, trusted memory) ---- */

static uint64_t uleb(const uint8_t **p, const uint8_t *end)
{
    uint64_t v = 0;
    unsigned shift = 0;
    while (*p < end) {
        uint8_t b = *(*p)++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80))
            break;
    }
    return v;
}

static int64_t sleb(const uint8_t **p, const uint8_t *end)
{
    int64_t v = 0;
    unsigned shift = 0;
    uint8_t b = 0;
    while (*p < end) {
        b = *(*p)++;
        if (shift < 64)
            v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
        if (!(b & 0x80))
            break;
    }
    if (shift < 64 && (b & 0x40))
        v |= -((int64_t)1 << shift);
    return v;
}

#define RD(type, p) ({ type v_; memcpy(&v_, (p), sizeof v_); (p) += sizeof v_; v_; })

/* Read a pointer with DW_EH_PE encoding enc; datarel is relative to dbase. */
static bool read_encoded(const uint8_t **pp, const uint8_t *end, uint8_t enc, uint64_t dbase,
                         uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t base = 0, v;
    if (enc == 0xff)
        return false;
    switch (enc & 0x70) {
    case 0x00: base = 0; break;
    case 0x10: base = (uint64_t)(uintptr_t)p; break; /* pcrel */
    case 0x30: base = dbase; break;                  /* datarel */
    default: return false;                           /* textrel/funcrel: unused on x86_64 */
    }
    switch (enc & 0x0f) {
    case 0x00: if (end - p < 8) return false; v = RD(uint64_t, p); break;
    case 0x01: v = uleb(&p, end); break;
    case 0x02: if (end - p < 2) return false; v = RD(uint16_t, p); break;
    case 0x03: if (end - p < 4) return false; v = RD(uint32_t, p); break;
    case 0x04: if (end - p < 8) return false; v = RD(uint64_t, p); break;
    case 0x09: v = (uint64_t)sleb(&p, end); break;
    case 0x0a: if (end - p < 2) return false; v = (uint64_t)(int64_t)RD(int16_t, p); break;
    case 0x0b: if (end - p < 4) return false; v = (uint64_t)(int64_t)RD(int32_t, p); break;
    case 0x0c: if (end - p < 8) return false; v = RD(uint64_t, p); break;
    default: return false;
    }
    v += base;
    if (enc & 0x80) { /* indirect: the encoded value points at the pointer */
        memcpy(&v, (const void *)(uintptr_t)v, 8);
    }
    *pp = p;
    *out = v;
    return true;
}

/* ---- locating the FDE ---- */

/* Parse the CIE at p; fills c. */
static bool parse_cie(const uint8_t *p, cie_t *c)
{
    uint64_t len = RD(uint32_t, p);
    if (len == 0xffffffffu)
        len = RD(uint64_t, p);
    if (len == 0 || len > (1u << 20))
        return false;
    const uint8_t *end = p + len;
    if (RD(uint32_t, p) != 0) /* CIE id in .eh_frame is 0 */
        return false;
    uint8_t version = *p++;
    const char *aug = (const char *)p;
    size_t auglen = strnlen(aug, (size_t)(end - p));
    p += auglen + 1;
    if (aug[0] == 'e' && aug[1] == 'h')
        p += 8;
    c->code_align = uleb(&p, end);
    c->data_align = sleb(&p, end);
    c->ra_reg = version == 1 ? *p++ : uleb(&p, end);
    c->fde_enc = 0; /* absptr */
    c->signal_frame = false;
    c->has_aug_data = aug[0] == 'z';
    if (aug[0] == 'z') {
        uint64_t alen = uleb(&p, end);
        const uint8_t *aend = p + alen;
        for (size_t i = 1; i < auglen && p < aend; i++) {
            uint64_t skip;
            switch (aug[i]) {
            case 'R': c->fde_enc = *p++; break;
            case 'L': p++; break;
            case 'P': {
                uint8_t penc = *p++;
                if (!read_encoded(&p, aend, penc & 0x7f, 0, &skip)) /* no deref */
                    return false;
                break;
            }
            case 'S': c->signal_frame = true; break;
            default: break; /* 'B', 'G': no data */
            }
        }
        p = aend;
    }
    for (size_t i = 0; i < auglen; i++)
        if (aug[i] == 'S')
            c->signal_frame = true;
    c->insns = p;
    c->insns_end = end;
    return c->ra_reg < N_REGS && p <= end;
}

typedef struct {
    cie_t cie;
    uint64_t pc_begin, pc_end;
    const uint8_t *insns, *insns_end;
} fde_t;

/* Find and parse the FDE covering pc. */
static bool find_fde(uint64_t pc, fde_t *f)
{
    struct dl_find_object dlfo;
    if (_dl_find_object((void *)(uintptr_t)pc, &dlfo) != 0 || !dlfo.dlfo_eh_frame)
        return false;
    const uint8_t *hdr = dlfo.dlfo_eh_frame;
    const uint8_t *p = hdr + 4;
    const uint8_t *lim = p + 64; /* header fields are tiny */
    if (hdr[0] != 1)
        return false;
    uint64_t eh_frame, count;
    if (!read_encoded(&p, lim, hdr[1], (uint64_t)(uintptr_t)hdr, &eh_frame))
        return false;
    if (!read_encoded(&p, lim, hdr[2], (uint64_t)(uintptr_t)hdr, &count))
        return false;
    if (hdr[3] != 0x3b || count == 0) /* expect datarel|sdata4 sorted table */
        return false;
    const int32_t *tab = (const int32_t *)(const void *)p;
    int64_t rel = (int64_t)(pc - (uint64_t)(uintptr_t)hdr);
    uint64_t lo = 0, hi = count;
    while (hi - lo > 1) { /* last entry with initial_loc <= pc */
        uint64_t mid = lo + (hi - lo) / 2;
        if ((int64_t)tab[2 * mid] <= rel)
            lo = mid;
        else
            hi = mid;
    }
    if ((int64_t)tab[2 * lo] > rel)
        return false;
    const uint8_t *fde = hdr + tab[2 * lo + 1];
    const uint8_t *q = fde;
    uint64_t len = RD(uint32_t, q);
    if (len == 0xffffffffu)
        len = RD(uint64_t, q);
    if (len == 0 || len > (1u << 20))
        return false;
    const uint8_t *end = q + len;
    const uint8_t *idfield = q;
    uint32_t cie_off = RD(uint32_t, q);
    if (cie_off == 0)
        return false; /* that's a CIE */
    if (!parse_cie(idfield - cie_off, &f->cie))
        return false;
    uint64_t begin, range;
    if (!read_encoded(&q, end, f->cie.fde_enc, 0, &begin))
        return false;
    if (!read_encoded(&q, end, f->cie.fde_enc & 0x0f, 0, &range))
        return false;
    if (pc < begin || pc >= begin + range)
        return false;
    if (f->cie.has_aug_data) { /* the FDE's augmentation data, length first */
        uint64_t alen = uleb(&q, end);
        q += alen;
        if (q > end)
            return false;
    }
    f->pc_begin = begin;
    f->pc_end = begin + range;
    f->insns = q;
    f->insns_end = end;
    return true;
}

/* ---- call frame programs ---- */

#define STATE_STACK 8

static bool run_cfa(const uint8_t *p, const uint8_t *end, const cie_t *cie, uint64_t *loc,
                    uint64_t target, row_t *row, const row_t *initial)
{
    row_t stack[STATE_STACK];
    int sp = 0;
    while (p < end) {
        uint8_t op = *p++;
        uint8_t hi2 = op & 0xc0, low = op & 0x3f;
        uint64_t reg, delta;
        int64_t off;
        if (hi2 == 0x40) { /* advance_loc */
            delta = low * cie->code_align;
            if (*loc + delta > target)
                return true;
            *loc += delta;
            continue;
        }
        if (hi2 == 0x80) { /* offset */
            off = (int64_t)uleb(&p, end) * cie->data_align;
            if (low < N_REGS)
                row->reg[low] = (rule_t){RULE_OFFSET, off, NULL};
            continue;
        }
        if (hi2 == 0xc0) { /* restore */
            if (low < N_REGS && initial)
                row->reg[low] = initial->reg[low];
            continue;
        }
        switch (op) {
        case 0x00: break; /* nop */
        case 0x01: {      /* set_loc */
            uint64_t nl;
            if (!read_encoded(&p, end, cie->fde_enc, 0, &nl))
                return false;
            if (nl > target)
                return true;
            *loc = nl;
            break;
        }
        case 0x02: case 0x03: case 0x04: { /* advance_loc1/2/4 */
            if (op == 0x02) delta = *p++;
            else if (op == 0x03) delta = RD(uint16_t, p);
            else delta = RD(uint32_t, p);
            delta *= cie->code_align;
            if (*loc + delta > target)
                return true;
            *loc += delta;
            break;
        }
        case 0x05: /* offset_extended */
            reg = uleb(&p, end);
            off = (int64_t)uleb(&p, end) * cie->data_align;
            if (reg < N_REGS) row->reg[reg] = (rule_t){RULE_OFFSET, off, NULL};
            break;
        case 0x06: /* restore_extended */
            reg = uleb(&p, end);
            if (reg < N_REGS && initial) row->reg[reg] = initial->reg[reg];
            break;
        case 0x07: /* undefined */
            reg = uleb(&p, end);
            if (reg < N_REGS) row->reg[reg] = (rule_t){RULE_UNDEF, 0, NULL};
            break;
        case 0x08: /* same_value */
            reg = uleb(&p, end);
            if (reg < N_REGS) row->reg[reg] = (rule_t){RULE_SAME, 0, NULL};
            break;
        case 0x09: { /* register */
            reg = uleb(&p, end);
            uint64_t r2 = uleb(&p, end);
            if (reg < N_REGS) row->reg[reg] = (rule_t){RULE_REG, (int64_t)r2, NULL};
            break;
        }
        case 0x0a: /* remember_state */
            if (sp >= STATE_STACK) return false;
            stack[sp++] = *row;
            break;
        case 0x0b: /* restore_state */
            if (sp == 0) return false;
            *row = stack[--sp];
            break;
        case 0x0c: /* def_cfa */
            row->cfa_is_expr = false;
            row->cfa_reg = (uint8_t)uleb(&p, end);
            row->cfa_off = (int64_t)uleb(&p, end);
            break;
        case 0x0d: /* def_cfa_register */
            row->cfa_is_expr = false;
            row->cfa_reg = (uint8_t)uleb(&p, end);
            break;
        case 0x0e: /* def_cfa_offset */
            row->cfa_off = (int64_t)uleb(&p, end);
            break;
        case 0x0f: { /* def_cfa_expression */
            row->cfa_is_expr = true;
            row->cfa_expr = p;
            uint64_t n = uleb(&p, end);
            p += n;
            break;
        }
        case 0x10: case 0x16: { /* expression, val_expression */
            reg = uleb(&p, end);
            const uint8_t *e = p;
            uint64_t n = uleb(&p, end);
            p += n;
            if (reg < N_REGS)
                row->reg[reg] = (rule_t){op == 0x10 ? RULE_EXPR : RULE_VAL_EXPR, 0, e};
            break;
        }
        case 0x11: /* offset_extended_sf */
            reg = uleb(&p, end);
            off = sleb(&p, end) * cie->data_align;
            if (reg < N_REGS) row->reg[reg] = (rule_t){RULE_OFFSET, off, NULL};
            break;
        case 0x12: /* def_cfa_sf */
            row->cfa_is_expr = false;
            row->cfa_reg = (uint8_t)uleb(&p, end);
            row->cfa_off = sleb(&p, end) * cie->data_align;
            break;
        case 0x13: /* def_cfa_offset_sf */
            row->cfa_off = sleb(&p, end) * cie->data_align;
            break;
        case 0x14: /* val_offset */
            reg = uleb(&p, end);
            off = (int64_t)uleb(&p, end) * cie->data_align;
            if (reg < N_REGS) row->reg[reg] = (rule_t){RULE_VAL_OFFSET, off, NULL};
            break;
        case 0x15: /* val_offset_sf */
            reg = uleb(&p, end);
            off = sleb(&p, end) * cie->data_align;
            if (reg < N_REGS) row->reg[reg] = (rule_t){RULE_VAL_OFFSET, off, NULL};
            break;
        case 0x2e: /* GNU_args_size */
            (void)uleb(&p, end);
            break;
        case 0x2f: /* GNU_negative_offset_extended */
            reg = uleb(&p, end);
            off = -(int64_t)uleb(&p, end) * cie->data_align;
            if (reg < N_REGS) row->reg[reg] = (rule_t){RULE_OFFSET, off, NULL};
            break;
        default:
            return false; /* unknown opcode: can't trust the rest */
        }
    }
    return true;
}

/* ---- DWARF expressions (the subset CFI uses) ---- */

#define EXPR_STACK 16

static bool eval_expr(const uint8_t *e, const regs_t *rs, const mem_t *m, bool push_cfa,
                      uint64_t cfa, uint64_t *out)
{
    uint64_t st[EXPR_STACK];
    int n = 0;
    const uint8_t *p = e;
    uint64_t len = uleb(&p, p + 10);
    const uint8_t *end = p + len;
    if (push_cfa)
        st[n++] = cfa;
#define NEED(k) do { if (n < (k)) return false; } while (0)
#define PUSH(v) do { uint64_t v_ = (v); if (n >= EXPR_STACK) return false; st[n++] = v_; } while (0)
    for (int steps = 0; p < end; steps++) {
        if (steps > 256)
            return false;
        uint8_t op = *p++;
        uint64_t a, b;
        if (op >= 0x30 && op <= 0x4f) { PUSH(op - 0x30u); continue; }
        if (op >= 0x70 && op <= 0x8f) { /* breg0..31 */
            unsigned r = op - 0x70u;
            int64_t off = sleb(&p, end);
            if (r >= N_REGS || !(rs->valid & (1u << r)))
                return false;
            PUSH(rs->r[r] + (uint64_t)off);
            continue;
        }
        switch (op) {
        case 0x03: if (end - p < 8) return false; PUSH(RD(uint64_t, p)); break;
        case 0x06: NEED(1); if (!read_u64(m, st[n - 1], &st[n - 1])) return false; break;
        case 0x08: PUSH(*p++); break;
        case 0x09: PUSH((uint64_t)(int64_t)(int8_t)*p++); break;
        case 0x0a: PUSH(RD(uint16_t, p)); break;
        case 0x0b: PUSH((uint64_t)(int64_t)RD(int16_t, p)); break;
        case 0x0c: PUSH(RD(uint32_t, p)); break;
        case 0x0d: PUSH((uint64_t)(int64_t)RD(int32_t, p)); break;
        case 0x0e: case 0x0f: PUSH(RD(uint64_t, p)); break;
        case 0x10: PUSH(uleb(&p, end)); break;
        case 0x11: PUSH((uint64_t)sleb(&p, end)); break;
        case 0x12: NEED(1); PUSH(st[n - 1]); break;
        case 0x13: NEED(1); n--; break;
        case 0x14: NEED(2); PUSH(st[n - 2]); break;
        case 0x15: { uint8_t i = *p++; NEED(i + 1); PUSH(st[n - 1 - i]); break; }
        case 0x16: NEED(2); a = st[n - 1]; st[n - 1] = st[n - 2]; st[n - 2] = a; break;
        case 0x17: NEED(3); a = st[n - 1]; st[n - 1] = st[n - 2]; st[n - 2] = st[n - 3]; st[n - 3] = a; break;
        case 0x19: NEED(1); if ((int64_t)st[n - 1] < 0) st[n - 1] = -st[n - 1]; break;
        case 0x1f: NEED(1); st[n - 1] = -st[n - 1]; break;
        case 0x20: NEED(1); st[n - 1] = ~st[n - 1]; break;
        case 0x23: NEED(1); st[n - 1] += uleb(&p, end); break;
        case 0x1a: case 0x1b: case 0x1c: case 0x1d: case 0x1e: case 0x21: case 0x22:
        case 0x24: case 0x25: case 0x26: case 0x27: case 0x29: case 0x2a: case 0x2b:
        case 0x2c: case 0x2d: case 0x2e:
            NEED(2);
            b = st[--n];
            a = st[n - 1];
            switch (op) {
            case 0x1a: a &= b; break;
            case 0x1b: if (!b) return false; a = (uint64_t)((int64_t)a / (int64_t)b); break;
            case 0x1c: a -= b; break;
            case 0x1d: if (!b) return false; a %= b; break;
            case 0x1e: a *= b; break;
            case 0x21: a |= b; break;
            case 0x22: a += b; break;
            case 0x24: a = b < 64 ? a << b : 0; break;
            case 0x25: a = b < 64 ? a >> b : 0; break;
            case 0x26: a = b < 64 ? (uint64_t)((int64_t)a >> b) : 0; break;
            case 0x27: a ^= b; break;
            case 0x29: a = a == b; break;
            case 0x2a: a = (int64_t)a >= (int64_t)b; break;
            case 0x2b: a = (int64_t)a > (int64_t)b; break;
            case 0x2c: a = (int64_t)a <= (int64_t)b; break;
            case 0x2d: a = (int64_t)a < (int64_t)b; break;
            case 0x2e: a = a != b; break;
            }
            st[n - 1] = a;
            break;
        case 0x28: { /* bra */
            int16_t d = RD(int16_t, p);
            NEED(1);
            if (st[--n] != 0) p += d;
            break;
        }
        case 0x2f: { int16_t d = RD(int16_t, p); p += d; break; }
        case 0x92: { /* bregx */
            uint64_t r = uleb(&p, end);
            int64_t off = sleb(&p, end);
            if (r >= N_REGS || !(rs->valid & (1u << r)))
                return false;
            PUSH(rs->r[r] + (uint64_t)off);
            break;
        }
        case 0x94: { /* deref_size */
            uint8_t sz = *p++;
            NEED(1);
            if (sz == 0 || sz > 8 || !read_u64(m, st[n - 1] & ~7ull, &a))
                return false;
            unsigned shift = (unsigned)(st[n - 1] & 7) * 8;
            a >>= shift;
            if (sz < 8) a &= ((uint64_t)1 << (sz * 8)) - 1;
            st[n - 1] = a;
            break;
        }
        case 0x96: break; /* nop */
        default: return false;
        }
        if (p > end)
            return false;
    }
#undef NEED
#undef PUSH
    if (n < 1)
        return false;
    *out = st[n - 1];
    return true;
}

/* ---- a cache of simple unwind rows ----
 *
 * Most frames' rules are "CFA = rsp or rbp + k; the return address and the
 * callee-saved registers at fixed offsets from the CFA". Such a row is
 * cached by pc in a direct-mapped table, so a hot pc costs one lookup
 * instead of a search and two CFA programs. Entries are written and read
 * with relaxed atomics and carry a checksum, so a torn entry (two writers,
 * or a reader racing a writer) reads as a miss. hs_unwind_forget_code()
 * clears it when code is unloaded. */

#define CACHE_SIZE 8192
#define N_TRACKED 7 /* rbx, rbp, r12, r13, r14, r15, return address */
static const uint8_t tracked_reg[N_TRACKED] = {R_RBX, R_RBP, R_R12, R_R13, R_R14, R_R15, R_RA};

typedef struct {
    int32_t cfa_off;
    uint8_t cfa_reg;
    uint8_t outermost;
    int8_t off[N_TRACKED]; /* saved at CFA + 8*off; 0 = same value */
    uint8_t saved;         /* bit i: off[i] != 0 */
    int8_t lo, hi;         /* the least and greatest off[i] */
} compact_row;
_Static_assert(sizeof(compact_row) == 16, "a cached row is two words");

typedef struct {
    _Atomic uint64_t pc, w0, w1, check;
} cache_entry;

static cache_entry g_cache[CACHE_SIZE];

static inline uint64_t cache_check(uint64_t pc, uint64_t w0, uint64_t w1)
{
    return (pc * 0x9e3779b97f4a7c15ull) ^ (w0 * 0xc2b2ae3d27d4eb4full) ^ w1 ^ 0x5bd1e995u;
}

static inline cache_entry *cache_slot(uint64_t pc)
{
    return &g_cache[(pc ^ (pc >> 13) ^ (pc >> 26)) & (CACHE_SIZE - 1)];
}

static HS_SAMPLE_PATH bool cache_get(uint64_t pc, compact_row *c)
{
    cache_entry *e = cache_slot(pc);
    uint64_t epc = atomic_load_explicit(&e->pc, memory_order_relaxed);
    if (epc != pc)
        return false;
    uint64_t w[2] = {atomic_load_explicit(&e->w0, memory_order_relaxed),
                     atomic_load_explicit(&e->w1, memory_order_relaxed)};
    if (atomic_load_explicit(&e->check, memory_order_relaxed) != cache_check(pc, w[0], w[1]))
        return false;
    memcpy(c, w, sizeof *c);
    return true;
}

static void cache_put(uint64_t pc, const compact_row *c)
{
    uint64_t w[2] = {0, 0};
    memcpy(w, c, sizeof *c);
    cache_entry *e = cache_slot(pc);
    atomic_store_explicit(&e->pc, pc, memory_order_relaxed);
    atomic_store_explicit(&e->w0, w[0], memory_order_relaxed);
    atomic_store_explicit(&e->w1, w[1], memory_order_relaxed);
    atomic_store_explicit(&e->check, cache_check(pc, w[0], w[1]), memory_order_relaxed);
}

void hs_unwind_forget_code(void)
{
    for (size_t i = 0; i < CACHE_SIZE; i++)
        atomic_store_explicit(&g_cache[i].pc, 0, memory_order_relaxed);
}

/* The compact form of row, if it has one. */
static bool compact_of(const row_t *row, const cie_t *cie, compact_row *c)
{
    if (row->cfa_is_expr || row->cfa_reg >= N_REGS || cie->signal_frame || cie->ra_reg != R_RA ||
        row->cfa_off < INT32_MIN || row->cfa_off > INT32_MAX || row->reg[R_RSP].type != RULE_SAME)
        return false;
    memset(c, 0, sizeof *c);
    c->cfa_reg = row->cfa_reg;
    c->cfa_off = (int32_t)row->cfa_off;
    if (row->reg[R_RA].type == RULE_UNDEF) {
        c->outermost = 1;
        return true;
    }
    for (int i = 0; i < N_TRACKED; i++) {
        const rule_t *r = &row->reg[tracked_reg[i]];
        if (r->type == RULE_SAME && tracked_reg[i] != R_RA)
            continue;
        if (r->type != RULE_OFFSET || r->value % 8 != 0 || r->value / 8 < -127 || r->value / 8 > 127 ||
            r->value == 0)
            return false;
        c->off[i] = (int8_t)(r->value / 8);
        c->saved |= (uint8_t)(1u << i);
        if (c->off[i] < c->lo || c->saved == (1u << i))
            c->lo = c->off[i];
        if (c->off[i] > c->hi || c->saved == (1u << i))
            c->hi = c->off[i];
    }
    return true;
}

/* A stack word step_cached knows to be on the known stack: a plain load
 * (other frames' slots: not for AddressSanitizer to check). */
__attribute__((no_sanitize_address)) static inline uint64_t load_slot(uint64_t addr)
{
    return *(const uint64_t *)(uintptr_t)addr;
}

#define TRACKED_MASK ((1u << R_RBX) | (1u << R_RBP) | (1u << R_R12) | (1u << R_R13) | (1u << R_R14) | (1u << R_R15) | (1u << R_RA))

/* One step with a cached row: 1 done, 0 outermost, -1 can't. Only the
 * tracked registers and rsp survive the step: a register the row does not
 * save keeps its value (and its validity), one it saves is read from its
 * slot (and is invalid if the slot can't be read). This runs for nearly
 * every frame of every sample: when all the row's slots are on the known
 * stack (one check), they are plain loads of the saved registers only. */
static inline HS_SAMPLE_PATH int step_cached(regs_t *rs, const compact_row *c, const mem_t *m)
{
    if (c->cfa_reg >= N_REGS || !(rs->valid & (1u << c->cfa_reg)))
        return -1;
    if (c->outermost)
        return 0;
    uint64_t cfa = rs->r[c->cfa_reg] + (uint64_t)(int64_t)c->cfa_off;
    uint32_t valid = (rs->valid & TRACKED_MASK) | (1u << R_RSP);
    const hs_stack_bounds *b = m->bounds;
    uint64_t lo = cfa + (uint64_t)(8 * (int64_t)c->lo), hi = cfa + (uint64_t)(8 * (int64_t)c->hi) + 8;
    if (__builtin_expect(b && cfa % 8 == 0 && lo >= b->lo && hi <= b->hi && lo < hi, 1)) {
        for (unsigned k = c->saved; k; k &= k - 1) {
            int i = __builtin_ctz(k);
            rs->r[tracked_reg[i]] = load_slot(cfa + (uint64_t)(8 * (int64_t)c->off[i]));
            valid |= 1u << tracked_reg[i];
        }
    } else {
        uint64_t ra;
        if (!read_u64(m, cfa + (uint64_t)(8 * (int64_t)c->off[N_TRACKED - 1]), &ra))
            return -1;
        for (unsigned k = c->saved & ((1u << (N_TRACKED - 1)) - 1); k; k &= k - 1) {
            int i = __builtin_ctz(k);
            unsigned r = tracked_reg[i];
            if (read_u64(m, cfa + (uint64_t)(8 * (int64_t)c->off[i]), &rs->r[r]))
                valid |= 1u << r;
            else
                valid &= ~(1u << r);
        }
        rs->r[R_RA] = ra;
        valid |= 1u << R_RA;
    }
    rs->r[R_RSP] = cfa;
    rs->valid = valid;
    return 1;
}

/* ---- one step ---- */

#define CALLEE_SAVED ((1u << R_RBX) | (1u << R_RBP) | (1u << R_R12) | (1u << R_R13) | (1u << R_R14) | (1u << R_R15))

/* Unwind one frame with CFI. Returns 1 on success, 0 at the outermost
 * frame (return address undefined), -1 when no CFI covers the pc or a rule
 * can't be evaluated. *signal_frame tells whether the caller's pc is exact. */
static int step_cfi(regs_t *rs, uint64_t lookup_pc, const mem_t *m, bool *signal_frame)
{
    compact_row c;
    fde_t f;
    if (!find_fde(lookup_pc, &f))
        return -1;
    row_t initial, row;
    memset(&initial, 0, sizeof initial);
    for (int i = 0; i < N_REGS; i++)
        initial.reg[i].type = (CALLEE_SAVED & (1u << i)) ? RULE_SAME : RULE_UNDEF;
    initial.reg[R_RSP].type = RULE_SAME;
    uint64_t loc = f.pc_begin;
    if (!run_cfa(f.cie.insns, f.cie.insns_end, &f.cie, &loc, UINT64_MAX, &initial, NULL))
        return -1;
    row = initial;
    loc = f.pc_begin;
    if (!run_cfa(f.insns, f.insns_end, &f.cie, &loc, lookup_pc, &row, &initial))
        return -1;
    if (compact_of(&row, &f.cie, &c)) {
        cache_put(lookup_pc, &c);
        *signal_frame = false;
        return step_cached(rs, &c, m);
    }

    uint64_t cfa;
    if (row.cfa_is_expr) {
        if (!eval_expr(row.cfa_expr, rs, m, false, 0, &cfa))
            return -1;
    } else {
        if (row.cfa_reg >= N_REGS || !(rs->valid & (1u << row.cfa_reg)))
            return -1;
        cfa = rs->r[row.cfa_reg] + (uint64_t)row.cfa_off;
    }
    regs_t nr = {.valid = 0};
    for (int i = 0; i < N_REGS; i++) {
        const rule_t *r = &row.reg[i];
        uint64_t v;
        switch (r->type) {
        case RULE_SAME:
            if (rs->valid & (1u << i)) { nr.r[i] = rs->r[i]; nr.valid |= 1u << i; }
            break;
        case RULE_UNDEF: break;
        case RULE_OFFSET:
            if (read_u64(m, cfa + (uint64_t)r->value, &v)) { nr.r[i] = v; nr.valid |= 1u << i; }
            break;
        case RULE_VAL_OFFSET: nr.r[i] = cfa + (uint64_t)r->value; nr.valid |= 1u << i; break;
        case RULE_REG:
            if (r->value < N_REGS && (rs->valid & (1u << r->value))) {
                nr.r[i] = rs->r[r->value];
                nr.valid |= 1u << i;
            }
            break;
        case RULE_EXPR:
            if (eval_expr(r->expr, rs, m, true, cfa, &v) && read_u64(m, v, &v)) {
                nr.r[i] = v;
                nr.valid |= 1u << i;
            }
            break;
        case RULE_VAL_EXPR:
            if (eval_expr(r->expr, rs, m, true, cfa, &v)) { nr.r[i] = v; nr.valid |= 1u << i; }
            break;
        }
    }
    unsigned ra = (unsigned)f.cie.ra_reg;
    if (row.reg[ra].type == RULE_UNDEF)
        return 0; /* outermost frame, e.g. _start or clone's child */
    if (!(nr.valid & (1u << ra)))
        return -1;
    /* The stack pointer of the caller is the CFA unless a rule said otherwise. */
    if (row.reg[R_RSP].type == RULE_SAME) {
        nr.r[R_RSP] = cfa;
        nr.valid |= 1u << R_RSP;
    }
    nr.r[R_RA] = nr.r[ra];
    nr.valid |= 1u << R_RA;
    *signal_frame = f.cie.signal_frame;
    *rs = nr;
    return 1;
}

/* Frame-pointer step for code without CFI. */
static bool step_fp(regs_t *rs, const mem_t *m)
{
    if (!(rs->valid & (1u << R_RBP)) || !(rs->valid & (1u << R_RSP)))
        return false;
    uint64_t fp = rs->r[R_RBP];
    if (fp < rs->r[R_RSP] || fp % 8 != 0)
        return false;
    const hs_stack_bounds *b = m->bounds;
    if (b && b->hi && (fp < b->lo || fp + 16 > b->hi))
        return false;
    uint64_t nfp, ra;
    if (!read_u64(m, fp, &nfp) || !read_u64(m, fp + 8, &ra))
        return false;
    rs->r[R_RBP] = nfp;
    rs->r[R_RSP] = fp + 16;
    rs->r[R_RA] = ra;
    rs->valid = (1u << R_RBP) | (1u << R_RSP) | (1u << R_RA);
    return true;
}

static HS_SAMPLE_PATH int unwind_regs(regs_t *rs, const hs_stack_bounds *bounds, uint64_t *pcs, int max, int skip,
                       bool exact)
{
    /* Below the interrupted stack pointer the stack may be unmapped (the main
     * thread's grows on demand): direct reads only between sp and the top. */
    hs_stack_bounds b = {0, 0};
    if (bounds && bounds->hi && rs->r[R_RSP] >= bounds->lo && rs->r[R_RSP] < bounds->hi) {
        b.lo = rs->r[R_RSP];
        b.hi = bounds->hi;
    }
    mem_t m = {&b};
    int n = 0;
    /* exact: the leaf pc (unless it is a return address) and pcs after a
     * signal frame */
    for (int depth = 0; n < max && depth < max + skip; depth++) {
        uint64_t pc = rs->r[R_RA];
        if (pc == 0)
            break;
        uint64_t lookup = exact ? pc : pc - 1;
        if (depth >= skip)
            pcs[n++] = lookup;
        uint64_t old_sp = rs->r[R_RSP];
        bool sig = false;
        compact_row c;
        int r = cache_get(lookup, &c) ? step_cached(rs, &c, &m) : step_cfi(rs, lookup, &m, &sig);
        if (r == 0)
            break;
        if (r < 0 && !step_fp(rs, &m))
            break;
        if (!(rs->valid & (1u << R_RSP)))
            break;
        /* The stack grows down, so callers' frames are at higher addresses;
         * a signal frame may point anywhere (alternate stacks). */
        if (!sig && rs->r[R_RSP] <= old_sp)
            break;
        exact = sig;
    }
    return n;
}

int hs_unwind_context(const ucontext_t *uc, const hs_stack_bounds *bounds, uint64_t *pcs, int max)
{
    const greg_t *g = uc->uc_mcontext.gregs;
    regs_t rs;
    rs.r[R_RAX] = (uint64_t)g[REG_RAX];
    rs.r[R_RDX] = (uint64_t)g[REG_RDX];
    rs.r[R_RCX] = (uint64_t)g[REG_RCX];
    rs.r[R_RBX] = (uint64_t)g[REG_RBX];
    rs.r[R_RSI] = (uint64_t)g[REG_RSI];
    rs.r[R_RDI] = (uint64_t)g[REG_RDI];
    rs.r[R_RBP] = (uint64_t)g[REG_RBP];
    rs.r[R_RSP] = (uint64_t)g[REG_RSP];
    rs.r[R_R8] = (uint64_t)g[REG_R8];
    rs.r[R_R9] = (uint64_t)g[REG_R9];
    rs.r[R_R10] = (uint64_t)g[REG_R10];
    rs.r[R_R11] = (uint64_t)g[REG_R11];
    rs.r[R_R12] = (uint64_t)g[REG_R12];
    rs.r[R_R13] = (uint64_t)g[REG_R13];
    rs.r[R_R14] = (uint64_t)g[REG_R14];
    rs.r[R_R15] = (uint64_t)g[REG_R15];
    rs.r[R_RA] = (uint64_t)g[REG_RIP];
    rs.valid = (1u << N_REGS) - 1;
    return unwind_regs(&rs, bounds, pcs, max, 0, true);
}

int hs_unwind_from(uint64_t pc, uint64_t sp, const hs_stack_bounds *bounds, uint64_t *pcs, int max)
{
    regs_t rs;
    rs.r[R_RA] = pc;
    rs.r[R_RSP] = sp;
    rs.valid = (1u << R_RA) | (1u << R_RSP);
    return unwind_regs(&rs, bounds, pcs, max, 0, true);
}

__attribute__((noinline)) int hs_unwind_here(const hs_stack_bounds *bounds, uint64_t *pcs, int max,
                                             int skip)
{
    regs_t rs;
    uint64_t rip, rsp, rbp, rbx, r12, r13, r14, r15;
    __asm__ volatile("lea 0(%%rip), %0\n\t"
                     "mov %%rsp, %1\n\t"
                     "mov %%rbp, %2\n\t"
                     "mov %%rbx, %3\n\t"
                     "mov %%r12, %4\n\t"
                     "mov %%r13, %5\n\t"
                     "mov %%r14, %6\n\t"
                     "mov %%r15, %7\n\t"
                     : "=r"(rip), "=r"(rsp), "=r"(rbp), "=r"(rbx), "=r"(r12), "=r"(r13),
                       "=r"(r14), "=r"(r15));
    rs.r[R_RA] = rip;
    rs.r[R_RSP] = rsp;
    rs.r[R_RBP] = rbp;
    rs.r[R_RBX] = rbx;
    rs.r[R_R12] = r12;
    rs.r[R_R13] = r13;
    rs.r[R_R14] = r14;
    rs.r[R_R15] = r15;
    rs.valid = (1u << R_RA) | (1u << R_RSP) | (1u << R_RBP) | (1u << R_RBX) | (1u << R_R12) |
               (1u << R_R13) | (1u << R_R14) | (1u << R_R15);
    /* Frame 0 is this function itself: always skip it. */
    return unwind_regs(&rs, bounds, pcs, max, skip + 1, true);
}

HS_SAMPLE_PATH int hs_unwind_call(const hs_call_regs *c, const hs_stack_bounds *bounds, uint64_t *pcs, int max)
{
    regs_t rs;
    rs.r[R_RA] = c->pc;
    rs.r[R_RSP] = c->sp;
    rs.r[R_RBP] = c->rbp;
    rs.r[R_RBX] = c->rbx;
    rs.r[R_R12] = c->r12;
    rs.r[R_R13] = c->r13;
    rs.r[R_R14] = c->r14;
    rs.r[R_R15] = c->r15;
    rs.valid = (1u << R_RA) | (1u << R_RSP) | (1u << R_RBP) | (1u << R_RBX) | (1u << R_R12) |
               (1u << R_R13) | (1u << R_R14) | (1u << R_R15);
    return unwind_regs(&rs, bounds, pcs, max, 0, false);
}
