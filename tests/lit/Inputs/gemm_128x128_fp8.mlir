// gemm_128x128.mlir in fp8: A e4m3, B e5m2 (N x K, K-major), C = e4m3(scale * A B^T)
// (BK = 128: 128 bytes, for the TMA-fed schedules).
func.func @gemm(%A: !tessel.ref<2 x f8E4M3FN>, %B: !tessel.ref<2 x f8E5M2>, %C: !tessel.ref<2 x f8E4M3FN>, %scale: f32) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %cBK = arith.constant 128 : index
  %c128 = arith.constant 128 : index
  %p0 = tessel.program_id 0
  %p1 = tessel.program_id 1
  %m = arith.muli %p0, %c128 : index
  %n = arith.muli %p1, %c128 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x f8E4M3FN>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %cBK iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x f8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %b = tessel.load %B[%n, %k] : !tessel.ref<2 x f8E5M2> -> tensor<128x128xf8E5M2>
    %bt = tessel.trans %b : tensor<128x128xf8E5M2> -> tensor<128x128xf8E5M2>
    %d = tessel.dot %a, %bt, %c : tensor<128x128xf8E4M3FN>, tensor<128x128xf8E5M2> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %s = tessel.splat %scale : f32 -> tensor<128x128xf32>
  %y = arith.mulf %acc, %s : tensor<128x128xf32>
  %r = tessel.cast %y : tensor<128x128xf32> -> tensor<128x128xf8E4M3FN>
  tessel.store %r, %C[%m, %n] : tensor<128x128xf8E4M3FN>, !tessel.ref<2 x f8E4M3FN>
  return
}
