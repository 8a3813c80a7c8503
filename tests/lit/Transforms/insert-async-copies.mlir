// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=cooperative stages=3" -tessel-materialize-tile-scheduler -tessel-insert-async-copies | FileCheck %s
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=cooperative cluster=2x1 swizzle=64" -tessel-materialize-tile-scheduler -tessel-insert-async-copies | FileCheck %s --check-prefix=CLUSTER
// RUN: tessel-opt %inputs/gemm_mn_major.mlir -tessel-select-schedule="schedule=tma" -tessel-materialize-tile-scheduler -tessel-insert-async-copies | FileCheck %s --check-prefix=MN
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=multistage" -tessel-materialize-tile-scheduler -tessel-insert-async-copies | FileCheck %s --check-prefix=CPASYNC
// RUN: not tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule -tessel-insert-async-copies 2>&1 | FileCheck %s --check-prefix=ORDER

// The ring, then the two operand loads of the mainloop on it: one 128B-swizzled
// box of 64 x BM (A) and 64 x BN (B) each.
// CHECK: hopper.ring "ab" stages 3 copy "tma" stage_bytes 49152{{$}}
// CHECK: scf.for
// CHECK-NEXT: hopper.async_load %arg0[%{{.*}}, %{{.*}}] into "ab"[0] {box = array<i64: 64, 128>, boxes = 1 : i64, copy = "tma", multicast = 1 : i64, swizzle = 128 : i64} : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
// CHECK-NEXT: hopper.async_load %arg1[%{{.*}}, %{{.*}}] into "ab"[1] {box = array<i64: 64, 256>, boxes = 1 : i64, copy = "tma", multicast = 1 : i64, swizzle = 128 : i64} : !tessel.ref<2 x bf16> -> tensor<256x64xbf16>
// CHECK-NOT: tessel.load

// 2x1 cluster: each CTA loads half of B's rows and multicasts them; 64B
// swizzle: two boxes of 32 elements per tile row.
// CLUSTER: hopper.async_load %arg0{{.*}} {box = array<i64: 32, 128>, boxes = 2 : i64, copy = "tma", multicast = 1 : i64, swizzle = 64 : i64}
// CLUSTER: hopper.async_load %arg1{{.*}} {box = array<i64: 32, 128>, boxes = 2 : i64, copy = "tma", multicast = 2 : i64, swizzle = 64 : i64}

// MN-major operands (unit stride along M / N): wgmma's transpose bit.
// MN: hopper.async_load %arg0{{.*}}mn_major

// multistage: cp.async chunks.
// CPASYNC: hopper.ring "ab" stages 4 copy "cp.async" stage_bytes 49152{{$}}
// CPASYNC: hopper.async_load %arg0{{.*}} {box = array<i64: 128, 64>, boxes = 1 : i64, copy = "cp.async", multicast = 1 : i64, swizzle = 128 : i64}

// ORDER: error: GEMM kernel 'gemm' has no hopper.tile_scheduler: run tessel-materialize-tile-scheduler first (tessel-kernel-pipeline runs every step)
