// C = relu(A @ B^T + bias), 128x256x64 tiles: examples/03_gemm_bias_relu traced (tessel-gemm-bias-relu --no-run --dump-dir).
module {
  func.func @examples_gemm_bias_relu_128_256_64(%arg0: !tessel.ref<2 x bf16>, %arg1: !tessel.ref<2 x bf16>, %arg2: !tessel.ref<1 x bf16>, %arg3: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
    %0 = tessel.program_id 0
    %c128 = arith.constant 128 : index
    %1 = arith.muli %0, %c128 : index
    %2 = tessel.program_id 1
    %c256 = arith.constant 256 : index
    %3 = arith.muli %2, %c256 : index
    %cst = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %4 = tessel.dim %arg0, 1 : !tessel.ref<2 x bf16>
    %c64 = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %5 = scf.for %arg4 = %c0 to %4 step %c64 iter_args(%arg5 = %cst) -> (tensor<128x256xf32>) {
      %12 = tessel.load %arg1[%3, %arg4] : !tessel.ref<2 x bf16> -> tensor<256x64xbf16>
      %13 = tessel.load %arg0[%1, %arg4] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
      %14 = tessel.trans %12 : tensor<256x64xbf16> -> tensor<64x256xbf16>
      %15 = tessel.dot %13, %14, %arg5 : tensor<128x64xbf16>, tensor<64x256xbf16> -> tensor<128x256xf32>
      scf.yield %15 : tensor<128x256xf32>
    }
    %6 = tessel.load %arg2[%3] : !tessel.ref<1 x bf16> -> tensor<256xbf16>
    %7 = tessel.cast %6 : tensor<256xbf16> -> tensor<256xf32>
    %8 = tessel.broadcast %7 [1] : tensor<256xf32> -> tensor<128x256xf32>
    %9 = arith.addf %5, %8 : tensor<128x256xf32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %10 = arith.maxnumf %9, %cst_0 : tensor<128x256xf32>
    %11 = tessel.cast %10 : tensor<128x256xf32> -> tensor<128x256xbf16>
    tessel.store %11, %arg3[%1, %3] : tensor<128x256xbf16>, !tessel.ref<2 x bf16>
    return
  }
}

