/* disasm.c — `disasm RE` (pprof's -disasm): the machine code of every
 * function matching RE that has samples, one instruction a line with its
 * flat and cum value, as pprof's PrintAssembly annotates it. The code comes
 * from the profiled binaries on disk through binutils: `nm -n -S -C` for
 * the symbols and their extent, `objdump -d -l -C` for the instructions and
 * their source lines. Sample addresses are mapped to the file's addresses
 * with the mapping and the ELF program headers. Each node of the view
 * (built at --addresses granularity) counts for the instruction that
 * contains its address, as pprof's annotateAssembly does. */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report/report.h"
#include "report/text_reports.h"
#include "base/vec.h"

/* Run argv, return its stdout (NUL-terminated, malloc'd) or NULL. */
static char *run_capture(char *const argv[])
{
    int fds[2];
    if (pipe(fds) != 0)
        return NULL;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return NULL;
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    size_t len = 0, cap = 65536;
    char *buf = malloc(cap);
    ssize_t r = 0;
    while (buf) {
        if (HS_VEC_RESERVE(buf, cap, len + 2)) {
            free(buf);
            buf = NULL;
            break;
        }
        r = read(fds[0], buf + len, cap - len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!buf || r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

int hs_report_elf_delta(const char *path, const hs_mapping *m, int64_t *delta)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    Elf64_Ehdr eh;
    int rc = -1;
    if (fread(&eh, sizeof eh, 1, f) != 1 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr))
        goto out;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        if (fseek(f, (long)(eh.e_phoff + i * sizeof ph), SEEK_SET) != 0 ||
            fread(&ph, sizeof ph, 1, f) != 1)
            goto out;
        if (ph.p_type != PT_LOAD)
            continue;
        /* the segment that holds the mapping's offset (page-aligned) */
        uint64_t pg = ph.p_offset & ~(uint64_t)0xfff;
        if (m->file_offset >= pg && m->file_offset < ph.p_offset + ph.p_filesz) {
            *delta = (int64_t)(ph.p_vaddr - ph.p_offset) + (int64_t)m->file_offset -
                     (int64_t)m->memory_start;
            rc = 0;
            break;
        }
    }
out:
    fclose(f);
    return rc;
}

typedef struct {
    uint64_t addr; /* file address */
    int64_t flat, cum;
    const char *function, *file;
    int64_t line;
} dnode;

typedef struct {
    char *name;
    uint64_t start, end;
    const hs_mapping *m;
    int64_t delta;
} dsym;

static int cmp_dnode(const void *a, const void *b)
{
    const dnode *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_dsym(const void *a, const void *b)
{
    const dsym *x = a, *y = b;
    int c = strcmp(x->name, y->name); /* pprof: by name, then start */
    if (c)
        return c;
    return x->start < y->start ? -1 : x->start > y->start;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Print one symbol's instructions; nodes sorted by address. */
static int print_symbol(FILE *out, const hs_text_ctx *c, const dsym *s, const dnode *ns, size_t nn,
                        char *err, size_t errlen)
{
    char a0[40], a1[40], path[4096];
    snprintf(a0, sizeof a0, "--start-address=0x%" PRIx64, s->start);
    snprintf(a1, sizeof a1, "--stop-address=0x%" PRIx64, s->end);
    snprintf(path, sizeof path, "%s", hs_profile_string(c->v->profile, s->m->filename));
    char *argv[] = {"objdump", "-d", "-l", "-C", "--no-show-raw-insn", a0, a1, path, NULL};
    char *text = run_capture(argv);
    if (!text) {
        snprintf(err, errlen, "objdump -d %s failed (is binutils installed?)", path);
        return -1;
    }
    /* instructions: "  4b2880:\tmov ..." ; "name():" and "/file:line" lines before them */
    typedef struct {
        uint64_t addr;
        char *text;
        const char *fn, *file;
        int64_t line;
    } inst;
    size_t ni = 0, cap = 256;
    inst *in = malloc(cap * sizeof *in);
    const char *cur_fn = "", *cur_file = "";
    int64_t cur_line = 0;
    int rc = -1;
    if (!in)
        goto oom;
    for (char *ln = strtok(text, "\n"); ln; ln = strtok(NULL, "\n")) {
        char *colon;
        size_t l = strlen(ln);
        if (ln[0] == ' ' && (colon = strchr(ln, ':')) && colon[1] == '\t') {
            char *end;
            uint64_t addr = strtoull(ln, &end, 16);
            if (end != colon)
                continue;
            if (HS_VEC_RESERVE(in, cap, ni + 1))
                goto oom;
            char *t = colon + 2;
            for (char *q = t; *q; q++) /* objdump pads with tabs and runs of spaces */
                if (*q == '\t')
                    *q = ' ';
            size_t tl = strlen(t);
            while (tl && t[tl - 1] == ' ')
                t[--tl] = 0;
            in[ni++] = (inst){addr, t, cur_fn, cur_file, cur_line};
        } else if (l > 3 && strcmp(ln + l - 3, "():") == 0) {
            ln[l - 3] = 0;
            cur_fn = ln;
        } else if (ln[0] == '/' || (ln[0] != ' ' && strchr(ln, ':') && !strchr(ln, '<'))) {
            char *c2 = strrchr(ln, ':');
            char *end;
            long long v = c2 ? strtoll(c2 + 1, &end, 10) : 0;
            if (c2 && end != c2 + 1) {
                *c2 = 0;
                cur_file = base_name(ln);
                cur_line = v;
            }
        }
    }
    int64_t flat = 0, cum = 0;
    for (size_t i = 0; i < nn; i++) {
        flat += ns[i].flat;
        cum += ns[i].cum;
    }
    char fb[64], cb[64], pb[32];
    fprintf(out, "ROUTINE ======================== %s\n", s->name);
    fprintf(out, "%10s %10s (flat, cum) %s of Total\n", hs_text_value(c, fb, sizeof fb, flat),
            hs_text_value(c, cb, sizeof cb, cum), hs_format_percent(pb, sizeof pb, cum, c->v->total));
    const char *fn = "", *file = "";
    int64_t line = 0;
    size_t k = 0;
    for (size_t i = 0; i < ni; i++) {
        uint64_t next = i + 1 < ni ? in[i + 1].addr : s->end;
        int64_t f = 0, cu = 0;
        const char *ifn = in[i].fn, *ifile = in[i].file;
        int64_t iline = in[i].line;
        for (; k < nn && ns[k].addr < next; k++) {
            if (ns[k].addr < in[i].addr)
                continue;
            f += ns[k].flat;
            cu += ns[k].cum;
            if (!*ifile && *ns[k].file)
                ifile = base_name(ns[k].file);
            if (!iline)
                iline = ns[k].line;
            if (!*ifn)
                ifn = ns[k].function;
        }
        char loc[1024] = "";
        if (strcmp(ifn, fn) || strcmp(ifile, file) || iline != line) {
            fn = ifn, file = ifile, line = iline;
            size_t w = 0;
            if (*fn)
                w += (size_t)snprintf(loc + w, sizeof loc - w, "%s ", fn);
            if (*file && w < sizeof loc)
                w += (size_t)snprintf(loc + w, sizeof loc - w, line ? "%s:%lld" : "%s", file, (long long)line);
        }
        char fv[64] = ".", cv[64] = ".";
        if (f)
            hs_text_value(c, fv, sizeof fv, f);
        if (cu)
            hs_text_value(c, cv, sizeof cv, cu);
        if (!*loc)
            fprintf(out, "%10s %10s %10" PRIx64 ": %s\n", fv, cv, in[i].addr, in[i].text);
        else if (strlen(in[i].text) < 40)
            fprintf(out, "%10s %10s %10" PRIx64 ": %-40s;%s\n", fv, cv, in[i].addr, in[i].text, loc);
        else
            fprintf(out, "%74s;%s\n%10s %10s %10" PRIx64 ": %s\n", "", loc, fv, cv, in[i].addr,
                    in[i].text);
    }
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
done:
    free(in);
    free(text);
    return rc;
}

int hs_report_disasm(FILE *out, const hs_view *v, const hs_analysis_options *o, const hs_regex *rx,
                     const char *rx_text, char *err, size_t errlen)
{
    const hs_profile *p = v->profile;
    hs_analysis_options no; /* the untrimmed graph, as pprof's PrintAssembly */
    hs_analysis_options_init(&no);
    hs_analysis_apply_defaults(&no, HS_KIND_NOTRIM);
    no.mean = o->mean;
    hs_graph graph, *g = &graph;
    if (hs_graph_build(v, &no, g, err, errlen) < 0)
        return -1;
    hs_text_ctx c;
    hs_text_ctx_init(&c, v, NULL, o);
    char tb[64];
    fprintf(out, "Total: %s\n", hs_text_value(&c, tb, sizeof tb, v->total));
    dnode *ns = calloc(v->n_nodes + 1, sizeof *ns);
    dsym *syms = NULL;
    size_t nsyms = 0, capsyms = 0;
    int rc = -1;
    if (!ns)
        goto oom;
    for (size_t mi = 0; mi < p->n_mappings; mi++) {
        const hs_mapping *m = &p->mappings[mi];
        const char *path = hs_profile_string(p, m->filename);
        int64_t delta;
        if (!*path || path[0] == '[' || access(path, R_OK) != 0 || hs_report_elf_delta(path, m, &delta) < 0)
            continue;
        /* this mapping's sample nodes, in file addresses */
        size_t nn = 0;
        for (size_t i = 0; i < v->n_nodes; i++) {
            const hs_node *n = &v->nodes[i];
            const hs_graph_node *gn = &g->nodes[i];
            if (!n->address || n->address < m->memory_start || n->address >= m->memory_limit ||
                (!gn->flat && !gn->cum))
                continue;
            ns[nn++] = (dnode){n->address + (uint64_t)delta, hs_graph_flat(gn), hs_graph_cum(gn),
                               n->function, n->file, n->line};
        }
        if (!nn)
            continue;
        qsort(ns, nn, sizeof *ns, cmp_dnode);
        char pbuf[4096];
        snprintf(pbuf, sizeof pbuf, "%s", path);
        char *argv[] = {"nm", "-n", "-S", "-C", "--defined-only", pbuf, NULL};
        char *list = run_capture(argv);
        if (!list)
            continue; /* no symbol table: nothing to show for this binary */
        for (char *ln = strtok(list, "\n"); ln; ln = strtok(NULL, "\n")) {
            char *e1, *e2;
            uint64_t start = strtoull(ln, &e1, 16);
            if (*e1 != ' ')
                continue;
            uint64_t size = strtoull(e1 + 1, &e2, 16);
            if (e2 == e1 + 1 || e2[0] != ' ' || !strchr("tTwW", e2[1]) || e2[2] != ' ' || !size)
                continue;
            const char *name = e2 + 3;
            if (!hs_regex_match(rx, name))
                continue;
            bool has = false; /* only functions with samples, as pprof */
            for (size_t k = 0; k < nn && !has; k++)
                has = ns[k].addr >= start && ns[k].addr < start + size;
            if (!has)
                continue;
            if (HS_VEC_RESERVE(syms, capsyms, nsyms + 1)) {
                free(list);
                goto oom;
            }
            if (!(syms[nsyms].name = strdup(name))) {
                free(list);
                goto oom;
            }
            syms[nsyms].start = start;
            syms[nsyms].end = start + size;
            syms[nsyms].m = m;
            syms[nsyms].delta = delta;
            nsyms++;
        }
        free(list);
    }
    if (nsyms == 0) {
        snprintf(err, errlen, "no matches found for regexp: %s", rx_text);
        goto out;
    }
    qsort(syms, nsyms, sizeof *syms, cmp_dsym);
    for (size_t si = 0; si < nsyms; si++) {
        const dsym *s = &syms[si];
        size_t nn = 0;
        for (size_t i = 0; i < v->n_nodes; i++) {
            const hs_node *n = &v->nodes[i];
            const hs_graph_node *gn = &g->nodes[i];
            if (!n->address || n->address < s->m->memory_start || n->address >= s->m->memory_limit)
                continue;
            uint64_t fa = n->address + (uint64_t)s->delta;
            if (fa < s->start || fa >= s->end || (!gn->flat && !gn->cum))
                continue;
            ns[nn++] = (dnode){fa, hs_graph_flat(gn), hs_graph_cum(gn), n->function, n->file, n->line};
        }
        qsort(ns, nn, sizeof *ns, cmp_dnode);
        if (print_symbol(out, &c, s, ns, nn, err, errlen) < 0)
            goto out;
    }
    rc = hs_text_written(out, err, errlen);
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
out:
    for (size_t i = 0; i < nsyms; i++)
        free(syms[i].name);
    free(syms);
    free(ns);
    hs_graph_free(g);
    return rc;
}
