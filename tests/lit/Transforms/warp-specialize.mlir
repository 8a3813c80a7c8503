// RUN: tessel-opt %inputs/gemm_128x128.mlir -tessel-select-schedule="schedule=pingpong" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize | FileCheck %s --check-prefix=PINGPONG
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=cooperative" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize | FileCheck %s --check-prefix=COOP
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=tma" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize | FileCheck %s --check-prefix=TMA
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=multistage" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize | FileCheck %s --check-prefix=MS

// PINGPONG:      hopper.warp_specialize producer "warpgroup" regs 40 {
// PINGPONG-NEXT:   hopper.produce "ab"
// PINGPONG-NEXT: } consumers 2 regs 232 order "pingpong" {
// PINGPONG-NEXT:   hopper.consume "ab"
// PINGPONG-NEXT: }

// Two consumer warpgroups, 64 rows each, every tile.
// COOP: hopper.warp_specialize producer "warpgroup" regs 40 {
// COOP: } consumers 2 regs 232 order "cooperative" {

// tma: no producer warpgroup, no register budgets.
// TMA: hopper.warp_specialize producer "inline" regs 0 {
// TMA: } consumers 2 regs 0 order "cooperative" {

// multistage: no roles.
// MS-NOT: hopper.warp_specialize
