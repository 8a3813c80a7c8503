// RUN: tessel-opt %s --tessel-legalize-math | FileCheck %s
// RUN: tessel-opt %s --tessel-legalize-math | tessel-opt | FileCheck %s

// exp is ex2 of x * log2(e); log is lg2 times ln(2); tanh is tanh.approx.
// CHECK-LABEL: func.func @f32_ops
// CHECK: %[[L2E:.*]] = arith.constant 1.44269502 : f32
// CHECK: %[[M:.*]] = arith.mulf %arg0, %[[L2E]] : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"(%[[M]]) : (f32) -> f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"(%arg0) : (f32) -> f32
// CHECK: %[[LG:.*]] = llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"(%arg0) : (f32) -> f32
// CHECK: arith.mulf %[[LG]], %{{.*}} : f32
// CHECK: llvm.inline_asm "tanh.approx.f32 $0, $1;", "=f,f" %arg0 : (f32) -> f32
// CHECK-NOT: math.exp
// CHECK-NOT: math.log
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK: return
func.func @f32_ops(%x: f32) -> (f32, f32, f32, f32, f32) {
  %0 = math.exp %x : f32
  %1 = math.exp2 %x : f32
  %2 = math.log %x : f32
  %3 = math.tanh %x : f32
  %4 = math.erf %x : f32
  return %0, %1, %2, %3, %4 : f32, f32, f32, f32, f32
}

// f16 and bf16 are computed in f32 and rounded once.
// CHECK-LABEL: func.func @half_ops
// CHECK: %[[W:.*]] = arith.extf %arg0 : bf16 to f32
// CHECK: %[[T:.*]] = llvm.inline_asm "tanh.approx.f32 $0, $1;", "=f,f" %[[W]] : (f32) -> f32
// CHECK: arith.truncf %[[T]] : f32 to bf16
// CHECK: arith.extf %arg1 : f16 to f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK-NOT: math.{{(exp|log|tanh|erf)}}
// CHECK: return
func.func @half_ops(%x: bf16, %y: f16) -> (bf16, f16, bf16) {
  %0 = math.tanh %x : bf16
  %1 = math.exp %y : f16
  %2 = math.erf %x : bf16
  return %0, %1, %2 : bf16, f16, bf16
}

// Ops that select natively are left alone.
// CHECK-LABEL: func.func @native
// CHECK: math.sqrt
// CHECK: math.rsqrt
// CHECK: math.absf
func.func @native(%x: f32) -> (f32, f32, f32) {
  %0 = math.sqrt %x : f32
  %1 = math.rsqrt %x : f32
  %2 = math.absf %x : f32
  return %0, %1, %2 : f32, f32, f32
}
