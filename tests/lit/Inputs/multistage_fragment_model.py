# Usage: python3 multistage_fragment_model.py (lit: Target/multistage-fragment-model.mlir)
# Pure-Python model of the multistage kernel's index math (MultistageSchedule.cpp):
# per-thread copy chunks (row0 + i*rowStep, chunk, dst0 ^ xor_i + imm_i) with the
# XOR swizzle, for K-major (rows = MN, chunks along K) and MN-major (rows = k,
# chunks along MN) tiles; ldmatrix lane addresses (x16 / x8 lane patterns, XOR +
# immediate per block and k16 step) with .trans for MN-major tiles, the PTX ISA's
# ldmatrix / mma.m16n8k16 fragment layouts and the epilogue's C coordinates. Checks
# one k-tile of one CTA against a direct matmul with integer data (exact), that no
# shared byte is written twice, and that ldmatrix phases and cp.async quarter-warps
# are bank-conflict-free.
import random, sys

def multistage_warps(bm, bn):
    wm = 64 if bm >= 128 and bm % 64 == 0 else 32
    wn = 64 if bn >= 128 and bn % 64 == 0 else 32
    return wm, wn, bm // wm, bn // wn

def swz(row, cpr):
    return (row & 7) if cpr >= 8 else ((row >> 1) & 3)

class Operand:
    """One operand's tile in shared memory (MsOperand)."""
    def __init__(self, is_a, extent, BK, k_major, threads, base):
        self.is_a, self.extent, self.k_major, self.base = is_a, extent, k_major, base
        self.ec = BK if k_major else extent      # elements along a shared row
        self.eo = extent if k_major else BK      # shared rows
        self.pitch = self.ec * 2
        self.cpr = self.pitch // 16
        assert self.cpr == 4 or self.cpr % 8 == 0
        assert threads % self.cpr == 0
        self.row_step = threads // self.cpr
        assert self.row_step % (8 if self.cpr == 4 else 4) == 0
        self.iters = (self.eo + self.row_step - 1) // self.row_step
        self.stage_bytes = self.eo * self.pitch

    def phys(self, row, chunk):  # byte offset of logical chunk `chunk` of row `row`
        return row * self.pitch + ((chunk ^ swz(row, self.cpr)) << 4)

def run(BM, BN, BK, a_kmajor, b_kmajor, M, N, K, k0, stage=1, stages=3):
    wm, wn, wM, wN = multistage_warps(BM, BN)
    threads = wM * wN * 32
    A = [[random.randint(-3, 3) for _ in range(K)] for _ in range(M)]
    B = [[random.randint(-3, 3) for _ in range(K)] for _ in range(N)]
    opA = Operand(True, BM, BK, a_kmajor, threads, 0)
    opB = Operand(False, BN, BK, b_kmajor, threads, stages * BM * BK * 2)
    smem = {}

    def copy(o, src, rows_total, mn0):
        # element (mn, k) of the tile sits at shared row/column: K-major (mn, k), MN-major (k, mn)
        written = set()
        stage_base = o.base + stage * o.stage_bytes
        for i in range(o.iters):
            quarter_slots = {}
            for tid in range(threads):
                row0, c = tid // o.cpr, tid % o.cpr
                dst0 = row0 * o.pitch + ((c ^ swz(row0, o.cpr)) << 4)
                if row0 + i * o.row_step >= o.eo: continue     # guarded last chunk
                row = row0 + i * o.row_step
                xor_i = ((i * o.row_step) & 4) * 16 if o.cpr >= 8 else 0
                d = (dst0 ^ xor_i) + i * o.row_step * o.pitch
                assert d == o.phys(row, c), "chunk address != swizzled layout"
                d += stage_base
                assert d % 16 == 0 and d not in written, "shared chunk written twice"
                written.add(d)
                quarter_slots.setdefault((tid // 8), set()).add((d % 128) // 16)
                for x in range(8):
                    if o.k_major: mn, k = row, c * 8 + x
                    else: mn, k = c * 8 + x, row
                    gm, gk = mn0 + mn, k0 + k
                    smem[d + 2 * x] = src[gm][gk] if gm < rows_total and gk < K else 0
            for q, slots in quarter_slots.items():
                assert len(slots) == 8, "cp.async bank conflict"
        assert len(written) == o.eo * o.cpr
    copy(opA, A, M, 0); copy(opB, B, N, 0)

    def ldmatrix_x4(addrs, trans):
        for i in range(4):
            groups = {(addrs[8 * i + r] % 128) // 16 for r in range(8)}
            assert len(groups) == 8, "ldmatrix bank conflict"
        out = []
        for lane in range(32):
            regs = []
            for i in range(4):
                if not trans:   # lane gets row lane/4, cols 2(lane%4), +1
                    a = addrs[8 * i + lane // 4] + 4 * (lane % 4)
                    regs.append((smem[a], smem[a + 2]))
                else:           # lane gets rows 2(lane%4), +1 of column lane/4
                    r0 = addrs[8 * i + 2 * (lane % 4)] + 2 * (lane // 4)
                    r1 = addrs[8 * i + 2 * (lane % 4) + 1] + 2 * (lane // 4)
                    regs.append((smem[r0], smem[r1]))
            out.append(regs)
        return out

    def lane_addr(o, l, warp_off):
        x16 = o.is_a == o.k_major
        lr = l % 16 if x16 else l % 8 + 8 * (l // 16)
        lc = l // 16 if x16 else (l // 8) % 2
        row = warp_off + lr if o.k_major else lr
        ch = lc if o.k_major else warp_off // 8 + lc
        swzL = (l % 8) if o.cpr >= 8 else (l % 8) // 2
        assert swzL == swz(row, o.cpr)
        return o.base + stage * o.stage_bytes + row * o.pitch + ((ch ^ swzL) << 4)

    def block_addr(o, lane, blk, kk):
        x = 32 * (kk if o.k_major else blk)
        imm = 16 * (blk if o.k_major else kk) * o.pitch
        return (lane ^ x) + imm

    C = [[None] * BN for _ in range(BM)]
    for warp in range(wM * wN):
        warpRow = (warp % wM) * wm; warpCol = (warp // wM) * wn
        acc = {}
        aLane = [lane_addr(opA, l, warpRow) for l in range(32)]
        bLane = [lane_addr(opB, l, warpCol) for l in range(32)]
        for kk in range(BK // 16):
            bf = {}
            for nj in range(wn // 16):
                r = ldmatrix_x4([block_addr(opB, bLane[l], nj, kk) for l in range(32)], not opB.k_major)
                for lane in range(32):
                    bf[(2 * nj, lane)] = (r[lane][0], r[lane][1])
                    bf[(2 * nj + 1, lane)] = (r[lane][2], r[lane][3])
            for mi in range(wm // 16):
                af = ldmatrix_x4([block_addr(opA, aLane[l], mi, kk) for l in range(32)], not opA.k_major)
                for ni in range(wn // 8):
                    # PTX ISA mma.m16n8k16 .bf16 fragments -> 16x16 A, 16x8 B
                    Am = [[None] * 16 for _ in range(16)]; Bm = [[None] * 8 for _ in range(16)]
                    for lane in range(32):
                        g, t = lane // 4, lane % 4
                        a0, a1, a2, a3 = af[lane]
                        for j in range(2):
                            Am[g][2 * t + j] = a0[j]; Am[g + 8][2 * t + j] = a1[j]
                            Am[g][2 * t + 8 + j] = a2[j]; Am[g + 8][2 * t + 8 + j] = a3[j]
                        b0, b1 = bf[(ni, lane)]
                        for j in range(2):
                            Bm[2 * t + j][g] = b0[j]; Bm[2 * t + 8 + j][g] = b1[j]
                    for lane in range(32):
                        g, t = lane // 4, lane % 4
                        for r in range(4):
                            row = g + 8 * (r // 2); col = 2 * t + r % 2
                            s = sum(Am[row][k] * Bm[k][col] for k in range(16))
                            acc[(lane, mi, ni, r)] = acc.get((lane, mi, ni, r), 0) + s
        for lane in range(32):
            g, t2 = lane // 4, 2 * (lane % 4)
            for mi in range(wm // 16):
                for ni in range(wn // 8):
                    for h in range(2):
                        row = warpRow + g + 16 * mi + 8 * h; col = warpCol + t2 + 8 * ni
                        for d in range(2):
                            assert C[row][col + d] is None, "C element written twice"
                            C[row][col + d] = acc[(lane, mi, ni, 2 * h + d)]
    bad = 0
    for m in range(BM):
        for n in range(BN):
            want = sum(A[m][k] * B[n][k] for k in range(k0, min(k0 + BK, K))) if m < M and n < N else 0
            got = C[m][n]
            assert got is not None, f"C[{m}][{n}] never written"
            if got != want: bad += 1
    lay = ("K" if a_kmajor else "M") + ("K" if b_kmajor else "N")
    print(f"tile {BM}x{BN}x{BK} warps {wM}x{wN} of {wm}x{wn}, {lay}, M,N,K={M},{N},{K} k0={k0}: "
          f"{'OK' if not bad else str(bad) + ' wrong'}")
    return bad == 0

random.seed(1)
ok = True
tiles = [(128, 256, 64), (128, 128, 32), (64, 32, 32), (128, 64, 64), (32, 32, 32), (256, 128, 64),
         (128, 256, 32), (256, 128, 32), (32, 32, 64), (192, 64, 32)]
for lay in [(True, True), (False, True), (True, False), (False, False)]:
    for (BM, BN, BK) in tiles:
        if lay == (True, True) or (BM, BN, BK) in [(128, 128, 32), (64, 32, 32), (256, 128, 64),
                                                    (128, 256, 32), (32, 32, 64), (192, 64, 32)]:
            ok &= run(BM, BN, BK, lay[0], lay[1], BM, BN, BK * 2, BK)
    ok &= run(128, 128, 32, lay[0], lay[1], 100, 77, 45, 32, stage=2)   # edges and K tail
sys.exit(0 if ok else 1)
