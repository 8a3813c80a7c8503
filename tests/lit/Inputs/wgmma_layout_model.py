#!/usr/bin/env python3
"""The shared-memory operand layouts of the TMA-fed schedules, checked without a GPU.

For every (operand, major-ness, swizzle, tile) it places each tile element where the
TMA boxes of OperandLayout.h write it (box {rowBytes/elt, outer} at box * boxBytes,
then TMA's address swizzle), and reads every element of every wgmma instruction
(m64 row block x k16 step for A, the whole BN x k16 for B) back through the
descriptor OperandLayout builds (start address, LBO, SBO, swizzle mode), decoded
with the PTX ISA's canonical layouts ("Shared Memory Matrix Layout", "Canonical
Layouts"):

  MN-major  none   ((T,1,m),(8,k)) : ((1,T,SBO),(1T,LBO))
            32B    ((T,2,m),(8,k)) : ((1,T,LBO),(2T,SBO))
            64B    ((T,4,m),(8,k)) : ((1,T,LBO),(4T,SBO))
            128B   ((T,8,m),(8,k)) : ((1,T,LBO),(8T,SBO))
  K-major   none   ((8,m),(T,2k))  : ((1T,SBO),(1,LBO))
            32B    ((8,m),(T,2k))  : ((2T,SBO),(1,T))
            64B    ((8,m),(T,2k))  : ((4T,SBO),(1,T))
            128B   ((8,m),(T,2k))  : ((8T,SBO),(1,T))

(T = 16 bytes / element size, strides in elements), followed by the swizzle
Swizzle<b,4,3> on byte addresses (b = 3, 2, 1, 0 for 128B, 64B, 32B, none): bits
[4, 4+b) ^= bits [7, 7+b), the same function TMA applies when it writes.
Both must agree for every element; the descriptor fields must be encodable.
It mirrors OperandLayout.cpp, so a change there must be made here too. It also
prints the descriptor's high bits, which the lit tests look for in the IR.
"""
import itertools
import sys

ELT = 2  # bf16 / f16


def swizzle(addr, s):
    b = {0: 0, 32: 1, 64: 2, 128: 3}[s]
    return addr ^ (((addr >> 7) & ((1 << b) - 1)) << 4)


class Layout:
    """Mirror of mlir::tessel::OperandLayout."""

    def __init__(self, mn_major, inner, outer, s):
        self.mn_major, self.inner, self.outer, self.s = mn_major, inner, outer, s

    def w(self):
        return self.s if self.s else 16

    def box_inner(self):
        return self.w() // ELT

    def boxes(self):
        return self.inner * ELT // self.w()

    def box_bytes(self):
        return self.outer * self.w()

    def offset(self, mn0, k0):
        i, o = (mn0, k0) if self.mn_major else (k0, mn0)
        return (i * ELT // self.w()) * self.box_bytes() + o * self.w() + (i * ELT) % self.w()

    def lbo(self):
        if not self.mn_major:
            return 16 if self.s else self.box_bytes()
        return self.box_bytes() if self.s else 128

    def sbo(self):
        if not self.mn_major:
            return 8 * self.w()
        return 8 * self.w() if self.s else self.box_bytes()

    def high_bits(self):
        mode = {128: 1, 64: 2, 32: 3, 0: 0}[self.s]
        bits = ((self.lbo() >> 4) << 16) | ((self.sbo() >> 4) << 32) | (mode << 62)
        return bits - (1 << 64) if bits >= (1 << 63) else bits  # as MLIR prints an i64


def tma_writes(l, base):
    """(mn, k) of the tile -> byte address, as the TMA boxes write it."""
    where = {}
    for box in range(l.boxes()):
        for o in range(l.outer):
            for ii in range(l.box_inner()):
                addr = swizzle(base + box * l.box_bytes() + o * l.w() + ii * ELT, l.s)
                i = box * l.box_inner() + ii
                mn, k = (i, o) if l.mn_major else (o, i)
                where[(mn, k)] = addr
    return where


def wgmma_reads(mn_major, s, start, lbo, sbo, rows):
    """(mn, k) of one wgmma operand (rows x 16) -> byte address (canonical layouts)."""
    t = 16 // ELT
    reads = {}
    for mn in range(rows):
        for k in range(16):
            if mn_major:
                if s:
                    off = (mn % t) * ELT + ((mn // t) % (s // 16)) * 16 + (mn // (t * s // 16)) * lbo
                    off += (k % 8) * s + (k // 8) * sbo
                else:
                    off = (mn % t) * ELT + (mn // t) * sbo + (k % 8) * 16 + (k // 8) * lbo
            else:
                if s:
                    off = (mn % 8) * s + (mn // 8) * sbo + k * ELT
                else:
                    off = (mn % 8) * 16 + (mn // 8) * sbo + (k % t) * ELT + (k // t) * lbo
            reads[(mn, k)] = swizzle(start + off, s)
    return reads


def check(name, mn_major, mn_extent, bk, s, rows_per_instr, base=4096 * 3):
    l = Layout(mn_major, mn_extent if mn_major else bk, bk if mn_major else mn_extent, s)
    if (l.inner * ELT) % l.w():
        return None  # rule L3: not a whole number of swizzle rows
    assert base % 1024 == 0
    # Every box starts on its swizzle pattern (8 rows), so the base offset is 0.
    assert (l.box_bytes()) % (8 * l.w()) == 0, "box not pattern-aligned"
    written = tma_writes(l, base)
    assert len(set(written.values())) == len(written), "TMA writes overlap"
    for v in (l.lbo(), l.sbo()):
        assert v % 16 == 0 and (v >> 4) < (1 << 14), "LBO/SBO not encodable"
    checked = 0
    for mn0 in range(0, mn_extent, rows_per_instr):
        for k0 in range(0, bk, 16):
            start = base + l.offset(mn0, k0)
            assert start % 16 == 0
            reads = wgmma_reads(mn_major, s, start, l.lbo(), l.sbo(), rows_per_instr)
            for (mn, k), addr in reads.items():
                want = written[(mn0 + mn, k0 + k)]
                if addr != want:
                    print(f"{name}: MISMATCH at mn={mn0 + mn} k={k0 + k}: wgmma reads {addr}, "
                          f"TMA wrote {want}")
                    sys.exit(1)
                checked += 1
    return l, checked


def main():
    bk = 64
    for operand, extents in (("A", (64, 128, 192, 256)), ("B", (8, 16, 24, 48, 64, 96, 128, 200, 256))):
        for major, s in itertools.product(("K", "MN"), (128, 64, 32, 0)):
            for ext in extents:
                rows = 64 if operand == "A" else ext
                name = f"{operand} {major}-major {s or 'none'} {'BM' if operand == 'A' else 'BN'}={ext}"
                r = check(name, major == "MN", ext, bk, s, rows)
                if r is None:
                    continue
                l, n = r
                print(f"{name}: box {l.box_inner()}x{l.outer} x{l.boxes()} lbo {l.lbo()} sbo {l.sbo()} "
                      f"high {l.high_bits()}: {n} elements OK")
    print("all layouts OK")


if __name__ == "__main__":
    main()
