# Usage: python3 multistage_fragment_model.py (lit: Target/multistage-fragment-model.mlir)
# Pure-Python model of the multistage kernel's index math (MultistageSchedule.cpp):
# copy-chunk placement with the XOR swizzle, ldmatrix lane addresses (XOR-32kk +
# immediate trick), ldmatrix/mma.m16n8k16 fragment layouts as the PTX ISA defines
# them, and the epilogue's C-fragment coordinates. Checks one k-tile of one CTA
# against a direct matmul, with integer data (exact), and checks that ldmatrix
# phases are bank-conflict-free.
import random, sys

def multistage_warps(bm, bn):
    wm = 64 if bm >= 128 and bm % 64 == 0 else 32
    wn = 64 if bn >= 128 and bn % 64 == 0 else 32
    return wm, wn, bm // wm, bn // wn

def swz_off(row, chunk, row_bytes, chunks):
    swz = (row & 7) if chunks == 8 else ((row >> 1) & 3)
    return row * row_bytes + ((chunk ^ swz) * 16)

def run(BM, BN, BK, stage, M, N, K, k0):
    rb = BK * 2; chunks = rb // 16
    wm, wn, wM, wN = multistage_warps(BM, BN)
    threads = wM * wN * 32
    A = [[random.randint(-3, 3) for _ in range(K)] for _ in range(M)]
    B = [[random.randint(-3, 3) for _ in range(K)] for _ in range(N)]
    stages = 3
    aStage, bStage = BM * rb, BN * rb
    smem = {}  # byte address -> 16-bit value
    base = 0
    def copy(src, rows_total, rows, dst):
        total = rows * chunks
        written = set()
        for i in range((total + threads - 1) // threads):
            for tid in range(threads):
                e = i * threads + tid
                if e >= total: continue
                row, c = divmod(e, chunks)
                d = dst + swz_off(row, c, rb, chunks)
                assert d % 16 == 0 and d not in written
                written.add(d)
                for x in range(8):
                    gk = k0 + c * 8 + x
                    v = src[row][gk] if row < rows_total and gk < K else 0
                    smem[d + 2 * x] = v
    aBase = base + stage * aStage
    bBase = base + stages * aStage + stage * bStage
    copy(A, M, BM, aBase); copy(B, N, BN, bBase)
    C = [[None] * BN for _ in range(BM)]
    for warp in range(wM * wN):
        warpRow = (warp % wM) * wm; warpCol = (warp // wM) * wn
        acc = {}
        # per-lane address of k-step 0
        def lane_addr(l, stageBase, row, hi):
            swz = (l % 8) if chunks == 8 else (l % 8) // 2
            return stageBase + row * rb + ((hi ^ swz) << 4)
        aLane = [lane_addr(l, aBase, warpRow + l % 16, l // 16) for l in range(32)]
        bLane = [lane_addr(l, bBase, warpCol + l % 8 + 8 * (l // 16), (l // 8) % 2) for l in range(32)]
        def ldmatrix_x4(addrs):
            # matrix i: rows from lanes 8i..8i+7; lane receives row lane/4, cols 2(lane%4)+{0,1}
            # bank check: each phase (matrix) reads 8 x 16 B; must hit 8 distinct 16 B bank groups
            for i in range(4):
                groups = {(addrs[8 * i + r] % 128) // 16 for r in range(8)}
                assert len(groups) == 8, "ldmatrix bank conflict"
            out = []
            for lane in range(32):
                regs = []
                for i in range(4):
                    a = addrs[8 * i + lane // 4] + 4 * (lane % 4)
                    regs.append((smem[a], smem[a + 2]))
                out.append(regs)
            return out
        for kk in range(BK // 16):
            bf = {}
            for nj in range(wn // 16):
                r = ldmatrix_x4([(bLane[l] ^ (32 * kk)) + nj * 16 * rb for l in range(32)])
                for lane in range(32):
                    bf[(2 * nj, lane)] = (r[lane][0], r[lane][1])
                    bf[(2 * nj + 1, lane)] = (r[lane][2], r[lane][3])
            for mi in range(wm // 16):
                af = ldmatrix_x4([(aLane[l] ^ (32 * kk)) + mi * 16 * rb for l in range(32)])
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
        # epilogue coordinates (msEpilogue)
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
            want = sum((A[m][k] if m < M else 0) * (B[n][k] if n < N else 0)
                       for k in range(k0, min(k0 + BK, K))) if m < M and n < N else 0
            got = C[m][n]
            assert got is not None, f"C[{m}][{n}] never written"
            if got != want: bad += 1
    print(f"tile {BM}x{BN}x{BK} warps {wM}x{wN} of {wm}x{wn}, M,N,K={M},{N},{K} k0={k0}: {'OK' if not bad else str(bad)+' wrong'}")
    return bad == 0

random.seed(1)
ok = True
for (BM, BN, BK) in [(128, 256, 64), (128, 128, 32), (64, 32, 32), (128, 64, 64), (32, 32, 32), (256, 128, 64)]:
    ok &= run(BM, BN, BK, 1, BM, BN, BK * 2, BK)
ok &= run(128, 128, 32, 2, 100, 77, 45, 32)   # edges and K tail
sys.exit(0 if ok else 1)
