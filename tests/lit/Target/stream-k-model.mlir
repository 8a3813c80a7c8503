// The stream-K decomposition of `cooperative` and `pingpong` (StreamK.cpp; the
// per-CTA plan is the same for both), modelled in Python
// without a GPU: for the issue's shapes, a sweep of small grids, and forced
// splits of every tile (including more CTAs than k-iterations), every
// k-iteration is computed once, ring positions are consecutive, each CTA has at
// most one contributor part whose flag exactly one finisher consumes, finishers
// wait only on lower CTAs that publish first (no cycle), every tile gets one
// epilogue, and stream-K units start at k = 0 except a CTA's last one; and the
// whole grid, executed step by step (producer ring of 2 or 4 stages, releases
// one k-step late, pingpong's turn barriers, flags), never deadlocks.
// It mirrors the kernel's formulas, so a change there must be made here too.
// RUN: python3 %inputs/stream_k_model.py | FileCheck %s
// CHECK-NOT: MISMATCH
// CHECK: T=2048 I=128 P=132 S=200: OK
// CHECK: T=512 I=64 P=132 S=0: OK
// CHECK: T=512 I=224 P=132 S=248: OK
// CHECK: T=7168 I=128 P=132 S=0: OK
// CHECK: T=4096 I=16 P=132 S=136: OK
// CHECK: T=8192 I=16 P=132 S=0: OK
// CHECK: T=14336 I=128 P=132 S=0: OK
// CHECK: T=32 I=128 P=128 S=32: OK
// CHECK: 83 cases and 288 forced splits, 0 with errors
// CHECK: 2000 whole-grid runs, 0 deadlocked
