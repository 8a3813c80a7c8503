// REQUIRES: ptxas
// A construct the NVPTX backend cannot select (math.sin: no DSL function makes it, so
// tessel-legalize-math leaves it) ends in a clean error with an IR reproducer, not an abort:
// `not` (without --crash) fails if tessel-compile dies of a signal.
// RUN: rm -rf %t && not tessel-compile %s --dump-dir %t 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPRO --input-file=%t/failed-sine/failing-step-input.mlir
// RUN: ls %t/failed-sine | FileCheck %s --check-prefix=FILES

// CHECK: tessel: PTX generation failed (kernel 'sine'):
// CHECK-NEXT: backend-failure.mlir:[[@LINE+22]]:3: error: LLVM's NVPTX backend failed: Cannot select: f32 = fsin{{$}}
// CHECK-NEXT: IR reproducer: {{.*}}failed-sine/{{$}}
// CHECK-NOT: see current operation

// REPRO: llvm.func @sine(
// REPRO: llvm.intr.sin

// FILES: 01-tessel.mlir
// FILES-NEXT: 02-select-schedule.mlir
// FILES-NEXT: 03-materialize-tile-scheduler.mlir
// FILES-NEXT: 04-insert-async-copies.mlir
// FILES-NEXT: 05-warp-specialize.mlir
// FILES-NEXT: 06-schedule-mma.mlir
// FILES-NEXT: 07-lower-epilogue.mlir
// FILES-NEXT: 08-allocate-resources.mlir
// FILES-NEXT: 09-lower-to-nvvm.mlir
// FILES-NEXT: 10-convert-hopper-to-nvvm.mlir
// FILES-NEXT: 11-convert-to-llvm.mlir
// FILES-NEXT: failing-step-input.mlir
// FILES-EMPTY:

module {
  func.func @sine(%arg0: !tessel.ref<1 x f32>, %arg1: !tessel.ref<1 x f32>) attributes {tessel.kernel} {
    %0 = tessel.program_id 0
    %c256 = arith.constant 256 : index
    %1 = arith.muli %0, %c256 : index
    %2 = tessel.load %arg0[%1] : !tessel.ref<1 x f32> -> tensor<256xf32>
    %3 = math.sin %2 : tensor<256xf32>
    tessel.store %3, %arg1[%1] : tensor<256xf32>, !tessel.ref<1 x f32>
    return
  }
}
