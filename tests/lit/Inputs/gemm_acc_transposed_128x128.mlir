// A 128 x 128 GEMM that stores its accumulator transposed: C^T (N x M) = (A B^T)^T,
// each tile written at [n, m]. The epilogue writes fragment element (r, c) at (c, r).
func.func @gemm(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %cBN = arith.constant 128 : index
  %p0 = tessel.program_id 0
  %p1 = tessel.program_id 1
  %m = arith.muli %p0, %c128 : index
  %n = arith.muli %p1, %cBN : index
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
  %r = tessel.cast %t : tensor<128x128xf32> -> tensor<128x128xbf16>
  tessel.store %r, %C[%n, %m] : tensor<128x128xbf16>, !tessel.ref<2 x bf16>
  return
}
