// Two outputs of one epilogue (tests/support/reduce_kernels.hpp, gemm_bias_gelu_two_outputs):
// Z = A @ B^T + bias and Y = gelu(Z), both bf16. The golden matrix records the registers and
// spills of multi-output epilogues in the persistent schedules (docs/design-notes.md).
func.func @gemm_two_outputs(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %bias: !tessel.ref<1 x bf16>, %Z: !tessel.ref<2 x bf16>, %Y: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
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
  %bv = tessel.load %bias[%n] : !tessel.ref<1 x bf16> -> tensor<128xbf16>
  %bf = tessel.cast %bv : tensor<128xbf16> -> tensor<128xf32>
  %bb = tessel.broadcast %bf [1] : tensor<128xf32> -> tensor<128x128xf32>
  %z = arith.addf %acc, %bb : tensor<128x128xf32>
  %zc = tessel.cast %z : tensor<128x128xf32> -> tensor<128x128xbf16>
  tessel.store %zc, %Z[%m, %n] : tensor<128x128xbf16>, !tessel.ref<2 x bf16>
  %x2 = arith.mulf %z, %z : tensor<128x128xf32>
  %kc = arith.constant dense<0.035677408136300125> : tensor<128x128xf32>
  %k0 = arith.constant dense<0.7978845608028654> : tensor<128x128xf32>
  %half = arith.constant dense<0.5> : tensor<128x128xf32>
  %p = arith.mulf %kc, %x2 : tensor<128x128xf32>
  %poly = arith.addf %p, %k0 : tensor<128x128xf32>
  %u = arith.mulf %z, %poly : tensor<128x128xf32>
  %t = math.tanh %u : tensor<128x128xf32>
  %h = arith.mulf %half, %z : tensor<128x128xf32>
  %ht = arith.mulf %h, %t : tensor<128x128xf32>
  %g = arith.addf %ht, %h : tensor<128x128xf32>
  %gc = tessel.cast %g : tensor<128x128xf32> -> tensor<128x128xbf16>
  tessel.store %gc, %Y[%m, %n] : tensor<128x128xbf16>, !tessel.ref<2 x bf16>
  return
}
