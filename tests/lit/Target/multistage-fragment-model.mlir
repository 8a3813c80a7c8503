// The index math of schedule `multistage` (MultistageSchedule.cpp), modelled in
// Python without a GPU: swizzled cp.async chunk placement, ldmatrix lane
// addresses (XOR + immediate per 16-row block and k16 step), ldmatrix .trans
// for MN-major tiles (stored as BK rows of BM / BN), the PTX ISA's ldmatrix /
// mma.m16n8k16 fragment layouts and the epilogue's C coordinates, on one k-tile
// of one CTA with integer data (exact), plus the ldmatrix and cp.async
// bank-conflict checks.
// It mirrors the formulas, so a change there must be made here too.
// RUN: python3 %inputs/multistage_fragment_model.py | FileCheck %s
// CHECK: tile 128x256x64 warps 2x4 of 64x64, KK, {{.*}}: OK
// CHECK: tile 128x128x32 warps 2x2 of 64x64, KK, {{.*}}: OK
// CHECK: tile 64x32x32 warps 2x1 of 32x32, KK, {{.*}}: OK
// CHECK: tile 128x64x64 warps 2x2 of 64x32, KK, {{.*}}: OK
// CHECK: tile 32x32x32 warps 1x1 of 32x32, KK, {{.*}}: OK
// CHECK: tile 256x128x64 warps 4x2 of 64x64, KK, {{.*}}: OK
// CHECK: tile 128x256x32 warps 2x4 of 64x64, KK, {{.*}}: OK
// CHECK: tile 256x128x32 warps 4x2 of 64x64, KK, {{.*}}: OK
// CHECK: tile 32x32x64 warps 1x1 of 32x32, KK, {{.*}}: OK
// CHECK: tile 192x64x32 warps 3x2 of 64x32, KK, {{.*}}: OK
// CHECK: tile 128x128x32 warps 2x2 of 64x64, KK, M,N,K=100,77,45 k0=32: OK
// MN-major A ("MK"), MN-major B ("KN"), both ("MN"): ldmatrix.trans fragments.
// CHECK-COUNT-6: tile {{.*}}, MK, {{.*}}: OK
// CHECK: tile 128x128x32 warps 2x2 of 64x64, MK, M,N,K=100,77,45 k0=32: OK
// CHECK-COUNT-6: tile {{.*}}, KN, {{.*}}: OK
// CHECK: tile 128x128x32 warps 2x2 of 64x64, KN, M,N,K=100,77,45 k0=32: OK
// CHECK-COUNT-6: tile {{.*}}, MN, {{.*}}: OK
// CHECK: tile 128x128x32 warps 2x2 of 64x64, MN, M,N,K=100,77,45 k0=32: OK
// CHECK-NOT: wrong
