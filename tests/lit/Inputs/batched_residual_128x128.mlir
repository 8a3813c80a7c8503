// C[z] = A[z] @ B[z]^T + R[z], batched (rank-3 A, B, R, C): in the warp-specialized schedules
// the rank-3 output is staged and written with 3-d TMA boxes (tessel-lower-epilogue rule 1) and
// R's tile goes through shared memory with 3-d boxes (rule 6); the golden matrix records its registers
// and spills.
func.func @batched_residual(%A: !tessel.ref<3 x bf16>, %B: !tessel.ref<3 x bf16>, %R: !tessel.ref<3 x bf16>, %C: !tessel.ref<3 x bf16>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %p0 = tessel.program_id 0
  %p1 = tessel.program_id 1
  %z = tessel.program_id 2
  %m = arith.muli %p0, %c128 : index
  %n = arith.muli %p1, %c128 : index
  %K = tessel.dim %A, 2 : !tessel.ref<3 x bf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %a = tessel.load %A[%z, %m, %k] : !tessel.ref<3 x bf16> -> tensor<128x64xbf16>
    %b = tessel.load %B[%z, %n, %k] : !tessel.ref<3 x bf16> -> tensor<128x64xbf16>
    %bt = tessel.trans %b : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %r = tessel.load %R[%z, %m, %n] : !tessel.ref<3 x bf16> -> tensor<128x128xbf16>
  %rf = tessel.cast %r : tensor<128x128xbf16> -> tensor<128x128xf32>
  %s = arith.addf %acc, %rf : tensor<128x128xf32>
  %sc = tessel.cast %s : tensor<128x128xf32> -> tensor<128x128xbf16>
  tessel.store %sc, %C[%z, %m, %n] : tensor<128x128xbf16>, !tessel.ref<3 x bf16>
  return
}
