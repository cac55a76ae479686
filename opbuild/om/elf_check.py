"""The ELF shared objects an `.om` carries, checked before they are dlopened.

dlopen runs in the caller's process (a kernel launch may be isolated, loading it is not): it maps
each PT_LOAD segment from the file, and touching a page past the end of a truncated file is
SIGBUS, which no worker contains (issue 25). So every native item of a model (TBE_KERNELS,
SO_BINS, CUST_AICPU_KERNELS) is checked first, from its bytes alone:

* the ELF header: magic, class, byte order and machine of this host (a 64-bit little-endian
  x86_64 .so on x86_64), version 1, type ET_DYN (a shared object), header sizes;
* every program header inside the file, and every segment's file bytes (`p_offset + p_filesz`)
  too, with at least one PT_LOAD;
* every section header inside the file, and every section's bytes (but SHT_NOBITS's) too.

This rejects truncated, cut or re-headed files with one OmError naming the item; it does not
make a hostile (trusted) shared object safe: what its code or relocations do is trust's
business (docs/om-format.md, "Trust").
"""

from __future__ import annotations

import platform
import struct
import sys

from opbuild.om.errors import OmError

ELF_MAGIC = b"\x7fELF"
ELFCLASS64, ELFDATA2LSB, ELFDATA2MSB, EV_CURRENT, ET_DYN = 2, 1, 2, 1, 3
PT_LOAD, SHT_NOBITS = 1, 8
EM_BY_ARCH = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183, "riscv64": 243, "ppc64le": 21, "s390x": 22}
"""e_machine of the 64-bit hosts opbuild knows (platform.machine() -> EM_*)."""
_EHDR = struct.Struct("HHIQQQIHHHHHH")  # after e_ident[16]: e_type .. e_shstrndx (48 bytes)
_PHDR = struct.Struct("IIQQQQQQ")  # 56 bytes
_SHDR = struct.Struct("IIQQQQIIQQ")  # 64 bytes
EHDR_SIZE = 16 + _EHDR.size


def host_elf() -> tuple[int, int, int | None]:
    """(class, byte order, machine) of this host's shared objects (machine None: unknown arch)."""
    cls = ELFCLASS64 if sys.maxsize > 2 ** 32 else 1
    data = ELFDATA2LSB if sys.byteorder == "little" else ELFDATA2MSB
    return cls, data, EM_BY_ARCH.get(platform.machine().lower())


def elf_problem(data: bytes | memoryview) -> str | None:
    """Why `data` is not a loadable shared object of this host (None when it is)."""
    buf = memoryview(data).cast("B") if not isinstance(data, bytes) else data
    n = len(buf)
    if n < EHDR_SIZE:
        return f"{n} bytes, an ELF header needs {EHDR_SIZE}"
    if bytes(buf[:4]) != ELF_MAGIC:
        return f"no ELF magic (starts {bytes(buf[:4])!r})"
    cls, order, machine = host_elf()
    if buf[4] != cls:
        return f"ELF class {buf[4]}, this host loads class {cls} ({'64' if cls == ELFCLASS64 else '32'}-bit)"
    if buf[5] != order:
        return f"ELF byte order {buf[5]}, this host's is {order}"
    if buf[6] != EV_CURRENT:
        return f"ELF version {buf[6]}, expected {EV_CURRENT}"
    if cls != ELFCLASS64:
        return "only 64-bit hosts are supported"
    end = "<" if order == ELFDATA2LSB else ">"
    (e_type, e_machine, e_version, _entry, phoff, shoff, _flags, ehsize, phentsize, phnum, shentsize, shnum,
     shstrndx) = struct.unpack_from(end + _EHDR.format, buf, 16)
    if e_type != ET_DYN:
        return f"e_type {e_type}, a shared object is ET_DYN ({ET_DYN})"
    if machine is None:
        return f"e_machine {e_machine}: no ELF machine is known for this host ({platform.machine()})"
    if e_machine != machine:
        return f"e_machine {e_machine}, this host ({platform.machine()}) is {machine}"
    if e_version != EV_CURRENT:
        return f"e_version {e_version}, expected {EV_CURRENT}"
    if ehsize != EHDR_SIZE or phentsize != _PHDR.size or (shnum and shentsize != _SHDR.size):
        return f"header sizes {ehsize}/{phentsize}/{shentsize}, expected {EHDR_SIZE}/{_PHDR.size}/{_SHDR.size}"
    if phnum == 0 or phoff > n or phnum * phentsize > n - phoff:
        return f"{phnum} program headers at {phoff} do not fit in the file ({n} bytes)"
    loads = 0
    for i in range(phnum):
        p_type, _pf, p_offset, _va, _pa, p_filesz, _memsz, _align = struct.unpack_from(
            end + _PHDR.format, buf, phoff + i * phentsize)
        if p_filesz and (p_offset > n or p_filesz > n - p_offset):
            return (f"program header {i} (type {p_type}) maps bytes {p_offset}..{p_offset + p_filesz}, past the end of "
                    f"the file ({n} bytes: truncated?)")
        loads += p_type == PT_LOAD
    if not loads:
        return "no PT_LOAD segment"
    if shnum == 0 and shoff:
        return "extended section numbering (e_shnum 0) is not supported"
    if shoff > n or shnum * _SHDR.size > n - shoff:
        return f"{shnum} section headers at {shoff} do not fit in the file ({n} bytes: truncated?)"
    if shnum and shstrndx >= shnum:
        return f"e_shstrndx {shstrndx}, but there are {shnum} sections"
    for i in range(shnum):
        _name, sh_type, _fl, _addr, sh_offset, sh_size, *_ = struct.unpack_from(end + _SHDR.format, buf,
                                                                                  shoff + i * _SHDR.size)
        if sh_type != SHT_NOBITS and sh_size and (sh_offset > n or sh_size > n - sh_offset):
            return f"section {i} holds bytes {sh_offset}..{sh_offset + sh_size}, past the end of the file ({n} bytes)"
    return None


def check_elf(data: bytes | memoryview, partition: str, item: str) -> None:
    """OmError naming the partition and its item when `data` is not a loadable shared object."""
    problem = elf_problem(data)
    if problem is not None:
        raise OmError(f"item {item}: not a loadable shared object of this host: {problem}", partition)
