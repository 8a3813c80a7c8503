// Block-scaled fp8 GEMM (fp8_gemm_blockwise of examples/08_fp8_gemm, DeepSeek-V3's recipe):
// C = bf16(sum over k-blocks kb of (A_kb @ B_kb^T) * SA[kb][m] * SB[n / 128][kb]), a scaled
// accumulation: the k-step's dot accumulates into zero and the loop adds it times its factors.
func.func @gemm_blockscale(%A: !tessel.ref<2 x f8E4M3FN>, %B: !tessel.ref<2 x f8E4M3FN>, %SA: !tessel.ref<2 x f32>, %SB: !tessel.ref<2 x f32>, %C: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %p0 = tessel.program_id 0
  %p1 = tessel.program_id 1
  %m = arith.muli %p0, %c128 : index
  %n = arith.muli %p1, %c128 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x f8E4M3FN>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c128 iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %kb = arith.divui %k, %c128 : index
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x f8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %b = tessel.load %B[%n, %k] : !tessel.ref<2 x f8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %bt = tessel.trans %b : tensor<128x128xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %z = arith.constant dense<0.0> : tensor<128x128xf32>
    %d = tessel.dot %a, %bt, %z : tensor<128x128xf8E4M3FN>, tensor<128x128xf8E4M3FN> -> tensor<128x128xf32>
    %sa = tessel.load %SA[%kb, %m] : !tessel.ref<2 x f32> -> tensor<128xf32>
    %sac = tessel.broadcast %sa [0] : tensor<128xf32> -> tensor<128x128xf32>
    %x = arith.mulf %d, %sac : tensor<128x128xf32>
    %nb = arith.divui %n, %c128 : index
    %sb = tessel.load_element %SB[%nb, %kb] : !tessel.ref<2 x f32> -> f32
    %sbs = tessel.splat %sb : f32 -> tensor<128x128xf32>
    %y = arith.mulf %x, %sbs : tensor<128x128xf32>
    %next = arith.addf %c, %y : tensor<128x128xf32>
    scf.yield %next : tensor<128x128xf32>
  }
  %r = tessel.cast %acc : tensor<128x128xf32> -> tensor<128x128xbf16>
  tessel.store %r, %C[%m, %n] : tensor<128x128xbf16>, !tessel.ref<2 x bf16>
  return
}
