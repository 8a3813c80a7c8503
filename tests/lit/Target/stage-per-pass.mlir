// One dumped stage per pass, for each of the five schedules, the plan's six
// Hopper-level stages before any nvvm stage; the warp-specialize stage of
// cooperative and pingpong holds the producer and consumer regions as ops.
// RUN: rm -rf %t && mkdir %t
// RUN: tessel-compile %inputs/gemm_128x128.mlir --schedule tma --dump-dir %t/tma > /dev/null 2>&1
// RUN: tessel-compile %inputs/gemm_128x128.mlir --schedule multistage --dump-dir %t/multistage > /dev/null 2>&1
// RUN: tessel-compile %inputs/gemm_128x128.mlir --schedule warp_specialized --dump-dir %t/ws > /dev/null 2>&1
// RUN: tessel-compile %inputs/gemm_128x128.mlir --schedule cooperative --dump-dir %t/coop > /dev/null 2>&1
// RUN: tessel-compile %inputs/gemm_128x128.mlir --schedule pingpong --dump-dir %t/pingpong > /dev/null 2>&1
// RUN: ls %t/tma | FileCheck %s
// RUN: ls %t/multistage | FileCheck %s
// RUN: ls %t/ws | FileCheck %s
// RUN: ls %t/coop | FileCheck %s
// RUN: ls %t/pingpong | FileCheck %s
// RUN: FileCheck %s --check-prefix=COOP --input-file=%t/coop/05-warp-specialize.mlir
// RUN: FileCheck %s --check-prefix=PINGPONG --input-file=%t/pingpong/05-warp-specialize.mlir
// RUN: FileCheck %s --check-prefix=LOC --input-file=%t/pingpong/08-allocate-resources.mlir

// CHECK:      01-tessel.mlir
// CHECK-NEXT: 02-select-schedule.mlir
// CHECK-NEXT: 03-materialize-tile-scheduler.mlir
// CHECK-NEXT: 04-insert-async-copies.mlir
// CHECK-NEXT: 05-warp-specialize.mlir
// CHECK-NEXT: 06-schedule-mma.mlir
// CHECK-NEXT: 07-lower-epilogue.mlir
// CHECK-NEXT: 08-allocate-resources.mlir
// CHECK-NEXT: 09-lower-to-nvvm.mlir
// CHECK-NEXT: 10-convert-hopper-to-nvvm.mlir
// CHECK-NEXT: 11-convert-to-llvm.mlir
// CHECK-NEXT: 12-kernel.ll
// CHECK-NEXT: 13-kernel.opt.ll
// CHECK-NEXT: 14-kernel.ptx

// COOP: hopper.warp_specialize producer "warpgroup" regs 40 {
// COOP-NEXT: hopper.produce "ab"
// COOP-NEXT: } consumers 2 regs 232 order "cooperative" {
// COOP-NEXT: hopper.consume "ab"

// PINGPONG: hopper.warp_specialize producer "warpgroup" regs 40 {
// PINGPONG-NEXT: hopper.produce "ab"
// PINGPONG-NEXT: } consumers 2 regs 232 order "pingpong" {
// PINGPONG-NEXT: hopper.consume "ab"

// The Hopper-level stages keep the user's locations: the mma schedule points
// at the ts::dot line (line 16 of the input).
// LOC: hopper.mma_schedule "wgmma" {{.*}} loc([[DOT:#loc[0-9]+]])
// LOC: [[DOT]] = loc("{{.*}}gemm_128x128.mlir":16:10)
