// The index math of schedule `multistage` (MultistageSchedule.cpp), modelled in
// Python without a GPU: swizzled cp.async chunk placement, ldmatrix lane
// addresses (XOR 32*kk + immediate), the PTX ISA's ldmatrix / mma.m16n8k16
// fragment layouts and the epilogue's C coordinates, on one k-tile of one CTA
// with integer data (exact), plus the ldmatrix bank-conflict check.
// It mirrors the formulas, so a change there must be made here too.
// RUN: python3 %inputs/multistage_fragment_model.py | FileCheck %s
// CHECK: tile 128x256x64 warps 2x4 of 64x64, {{.*}}: OK
// CHECK: tile 128x128x32 warps 2x2 of 64x64, {{.*}}: OK
// CHECK: tile 64x32x32 warps 2x1 of 32x32, {{.*}}: OK
// CHECK: tile 128x64x64 warps 2x2 of 64x32, {{.*}}: OK
// CHECK: tile 32x32x32 warps 1x1 of 32x32, {{.*}}: OK
// CHECK: tile 256x128x64 warps 4x2 of 64x64, {{.*}}: OK
// CHECK: tile 128x128x32 warps 2x2 of 64x64, M,N,K=100,77,45 k0=32: OK
