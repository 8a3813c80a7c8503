// A dual GEMM (SwiGLU), tile 64x128 (pingpong): gate = A @ W1^T and up = A @ W3^T share the A tile;
// H = silu(gate) * up. As the tracer writes it (examples/07_swiglu).
func.func @swiglu(%A: !tessel.ref<2 x bf16>, %W1: !tessel.ref<2 x bf16>, %W3: !tessel.ref<2 x bf16>, %H: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %p0 = tessel.program_id 0
  %p1 = tessel.program_id 1
  %m = arith.muli %p0, %c64 : index
  %n = arith.muli %p1, %c128 : index
  %zero = arith.constant dense<0.0> : tensor<64x128xf32>
  %one = arith.constant dense<1.0> : tensor<64x128xf32>
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %r:2 = scf.for %k = %c0 to %K step %c64 iter_args(%g = %zero, %u = %zero) -> (tensor<64x128xf32>, tensor<64x128xf32>) {
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x bf16> -> tensor<64x64xbf16>
    %w1 = tessel.load %W1[%n, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %w1t = tessel.trans %w1 : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %g2 = tessel.dot %a, %w1t, %g : tensor<64x64xbf16>, tensor<64x128xbf16> -> tensor<64x128xf32>
    %w3 = tessel.load %W3[%n, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %w3t = tessel.trans %w3 : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %u2 = tessel.dot %a, %w3t, %u : tensor<64x64xbf16>, tensor<64x128xbf16> -> tensor<64x128xf32>
    scf.yield %g2, %u2 : tensor<64x128xf32>, tensor<64x128xf32>
  }
  %neg = arith.negf %r#0 : tensor<64x128xf32>
  %e = math.exp %neg : tensor<64x128xf32>
  %d = arith.addf %e, %one : tensor<64x128xf32>
  %s = arith.divf %one, %d : tensor<64x128xf32>
  %silu = arith.mulf %r#0, %s : tensor<64x128xf32>
  %h = arith.mulf %silu, %r#1 : tensor<64x128xf32>
  %hb = tessel.cast %h : tensor<64x128xf32> -> tensor<64x128xbf16>
  tessel.store %hb, %H[%m, %n] : tensor<64x128xbf16>, !tessel.ref<2 x bf16>
  return
}
