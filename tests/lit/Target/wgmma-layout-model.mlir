// The operand layouts of the TMA-fed schedules (OperandLayout.h), modelled in
// Python without a GPU: every element each TMA box writes (with TMA's address
// swizzle) must be the one every wgmma instruction reads through the
// descriptor tessel builds, decoded with the PTX ISA's canonical layouts, for
// A and B, K-major and MN-major, swizzle 128B / 64B / 32B / none.
// It mirrors the formulas, so a change there must be made here too; the
// descriptor high bits it prints are those the lowering tests check.
// RUN: python3 %inputs/wgmma_layout_model.py | FileCheck %s
// CHECK-NOT: MISMATCH
// CHECK: A K-major 128 BM=128: box 64x128 x1 lbo 16 sbo 1024 high 4611686293305360384: {{.*}} OK
// CHECK: A K-major 64 BM=128: box 32x128 x2 lbo 16 sbo 512 high -9223371899415756800: {{.*}} OK
// CHECK: A K-major 32 BM=128: box 16x128 x4 lbo 16 sbo 256 high -4611685949707845632: {{.*}} OK
// CHECK: A K-major none BM=128: box 8x128 x8 lbo 2048 sbo 128 high 34368126976: {{.*}} OK
// CHECK: A MN-major 128 BM=128: box 64x64 x2 lbo 8192 sbo 1024 high 4611686293338849280: {{.*}} OK
// CHECK: A MN-major 64 BM=128: box 32x64 x4 lbo 4096 sbo 512 high -9223371899399045120: {{.*}} OK
// CHECK: A MN-major 32 BM=128: box 16x64 x8 lbo 2048 sbo 256 high -4611685949699522560: {{.*}} OK
// CHECK: A MN-major none BM=128: box 8x64 x16 lbo 128 sbo 1024 high 274878431232: {{.*}} OK
// CHECK: B K-major 128 BN=200: {{.*}} OK
// CHECK: B MN-major 64 BN=96: box 32x64 x3 {{.*}} OK
// CHECK: B MN-major none BN=8: box 8x64 x1 lbo 128 sbo 1024 {{.*}} OK
// CHECK: all layouts OK
