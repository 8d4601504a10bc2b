#!/usr/bin/env python3
"""Sets the DT_SONAME of a 64-bit little-endian ELF shared library in place:
set_soname.py LIBRARY NEW-NAME (NEW-NAME no longer than the old name: it is written over
it in .dynstr, the rest zero-filled). The MPI tests use it to install a copy of an MPI
library under another ABI name (tests/mpi/test_renamed_mpi.sh, test_cluster_prefix.sh)."""
import struct
import sys

path, new = sys.argv[1], sys.argv[2].encode()
data = bytearray(open(path, "rb").read())
if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
    sys.exit(f"{path}: not a 64-bit little-endian ELF file")
shoff, = struct.unpack_from("<Q", data, 0x28)
shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
dyn = next((s for s in secs if s[1] == 6), None)  # SHT_DYNAMIC
if dyn is None:
    sys.exit(f"{path}: no dynamic section")
strtab = secs[dyn[6]]  # its sh_link: .dynstr
for off in range(dyn[4], dyn[4] + dyn[5], 16):
    tag, val = struct.unpack_from("<qQ", data, off)
    if tag == 14:  # DT_SONAME
        at = strtab[4] + val
        old = data[at:data.index(b"\0", at)]
        if len(new) > len(old):
            sys.exit(f"{path}: the new SONAME {new.decode()} is longer than {old.decode()}")
        data[at:at + len(old)] = new + b"\0" * (len(old) - len(new))
        open(path, "wb").write(data)
        sys.exit(0)
sys.exit(f"{path}: no DT_SONAME")
