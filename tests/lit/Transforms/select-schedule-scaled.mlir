// Rule 8 of tessel-select-schedule: a scaled accumulation (acc += dot(a, b) * s) runs in the
// consumer warpgroups, with at most 64 x 128 of tile per consumer row block.
// RUN: tessel-opt %inputs/gemm_blockscale_128x128_fp8.mlir -tessel-select-schedule | FileCheck %s --check-prefix=AUTO
// RUN: tessel-opt %inputs/gemm_blockscale_128x128_fp8.mlir -tessel-select-schedule="schedule=warp_specialized" | FileCheck %s --check-prefix=WS
// RUN: not tessel-opt %inputs/gemm_blockscale_128x128_fp8.mlir -tessel-select-schedule="schedule=tma" 2>&1 | FileCheck %s --check-prefix=TMA
// RUN: not tessel-opt %inputs/gemm_blockscale_128x128_fp8.mlir -tessel-select-schedule="schedule=multistage" 2>&1 | FileCheck %s --check-prefix=MS
// RUN: not tessel-opt %inputs/gemm_blockscale_128x128_fp8.mlir -tessel-select-schedule="schedule=pingpong" 2>&1 | FileCheck %s --check-prefix=PP
// RUN: sed "s/%next = arith.addf %c, %y/%next = arith.addf %y, %c/" %inputs/gemm_blockscale_128x128_fp8.mlir | tessel-opt -tessel-select-schedule | FileCheck %s --check-prefix=AUTO

// AUTO: tessel.schedule = #tessel.schedule<kind = cooperative, tile = [128, 128, 128], stages = 4, warpgroups = 2, swizzle = 128, stream_k = 1>
// WS: tessel.schedule = #tessel.schedule<kind = warp_specialized, tile = [128, 128, 128]
// TMA: error: schedule 'tma' cannot scale each k-step's product (acc += dot(a, b) * s): use 'cooperative', 'pingpong' or 'warp_specialized'
// MS: error: schedule 'multistage' cannot scale each k-step's product (acc += dot(a, b) * s): use 'cooperative', 'pingpong' or 'warp_specialized'
// PP: error: a scaled accumulation (acc += dot(a, b) * s) keeps a partial accumulator beside the tile's, 2 x BN / 2 f32 registers per thread and 64-row block: at most 128, i.e. 64 x 128 per consumer warpgroup; schedule 'pingpong' with 128 x 128 gives each consumer 128 x 128 (use BN <= 128, and BM = 64 for pingpong)
