// RUN: tessel-opt %inputs/gemm_acc_transposed_128x128.mlir -tessel-select-schedule="schedule=pingpong" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=WS
// RUN: tessel-opt %inputs/gemm_acc_transposed_128x128.mlir -tessel-select-schedule="schedule=tma" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=TMA
// RUN: tessel-opt %inputs/gemm_acc_transposed_128x128.mlir -tessel-select-schedule="schedule=multistage" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=MS
// RUN: tessel-opt %inputs/gemm_16x64_bias.mlir -tessel-swap-operands -tessel-select-schedule="schedule=cooperative" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=SWAP
// RUN: tessel-opt %s -split-input-file -tessel-select-schedule="schedule=cooperative" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue -verify-diagnostics
// A hand-edited plan that stages the transposed store (or pairs its columns) is refused when
// the kernel is built, not stored untransposed:
// RUN: tessel-opt %inputs/gemm_acc_transposed_128x128.mlir --tessel-select-schedule="schedule=pingpong" --tessel-plan-pipeline \
// RUN:   | sed -e 's/hopper.store = "registers"/hopper.store = "tma_store"/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=EDITED
// RUN: tessel-opt %inputs/gemm_acc_transposed_128x128.mlir --tessel-select-schedule="schedule=tma" --tessel-plan-pipeline \
// RUN:   | sed -e 's/hopper.store = "registers"/hopper.store = "register_pairs"/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=EDITED-PAIRS

// A store of the transposed accumulator (acc.T()): each thread writes its
// fragment element (r, c) at (c, r), so never through a staging buffer laid
// out as the fragments are, nor in pairs of adjacent columns.
// WS: tessel.store {{.*}} {hopper.store = "registers"} : tensor<128x128xbf16>
// TMA: tessel.store {{.*}} {hopper.store = "registers"} : tensor<128x128xbf16>
// MS: tessel.store {{.*}} {hopper.store = "fragments"} : tensor<128x128xbf16>

// EDITED: error: a store of the transposed accumulator takes path 'registers' (or 'fragments' in multistage), got 'tma_store'
// EDITED-PAIRS: error: a store of the transposed accumulator takes path 'registers' (or 'fragments' in multistage), got 'register_pairs'

// A swapped 16 x 64 tile (tessel-swap-operands): the same, whatever the schedule.
// SWAP: hopper.mma_schedule "wgmma" shape [64, 16, 16]
// SWAP: tessel.store {{.*}} {hopper.store = "registers"} : tensor<16x64xbf16>

func.func @mixed(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %p0 = tessel.program_id 0
  %p1 = tessel.program_id 1
  %m = arith.muli %p0, %c128 : index
  %n = arith.muli %p1, %c128 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %b = tessel.load %B[%n, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %bt = tessel.trans %b : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %t = tessel.trans %acc : tensor<128x128xf32> -> tensor<128x128xf32>
  %s = arith.addf %acc, %t : tensor<128x128xf32>
  // expected-error @+1 {{this store reads the accumulator both as is and transposed (acc.T()): each thread holds its own fragment of the tile, not the element across the diagonal; store the two separately}}
  tessel.store %s, %C[%m, %n] : tensor<128x128xf32>, !tessel.ref<2 x f32>
  return
}

// -----

func.func @reduce_transposed(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %V: !tessel.ref<1 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %p0 = tessel.program_id 0
  %p1 = tessel.program_id 1
  %m = arith.muli %p0, %c128 : index
  %n = arith.muli %p1, %c128 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %b = tessel.load %B[%n, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %bt = tessel.trans %b : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %t = tessel.trans %acc : tensor<128x128xf32> -> tensor<128x128xf32>
  %s = tessel.reduce %t, sum, 1 : tensor<128x128xf32> -> tensor<128xf32>
  // expected-error @+1 {{a reduction of the transposed accumulator (acc.T()) is not supported: reduce acc along the other axis instead}}
  tessel.store %s, %V[%n] {combine} : tensor<128xf32>, !tessel.ref<1 x f32>
  return
}
