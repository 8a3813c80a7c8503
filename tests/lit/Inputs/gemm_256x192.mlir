func.func @gemm(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %cBM = arith.constant 256 : index
  %cBN = arith.constant 192 : index
  %p0 = tessel.program_id 0
  %p1 = tessel.program_id 1
  %m = arith.muli %p0, %cBM : index
  %n = arith.muli %p1, %cBN : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<256x192xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<256x192xf32>) {
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x bf16> -> tensor<256x64xbf16>
    %b = tessel.load %B[%n, %k] : !tessel.ref<2 x bf16> -> tensor<192x64xbf16>
    %bt = tessel.trans %b : tensor<192x64xbf16> -> tensor<64x192xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<256x64xbf16>, tensor<64x192xbf16> -> tensor<256x192xf32>
    scf.yield %d : tensor<256x192xf32>
  }
  %r = tessel.cast %acc : tensor<256x192xf32> -> tensor<256x192xbf16>
  tessel.store %r, %C[%m, %n] : tensor<256x192xbf16>, !tessel.ref<2 x bf16>
  return
}
