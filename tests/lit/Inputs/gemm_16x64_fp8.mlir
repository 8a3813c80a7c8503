// A decode-shaped fp8 GEMM: a 16 x 64 tile of e4m3 A x e5m2 B (BK = 128), bf16 out with a
// runtime scale. tessel-swap-operands computes its 64 x 16 transpose (wgmma m64n16k32, e5m2 x e4m3).
func.func @gemm(%A: !tessel.ref<2 x f8E4M3FN>, %B: !tessel.ref<2 x f8E5M2>, %C: !tessel.ref<2 x bf16>, %scale: f32) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %cBK = arith.constant 128 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %p0 = tessel.program_id 0
  %p1 = tessel.program_id 1
  %m = arith.muli %p0, %c16 : index
  %n = arith.muli %p1, %c64 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x f8E4M3FN>
  %zero = arith.constant dense<0.0> : tensor<16x64xf32>
  %acc = scf.for %k = %c0 to %K step %cBK iter_args(%c = %zero) -> (tensor<16x64xf32>) {
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x f8E4M3FN> -> tensor<16x128xf8E4M3FN>
    %b = tessel.load %B[%n, %k] : !tessel.ref<2 x f8E5M2> -> tensor<64x128xf8E5M2>
    %bt = tessel.trans %b : tensor<64x128xf8E5M2> -> tensor<128x64xf8E5M2>
    %d = tessel.dot %a, %bt, %c : tensor<16x128xf8E4M3FN>, tensor<128x64xf8E5M2> -> tensor<16x64xf32>
    scf.yield %d : tensor<16x64xf32>
  }
  %s = tessel.splat %scale : f32 -> tensor<16x64xf32>
  %y = arith.mulf %acc, %s : tensor<16x64xf32>
  %r = tessel.cast %y : tensor<16x64xf32> -> tensor<16x64xbf16>
  tessel.store %r, %C[%m, %n] : tensor<16x64xbf16>, !tessel.ref<2 x bf16>
  return
}
