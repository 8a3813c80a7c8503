// C = A @ B^T + D + R on 64x192 tiles: two M x N epilogue operands. In pingpong (4 stages of 32
// KiB) D's tiles fit in shared memory (rule 6) and R's do not; R cannot go chunk by chunk (rule 7)
// in a kernel with a rule-6 operand (both would complete phases of one barrier), so L2 (rule 8).
func.func @gemm_two_operands(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %D: !tessel.ref<2 x bf16>, %R: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c192 = arith.constant 192 : index
  %p0 = tessel.program_id 0
  %p1 = tessel.program_id 1
  %m = arith.muli %p0, %c64 : index
  %n = arith.muli %p1, %c192 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<64x192xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<64x192xf32>) {
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x bf16> -> tensor<64x64xbf16>
    %b = tessel.load %B[%n, %k] : !tessel.ref<2 x bf16> -> tensor<192x64xbf16>
    %bt = tessel.trans %b : tensor<192x64xbf16> -> tensor<64x192xbf16>
    %dd = tessel.dot %a, %bt, %c : tensor<64x64xbf16>, tensor<64x192xbf16> -> tensor<64x192xf32>
    scf.yield %dd : tensor<64x192xf32>
  }
  %d = tessel.load %D[%m, %n] : !tessel.ref<2 x bf16> -> tensor<64x192xbf16>
  %df = tessel.cast %d : tensor<64x192xbf16> -> tensor<64x192xf32>
  %r = tessel.load %R[%m, %n] : !tessel.ref<2 x bf16> -> tensor<64x192xbf16>
  %rf = tessel.cast %r : tensor<64x192xbf16> -> tensor<64x192xf32>
  %s1 = arith.addf %acc, %df : tensor<64x192xf32>
  %s2 = arith.addf %s1, %rf : tensor<64x192xf32>
  %o = tessel.cast %s2 : tensor<64x192xf32> -> tensor<64x192xbf16>
  tessel.store %o, %C[%m, %n] : tensor<64x192xbf16>, !tessel.ref<2 x bf16>
  return
}
