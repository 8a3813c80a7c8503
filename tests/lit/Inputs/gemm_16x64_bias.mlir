// A decode-shaped GEMM: a 16 x 64 tile (16 rows of A) with a per-column bias,
// C = A B^T + bias. tessel-swap-operands computes it as its 64 x 16 transpose.
func.func @decode(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %bias: !tessel.ref<1 x bf16>,
                  %C: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c16 = arith.constant 16 : index
  %p0 = tessel.program_id 0
  %p1 = tessel.program_id 1
  %m = arith.muli %p0, %c16 : index
  %n = arith.muli %p1, %c64 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<16x64xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<16x64xf32>) {
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x bf16> -> tensor<16x64xbf16>
    %b = tessel.load %B[%n, %k] : !tessel.ref<2 x bf16> -> tensor<64x64xbf16>
    %bt = tessel.trans %b : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<16x64xbf16>, tensor<64x64xbf16> -> tensor<16x64xf32>
    scf.yield %d : tensor<16x64xf32>
  }
  %v = tessel.load %bias[%n] : !tessel.ref<1 x bf16> -> tensor<64xbf16>
  %vf = tessel.cast %v : tensor<64xbf16> -> tensor<64xf32>
  %row = tessel.broadcast %vf [1] : tensor<64xf32> -> tensor<16x64xf32>
  %y = arith.addf %acc, %row : tensor<16x64xf32>
  %r = tessel.cast %y : tensor<16x64xf32> -> tensor<16x64xbf16>
  tessel.store %r, %C[%m, %n] : tensor<16x64xbf16>, !tessel.ref<2 x bf16>
  return
}
