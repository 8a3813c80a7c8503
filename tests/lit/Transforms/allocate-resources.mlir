// RUN: tessel-opt %inputs/gemm_128x128.mlir -tessel-select-schedule="schedule=pingpong" -tessel-plan-pipeline | FileCheck %s --check-prefix=PINGPONG
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=cooperative cluster=2x1" -tessel-plan-pipeline | FileCheck %s --check-prefix=CLUSTER
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=tma stages=3" -tessel-plan-pipeline | FileCheck %s --check-prefix=TMA
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=multistage" -tessel-plan-pipeline | FileCheck %s --check-prefix=MS
// RUN: tessel-opt %inputs/gemm_alpha_beta_128x128.mlir -tessel-select-schedule="schedule=pingpong" -tessel-plan-pipeline | FileCheck %s --check-prefix=OPERAND
// RUN: not tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-allocate-resources 2>&1 | FileCheck %s --check-prefix=ORDER

// Pingpong 128x128x64, 4 stages: A 4 x 16 KiB, B 4 x 16 KiB, two consumers'
// 2 x 8 KiB staging buffers, then the full and empty barriers; one arrival
// empties a stage (the consumer whose tile it was); turns on barriers 3, 4.
// PINGPONG: hopper.resources threads 384 smem_bytes 163904 {arrivals = {empty = 1 : i64, full = 1 : i64}, barriers = {consumer = array<i64: 1, 2>, turn = array<i64: 3, 4>}, offsets = {a = 0 : i64, b = 65536 : i64, empty = 163872 : i64, full = 163840 : i64, staging = 131072 : i64}}

// The same ring with a C0 tile read through shared memory (tessel-lower-epilogue
// rule 6): after the staging buffers, one 128 x 128 bf16 tile per consumer
// (2 x 32 KiB), then the ring's barriers and one operand barrier per consumer.
// OPERAND: hopper.resources threads 384 smem_bytes 229456 {{.*}} offsets = {a = 0 : i64, b = 65536 : i64, empty = 229408 : i64, full = 229376 : i64, operand_full = 229440 : i64, operands = 163840 : i64, staging = 131072 : i64}}

// A 2x1 cluster: both consumers of both CTAs release each stage (4 arrivals).
// CLUSTER: hopper.resources threads 384 smem_bytes 229440 {arrivals = {empty = 4 : i64, full = 1 : i64}, barriers = {consumer = array<i64: 1, 2>}

// tma: two warpgroups, no staging buffers.
// TMA: hopper.resources threads 256 smem_bytes 147504 {arrivals = {empty = 2 : i64, full = 1 : i64}, barriers = {}, offsets = {a = 0 : i64, b = 49152 : i64, empty = 147480 : i64, full = 147456 : i64, staging = 147456 : i64}}

// multistage: 8 warps, the ring only.
// MS: hopper.resources threads 256 smem_bytes 196608 {arrivals = {}, barriers = {}, offsets = {a = 0 : i64, b = 65536 : i64}}

// ORDER: error: GEMM kernel 'gemm' has no hopper.mma_schedule: run tessel-schedule-mma first (tessel-kernel-pipeline runs every step)
