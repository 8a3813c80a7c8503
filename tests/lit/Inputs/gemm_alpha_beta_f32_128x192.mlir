// C = alpha * (A @ B^T) + beta * D with an f32 D at 128x192: D stays on tessel-lower-epilogue rule 8 (L2)
// on every schedule (rules 6 and 7 take 16-bit operands only).
func.func @gemm_alpha_beta(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %alpha: f32, %beta: f32, %D: !tessel.ref<2 x f32>, %C: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c192 = arith.constant 192 : index
  %p0 = tessel.program_id 0
  %p1 = tessel.program_id 1
  %m = arith.muli %p0, %c128 : index
  %n = arith.muli %p1, %c192 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<128x192xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<128x192xf32>) {
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %b = tessel.load %B[%n, %k] : !tessel.ref<2 x bf16> -> tensor<192x64xbf16>
    %bt = tessel.trans %b : tensor<192x64xbf16> -> tensor<64x192xbf16>
    %dd = tessel.dot %a, %bt, %c : tensor<128x64xbf16>, tensor<64x192xbf16> -> tensor<128x192xf32>
    scf.yield %dd : tensor<128x192xf32>
  }
  %al = tessel.splat %alpha : f32 -> tensor<128x192xf32>
  %scaled = arith.mulf %acc, %al : tensor<128x192xf32>
  %df = tessel.load %D[%m, %n] : !tessel.ref<2 x f32> -> tensor<128x192xf32>
  %be = tessel.splat %beta : f32 -> tensor<128x192xf32>
  %bd = arith.mulf %df, %be : tensor<128x192xf32>
  %sum = arith.addf %scaled, %bd : tensor<128x192xf32>
  %r = tessel.cast %sum : tensor<128x192xf32> -> tensor<128x192xbf16>
  tessel.store %r, %C[%m, %n] : tensor<128x192xbf16>, !tessel.ref<2 x bf16>
  return
}
