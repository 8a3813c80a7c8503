// Operand layouts (tessel.contiguous_dim, load orientation) and the swizzle
// option in tessel-select-schedule (rules 1-2 there, L1-L3 in OperandLayout.cpp).
// RUN: tessel-opt %s -split-input-file -tessel-select-schedule -verify-diagnostics | FileCheck %s
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="swizzle=-1" 2>/dev/null | FileCheck %s --check-prefix=NONE
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="swizzle=128" 2>&1 | FileCheck %s --check-prefix=SW128
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="swizzle=48" 2>&1 | FileCheck %s --check-prefix=SW48
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=multistage" 2>&1 | FileCheck %s --check-prefix=MS

// A M-major (BM = 128: 256 B contiguous), B loaded K x N from a row-major
// K x N tensor (N-major, BN = 32: 64 B contiguous): automatic picks 64B for both.
// CHECK-LABEL: func.func @nt_bn32
// CHECK-SAME: swizzle = 64>
// NONE-LABEL: func.func @nt_bn32
// NONE-SAME: swizzle = 0>
// SW128: error: swizzle 128B (option swizzle) does not fit operand B (argument 1, MN-major): its contiguous extent 32 x 2 bytes must be a multiple of 128 bytes (one swizzle row)
// SW48: error: option swizzle = 48 is not one of 0 (automatic), 128, 64, 32, -1 (none)
// multistage takes MN-major operands too (ldmatrix.trans).
// MS-LABEL: func.func @nt_bn32
// MS-SAME: kind = multistage
func.func @nt_bn32(%A: !tessel.ref<2 x bf16> {tessel.contiguous_dim = 0 : i64}, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<128x32xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<128x32xf32>) {
    %a = tessel.load %A[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %b = tessel.load %B[%k, %c0] : !tessel.ref<2 x bf16> -> tensor<64x32xbf16>
    %d = tessel.dot %a, %b, %c : tensor<128x64xbf16>, tensor<64x32xbf16> -> tensor<128x32xf32>
    scf.yield %d : tensor<128x32xf32>
  }
  tessel.store %acc, %C[%c0, %c0] : tensor<128x32xf32>, !tessel.ref<2 x f32>
  return
}

// -----

// K-major both ways round: A loaded K x M and transposed from a tensor whose
// dimension 0 (K) has unit stride; B N x K, row-major. 128B.
// CHECK-LABEL: func.func @tn_transposed_a
// CHECK-SAME: swizzle = 128>
func.func @tn_transposed_a(%A: !tessel.ref<2 x bf16> {tessel.contiguous_dim = 0 : i64}, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %K = tessel.dim %A, 0 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %a = tessel.load %A[%k, %c0] : !tessel.ref<2 x bf16> -> tensor<64x128xbf16>
    %at = tessel.trans %a : tensor<64x128xbf16> -> tensor<128x64xbf16>
    %b = tessel.load %B[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %bt = tessel.trans %b : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tessel.dot %at, %bt, %c : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tessel.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, !tessel.ref<2 x f32>
  return
}

// -----

// Rule L1.
// expected-error @+1 {{argument 1: tessel.contiguous_dim = 2 is not a dimension of a rank-2 tensor}}
func.func @bad_dim(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16> {tessel.contiguous_dim = 2 : i64}, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %a = tessel.load %A[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %b = tessel.load %B[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %bt = tessel.trans %b : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tessel.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, !tessel.ref<2 x f32>
  return
}
