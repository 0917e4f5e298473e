/* names_elf.c — what the server's naming (names.c) reads of a debug file
 * it is offered: build ID, loadable segments, whether it has debug info or
 * symbols (or is a kernel vDSO image) and whether its code is there. */
#define _GNU_SOURCE
#include "server/names_elf.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether the dynamic section scn names the object a kernel vDSO
 * (DT_SONAME linux-vdso.so.1, linux-gate.so.1 and kin). */
static bool is_vdso(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh)
{
    Elf_Data *d = elf_getdata(scn, NULL);
    if (!d || !sh->sh_entsize)
        return false;
    for (size_t i = 0; i < sh->sh_size / sh->sh_entsize; i++) {
        GElf_Dyn dyn;
        if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
            break;
        if (dyn.d_tag != DT_SONAME)
            continue;
        const char *so = elf_strptr(e, sh->sh_link, dyn.d_un.d_val);
        return so && (strncmp(so, "linux-vdso", 10) == 0 || strncmp(so, "linux-gate", 10) == 0);
    }
    return false;
}

int hs_names_inspect(const char *path, elf_info *out)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct stat st;
    Elf *e = NULL;
    int rc = -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        goto out;
    elf_version(EV_CURRENT);
    e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh))
        goto out;
    const void *bits = NULL;
    ssize_t nb = dwelf_elf_gnu_build_id(e, &bits);
    if (nb > 0 && bits && (size_t)nb * 2 <= HS_BUILD_ID_MAX)
        for (ssize_t i = 0; i < nb; i++)
            sprintf(out->bid + 2 * i, "%02x", ((const unsigned char *)bits)[i]);
    size_t nph = 0;
    if (elf_getphdrnum(e, &nph) != 0)
        nph = 0;
    bool any_exec = false, exec_bytes = true;
    for (size_t i = 0; i < nph && out->n_loads < 16; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        bool x = (ph.p_flags & PF_X) != 0;
        out->loads[out->n_loads++] = (load_t){ph.p_offset, ph.p_filesz, ph.p_vaddr, x};
        if (x) {
            any_exec = true;
            exec_bytes &= ph.p_filesz > 0;
        }
    }
    /* a .debug file keeps the program headers but not the code: its
     * segments' offsets mean nothing (see to_vaddr) */
    size_t shstrndx;
    Elf_Scn *scn = NULL;
    bool text_nobits = false;
    if (elf_getshdrstrndx(e, &shstrndx) == 0)
        while ((scn = elf_nextscn(e, scn))) {
            GElf_Shdr sh;
            const char *nm;
            if (!gelf_getshdr(scn, &sh) || !(nm = elf_strptr(e, shstrndx, sh.sh_name)))
                continue;
            if (sh.sh_type != SHT_NOBITS && (strcmp(nm, ".debug_info") == 0 || strcmp(nm, ".zdebug_info") == 0 ||
                                             strcmp(nm, ".symtab") == 0))
                out->debug = true;
            if (strcmp(nm, ".text") == 0 && sh.sh_type == SHT_NOBITS)
                text_nobits = true;
            /* the vDSO has no .symtab but every function in .dynsym: its
             * image is all there is to name its frames with */
            if (sh.sh_type == SHT_DYNAMIC && is_vdso(e, scn, &sh))
                out->debug = true;
        }
    out->complete = any_exec && exec_bytes && !text_nobits;
    rc = 0;
out:
    if (e)
        elf_end(e);
    close(fd);
    return rc;
}
