// RUN: tessel-opt %inputs/gemm_128x128.mlir -tessel-select-schedule="schedule=pingpong" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma | FileCheck %s --check-prefix=PINGPONG
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=cooperative" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma | FileCheck %s --check-prefix=COOP
// RUN: tessel-opt %inputs/gemm_256x192.mlir -tessel-select-schedule="schedule=cooperative" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma | FileCheck %s --check-prefix=COOP256
// RUN: tessel-opt %inputs/gemm_128x128_fp8.mlir -tessel-select-schedule="schedule=cooperative" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma | FileCheck %s --check-prefix=FP8
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=multistage" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -mlir-print-debuginfo | FileCheck %s --check-prefix=MS

// Pingpong: each consumer holds the whole 128-row tile (two m64 row blocks),
// in the consumers' region.
// PINGPONG: } consumers 2 regs 232 order "pingpong" {
// PINGPONG-NEXT: hopper.consume "ab"
// PINGPONG-NEXT: hopper.mma_schedule "wgmma" shape [64, 128, 16] k_steps 4 row_blocks 2 wait_depth 1{{$}}

// COOP: hopper.mma_schedule "wgmma" shape [64, 256, 16] k_steps 4 row_blocks 1 wait_depth 1{{$}}

// Cooperative 256-row tiles: two consumers of 128 rows (two m64 row blocks) each.
// COOP256: } consumers 2 regs 232 order "cooperative" {
// COOP256-NEXT: hopper.consume "ab"
// COOP256-NEXT: hopper.mma_schedule "wgmma" shape [64, 192, 16] k_steps 4 row_blocks 2 wait_depth 1{{$}}

// fp8 (BK = 128): wgmma m64nNk32, 32 bytes of K per instruction as for 16-bit types.
// FP8: hopper.mma_schedule "wgmma" shape [64, 128, 32] k_steps 4 row_blocks 1 wait_depth 1{{$}}

// multistage: mma.sync on 64x64 warp tiles, 2 x 4 warps; it points at the dot.
// MS: hopper.mma_schedule "mma.sync" shape [16, 8, 16] k_steps 4 row_blocks 4 wait_depth 0 {warp_tile = array<i64: 64, 64>, warps = array<i64: 2, 4>} loc([[DOT:#loc[0-9]+]])
// MS: tessel.dot {{.*}} loc([[DOT]])
