// Y = A @ B^T + bias (bf16 C), and three reductions of Y stored with {combine}: row amax
// (arg 4), row sum (arg 5), column max (arg 6). Traced from tests/support/reduce_kernels.hpp.
module {
  func.func @gemm_bias_reduce(%arg0: !tessel.ref<2 x bf16>, %arg1: !tessel.ref<2 x bf16>, %arg2: !tessel.ref<1 x bf16>, %arg3: !tessel.ref<2 x bf16>, %arg4: !tessel.ref<1 x f32>, %arg5: !tessel.ref<1 x f32>, %arg6: !tessel.ref<1 x f32>) attributes {tessel.kernel} {
    %0 = tessel.program_id 0
    %c128 = arith.constant 128 : index
    %1 = arith.muli %0, %c128 : index
    %2 = tessel.program_id 1
    %c128_0 = arith.constant 128 : index
    %3 = arith.muli %2, %c128_0 : index
    %cst = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
    %4 = tessel.dim %arg0, 1 : !tessel.ref<2 x bf16>
    %c64 = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %5 = scf.for %arg7 = %c0 to %4 step %c64 iter_args(%arg8 = %cst) -> (tensor<128x128xf32>) {
      %23 = tessel.load %arg1[%3, %arg7] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
      %24 = tessel.load %arg0[%1, %arg7] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
      %25 = tessel.trans %23 : tensor<128x64xbf16> -> tensor<64x128xbf16>
      %26 = tessel.dot %24, %25, %arg8 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
      scf.yield %26 : tensor<128x128xf32>
    }
    %6 = tessel.load %arg2[%3] : !tessel.ref<1 x bf16> -> tensor<128xbf16>
    %7 = tessel.cast %6 : tensor<128xbf16> -> tensor<128xf32>
    %8 = tessel.broadcast %7 [1] : tensor<128xf32> -> tensor<128x128xf32>
    %9 = arith.addf %5, %8 : tensor<128x128xf32>
    %10 = tessel.cast %9 : tensor<128x128xf32> -> tensor<128x128xbf16>
    tessel.store %10, %arg3[%1, %3] : tensor<128x128xbf16>, !tessel.ref<2 x bf16>
    %11 = tessel.cast %6 : tensor<128xbf16> -> tensor<128xf32>
    %12 = tessel.broadcast %11 [1] : tensor<128xf32> -> tensor<128x128xf32>
    %13 = arith.addf %5, %12 : tensor<128x128xf32>
    %14 = tessel.reduce %13, amax, 1 : tensor<128x128xf32> -> tensor<128xf32>
    tessel.store %14, %arg4[%1] {combine} : tensor<128xf32>, !tessel.ref<1 x f32>
    %15 = tessel.cast %6 : tensor<128xbf16> -> tensor<128xf32>
    %16 = tessel.broadcast %15 [1] : tensor<128xf32> -> tensor<128x128xf32>
    %17 = arith.addf %5, %16 : tensor<128x128xf32>
    %18 = tessel.reduce %17, sum, 1 : tensor<128x128xf32> -> tensor<128xf32>
    tessel.store %18, %arg5[%1] {combine} : tensor<128xf32>, !tessel.ref<1 x f32>
    %19 = tessel.cast %6 : tensor<128xbf16> -> tensor<128xf32>
    %20 = tessel.broadcast %19 [1] : tensor<128xf32> -> tensor<128x128xf32>
    %21 = arith.addf %5, %20 : tensor<128x128xf32>
    %22 = tessel.reduce %21, max, 0 : tensor<128x128xf32> -> tensor<128xf32>
    tessel.store %22, %arg6[%3] {combine} : tensor<128xf32>, !tessel.ref<1 x f32>
    return
  }
}

