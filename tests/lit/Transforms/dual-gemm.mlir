// A dual GEMM (two dots sharing A) through every plan pass and the builder:
// one ring slot per B, one wgmma of N = 2 x BN with `accumulators = 2`.
// RUN: tessel-opt %inputs/swiglu_128x128.mlir -tessel-select-schedule="schedule=cooperative" -tessel-plan-pipeline | FileCheck %s --check-prefix=PLAN
// RUN: tessel-opt %inputs/swiglu_128x128.mlir -tessel-select-schedule="schedule=cooperative swizzle=64" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=NVVM
// RUN: not tessel-opt %inputs/swiglu_128x128.mlir -tessel-select-schedule="schedule=multistage" 2>&1 | FileCheck %s --check-prefix=MS
// RUN: not tessel-opt %inputs/swiglu_128x128.mlir -tessel-select-schedule="schedule=pingpong" 2>&1 | FileCheck %s --check-prefix=PP

// A stage holds A (16 KiB) and both B tiles (2 x 16 KiB); the B of the second
// dot goes to slot 2.
// PLAN: hopper.ring "ab" stages 4 copy "tma" stage_bytes 49152
// PLAN: hopper.mma_schedule "wgmma" shape [64, 256, 16] k_steps 4 row_blocks 1 wait_depth 1 {accumulators = 2 : i64}
// PLAN: hopper.resources threads 384 smem_bytes 229440
// PLAN-SAME: offsets = {a = 0 : i64, b = 65536 : i64
// PLAN: hopper.async_load %arg0[{{.*}}] into "ab"[0]
// PLAN: hopper.async_load %arg1[{{.*}}] into "ab"[1]
// PLAN: hopper.async_load %arg2[{{.*}}] into "ab"[2]

// 64B swizzle: each B tile is two boxes of 64 B rows; the second B's boxes
// interleave with the first's (rows 128..255 of each 256-row box, at +8 KiB),
// and the wgmma reads both as one 256-row B.
// NVVM: hopper.mbarrier.arrive_expect_tx {{.*}} {max_bytes = {{[0-9]+}} : i64, ring = "full"}
// NVVM: hopper.tma.load {{.*}} bytes 8192
// NVVM: hopper.tma.load {{.*}} bytes 8192
// NVVM: hopper.tma.load {{.*}} bytes 8192
// NVVM: hopper.tma.load {{.*}} bytes 8192
// NVVM: hopper.tma.load {{.*}} bytes 8192
// NVVM: hopper.tma.load {{.*}} bytes 8192
// NVVM-NOT: hopper.tma.load
// NVVM: hopper.wgmma {{.*}} shape [64, 256, 16]

// MS: error: schedule 'multistage' cannot hold the two accumulators of a dual GEMM: use 'cooperative' or 'pingpong' (or 'tma', 'warp_specialized')
// PP: error: schedule 'pingpong' keeps both accumulators of a whole tile per consumer warpgroup: BM x BN must be at most 64 x 128 for a dual GEMM, got 128 x 128 (use BM = 64, or schedule 'cooperative')
