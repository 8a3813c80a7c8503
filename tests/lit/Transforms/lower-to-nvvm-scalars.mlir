// Runtime scalar kernel parameters (ts::scalar<ts::f32>, ts::scalar<ts::i32>; docs/scalars.md):
// a plain f32 / i32 argument of the tessel function becomes one .f32 / .u32 kernel parameter,
// recorded as "scalar:<argument>" in tessel.params, in argument order; tile expressions read it
// where they splat it, in every schedule and in elementwise kernels.
// RUN: tessel-opt %s -tessel-lower-to-nvvm | FileCheck %s --check-prefix=EW
// RUN: tessel-opt %inputs/gemm_alpha_beta_128x128.mlir -tessel-select-schedule="schedule=tma" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefixes=GEMM,TMA
// RUN: tessel-opt %inputs/gemm_alpha_beta_128x128.mlir -tessel-select-schedule="schedule=multistage" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefixes=GEMM,MS
// RUN: tessel-opt %inputs/gemm_alpha_beta_128x128.mlir -tessel-select-schedule="schedule=warp_specialized" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefixes=GEMM,TMA
// RUN: tessel-opt %inputs/gemm_alpha_beta_128x128.mlir -tessel-select-schedule="schedule=cooperative" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefixes=GEMM,TMA
// RUN: tessel-opt %inputs/gemm_alpha_beta_128x128.mlir -tessel-select-schedule="schedule=pingpong" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefixes=GEMM,TMA

// A (ptr, 2 sizes, 2 strides: %arg0-4), B (%arg5-9), then alpha and beta as f32 values.
// GEMM-LABEL: llvm.func @gemm_alpha_beta(
// GEMM-SAME: %arg9: i64, %arg10: f32, %arg11: f32, %arg12: !llvm.ptr<1>
// GEMM-SAME: tessel.params = ["ptr:0", "size:0:0", "size:0:1", "stride:0:0", "stride:0:1", "ptr:1", "size:1:0", "size:1:1", "stride:1:0", "stride:1:1", "scalar:2", "scalar:3", "ptr:4",
// TMA-SAME: "tma:0:
// MS-NOT: "tma:
// The epilogue: alpha * acc and beta * D, per accumulator register, on the parameters.
// GEMM-DAG: arith.mulf %{{.*}}, %arg10 : f32
// GEMM-DAG: arith.mulf %{{.*}}, %arg11 : f32

// EW-LABEL: llvm.func @scale_shift(
// EW-SAME: %arg0: !llvm.ptr<1>, %arg1: i64, %arg2: i64, %arg3: f32, %arg4: i32, %arg5: !llvm.ptr<1>, %arg6: i64, %arg7: i64)
// EW-SAME: tessel.params = ["ptr:0", "size:0:0", "stride:0:0", "scalar:1", "scalar:2", "ptr:3", "size:3:0", "stride:3:0"]
// Scalar math (alpha + 1, the i32 as f32 and as an offset) is computed once, from the parameters.
// EW-DAG: arith.addf %arg3, %{{.*}} : f32
// EW-DAG: arith.sitofp %arg4 : i32 to f32
// EW-DAG: arith.addi %{{.*}}, %arg4 : i32
// EW: llvm.inline_asm {{.*}}@p ld.global.b32 $0, [$1];
// EW: arith.mulf
// EW: arith.maximumf %{{.*}}, %arg3 : f32
// EW: llvm.store
func.func @scale_shift(%X: !tessel.ref<1 x f32>, %s: f32, %n: i32, %Y: !tessel.ref<1 x f32>) attributes {tessel.kernel} {
  %c1024 = arith.constant 1024 : index
  %p = tessel.program_id 0
  %o = arith.muli %p, %c1024 : index
  %ni = arith.index_cast %n : i32 to index
  %src = arith.addi %o, %ni : index
  %x = tessel.load %X[%src] : !tessel.ref<1 x f32> -> tensor<1024xf32>
  %one = arith.constant 1.0 : f32
  %s1 = arith.addf %s, %one : f32
  %nf = arith.sitofp %n : i32 to f32
  %t = arith.mulf %s1, %nf : f32
  %ts = tessel.splat %t : f32 -> tensor<1024xf32>
  %y = arith.mulf %x, %ts : tensor<1024xf32>
  %sv = tessel.splat %s : f32 -> tensor<1024xf32>
  %z = arith.maximumf %y, %sv : tensor<1024xf32>
  tessel.store %z, %Y[%o] : tensor<1024xf32>, !tessel.ref<1 x f32>
  return
}
