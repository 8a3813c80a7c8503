// Row sums of exp(x), column maxima and row amaxes of a 64 x 128 bf16 tile in a kernel without
// a dot (an elementwise kernel): each reduction meets in a shared-memory vector of partials.
func.func @rowstats(%X: !tessel.ref<2 x bf16>, %S: !tessel.ref<1 x f32>, %M: !tessel.ref<1 x f32>, %A: !tessel.ref<1 x f32>) attributes {tessel.kernel} {
  %c64 = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  %p0 = tessel.program_id 0
  %m = arith.muli %p0, %c64 : index
  %x = tessel.load %X[%m, %c0] : !tessel.ref<2 x bf16> -> tensor<64x128xbf16>
  %xf = tessel.cast %x : tensor<64x128xbf16> -> tensor<64x128xf32>
  %e = math.exp %xf : tensor<64x128xf32>
  %s = tessel.reduce %e, sum, 1 : tensor<64x128xf32> -> tensor<64xf32>
  tessel.store %s, %S[%m] {combine} : tensor<64xf32>, !tessel.ref<1 x f32>
  %mx = tessel.reduce %xf, max, 0 : tensor<64x128xf32> -> tensor<128xf32>
  tessel.store %mx, %M[%c0] {combine} : tensor<128xf32>, !tessel.ref<1 x f32>
  %am = tessel.reduce %xf, amax, 1 : tensor<64x128xf32> -> tensor<64xf32>
  tessel.store %am, %A[%m] {combine} : tensor<64xf32>, !tessel.ref<1 x f32>
  return
}
