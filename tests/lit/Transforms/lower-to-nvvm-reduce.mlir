// Reductions in the epilogue (docs/reductions.md): tessel-lower-epilogue gives every
// `tessel.store {combine}` of a tessel.reduce the path "reduce_atomic" (never staged, whatever
// the schedule), and the kernel builder expands it on the accumulator fragments: per thread,
// then shuffles (xor 1, 2 for a row; xor 4, 8, 16 for a column), then atomics (f32 add for sum;
// signed max on the f32 bits for amax; for max, signed max when the sign bit is clear and
// unsigned min when it is set).
// RUN: tessel-opt %inputs/gemm_bias_reduce_128x128.mlir -tessel-select-schedule="schedule=tma" -tessel-plan-pipeline | FileCheck %s --check-prefix=PATH
// RUN: tessel-opt %inputs/gemm_bias_reduce_128x128.mlir -tessel-select-schedule="schedule=multistage" -tessel-plan-pipeline | FileCheck %s --check-prefix=PATH
// RUN: tessel-opt %inputs/gemm_bias_reduce_128x128.mlir -tessel-select-schedule="schedule=warp_specialized" -tessel-plan-pipeline | FileCheck %s --check-prefixes=PATH,STAGED
// RUN: tessel-opt %inputs/gemm_bias_reduce_128x128.mlir -tessel-select-schedule="schedule=cooperative" -tessel-plan-pipeline | FileCheck %s --check-prefixes=PATH,STAGED,SK
// RUN: tessel-opt %inputs/gemm_bias_reduce_128x128.mlir -tessel-select-schedule="schedule=pingpong" -tessel-plan-pipeline | FileCheck %s --check-prefixes=PATH,STAGED,SK
// RUN: tessel-opt %inputs/gemm_bias_reduce_128x128.mlir -tessel-select-schedule="schedule=warp_specialized" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=NVVM
// RUN: tessel-opt %inputs/gemm_bias_reduce_128x128.mlir -tessel-select-schedule="schedule=cooperative" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=NVVM
// RUN: tessel-opt %inputs/gemm_bias_reduce_128x128.mlir -tessel-select-schedule="schedule=tma" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=NVVM
// RUN: tessel-opt %inputs/gemm_bias_reduce_128x128.mlir -tessel-select-schedule="schedule=multistage" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=NVVM
// RUN: tessel-opt %inputs/gemm_bias_reduce_128x128.mlir -tessel-select-schedule="schedule=warp_specialized" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=WGMMA
// RUN: tessel-opt %inputs/gemm_bias_reduce_128x128.mlir -tessel-select-schedule="schedule=multistage" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=MMA
// RUN: tessel-opt %s -split-input-file -tessel-select-schedule="schedule=cooperative" -tessel-plan-pipeline -verify-diagnostics
// RUN: tessel-opt %inputs/elementwise_reduce_64x128.mlir -tessel-select-schedule -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=EW

// A kernel without a dot (Epilogue.cpp, "Reductions in kernels without a dot"): the slots set to
// the identity, bar.sync 0, shared atomics per element inside the loaded tensors (per warp and
// row for a row reduction), bar.sync 0, then one global atomic per slot. Three reductions: 64 + 128 + 64 slots of dynamic shared memory.
// EW-LABEL: llvm.func @rowstats(
// EW-SAME: tessel.shared_bytes = 1024 : i32
// EW: "st.shared.b32 [$0], $1;"
// EW: "bar.sync 0;"
// EW: math.exp
// A row of 128 columns: each warp's 32 lanes hold one row's elements and shuffle them together;
// lane 0 adds the warp's partial into the row's slot.
// EW: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c16_i32, %c31_i32
// EW: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c1_i32, %c31_i32
// EW: "red.shared.add.f32 [$0], $1;"
// EW: "bar.sync 0;"
// EW: "ld.shared.f32 $0, [$1];"
// EW: llvm.atomicrmw fadd %{{.*}} monotonic : !llvm.ptr<1>, f32
// EW: "{\0A.reg .pred p;\0Asetp.ge.s32 p, $1, 0;\0A@p red.shared.max.s32 [$0], $1;\0A@!p red.shared.min.u32 [$0], $1;\0A}"
// EW: llvm.atomicrmw umin %{{.*}} monotonic : !llvm.ptr<1>, i32
// EW: "red.shared.max.s32 [$0], $1;"
// EW: llvm.atomicrmw max %{{.*}} monotonic : !llvm.ptr<1>, i32

// Stream-K (the persistent schedules' default) keeps its fixup: the finisher runs the epilogue
// on the summed tile, so the reductions see whole tiles.
// SK: hopper.epilogue {{.*}}fixup "stream_k"
// STAGED: tessel.store {{.*}}, %arg3[{{.*}}] {hopper.store = "tma_store"}
// PATH: tessel.store {{.*}}, %arg4[{{.*}}] {combine, hopper.store = "reduce_atomic"} : tensor<128xf32>
// PATH: tessel.store {{.*}}, %arg5[{{.*}}] {combine, hopper.store = "reduce_atomic"} : tensor<128xf32>
// PATH: tessel.store {{.*}}, %arg6[{{.*}}] {combine, hopper.store = "reduce_atomic"} : tensor<128xf32>

// NVVM-LABEL: llvm.func @gemm_bias_reduce(
// Row amax: |x| per element, a row over the quad, then a signed max on the bits.
// NVVM: math.absf
// NVVM: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c1_i32{{.*}}, %c31_i32
// NVVM: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c2_i32{{.*}}, %c31_i32
// NVVM: llvm.bitcast %{{.*}} : f32 to i32
// NVVM: llvm.atomicrmw max %{{.*}} monotonic : !llvm.ptr<1>, i32
// Row sum: f32 adds.
// NVVM: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c1_i32
// NVVM: llvm.atomicrmw fadd %{{.*}} monotonic : !llvm.ptr<1>, f32
// Column max: over the 8 quads, then by the sign.
// NVVM: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c4_i32
// NVVM: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c8_i32
// NVVM: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c16_i32
// NVVM: arith.cmpi sge, %{{.*}}, %c0_i32
// NVVM: llvm.atomicrmw max %{{.*}} monotonic : !llvm.ptr<1>, i32
// NVVM: } else {
// NVVM: llvm.atomicrmw umin %{{.*}} monotonic : !llvm.ptr<1>, i32
// Rows per thread: 2 in a wgmma fragment (a 64-row block per consumer warpgroup here), 8 in
// the mma.sync fragments of a 64 x 64 warp tile.
// WGMMA-LABEL: llvm.func @gemm_bias_reduce(
// WGMMA-COUNT-2: llvm.atomicrmw fadd
// WGMMA-NOT: llvm.atomicrmw fadd
// MMA-LABEL: llvm.func @gemm_bias_reduce(
// MMA-COUNT-8: llvm.atomicrmw fadd
// MMA-NOT: llvm.atomicrmw fadd

// A reduction of a tile that is not the accumulator's shape.
func.func @wrong_shape(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %X: !tessel.ref<2 x f32>, %V: !tessel.ref<1 x f32>) attributes {tessel.kernel} {
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
    %dd = tessel.dot %a, %bt, %c : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %dd : tensor<128x128xf32>
  }
  %x = tessel.load %X[%m, %n] : !tessel.ref<2 x f32> -> tensor<64x128xf32>
  // expected-error @+1 {{a reduction after the mainloop reduces a 128x128 tile (the accumulator's shape), got 64x128}}
  %r = tessel.reduce %x, sum, 1 : tensor<64x128xf32> -> tensor<64xf32>
  tessel.store %r, %V[%m] {combine} : tensor<64xf32>, !tessel.ref<1 x f32>
  tessel.store %acc, %X[%m, %n] : tensor<128x128xf32>, !tessel.ref<2 x f32>
  return
}
