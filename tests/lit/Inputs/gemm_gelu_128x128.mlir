// C = bf16(gelu(A @ B^T / 64)), 128x128x64 tiles: tests/support/math_functions.hpp's gemm_math<gelu> traced.
module {
  func.func @tessel_test_gemm_math_tessel_test_math_fns_gelu(%arg0: !tessel.ref<2 x bf16>, %arg1: !tessel.ref<2 x bf16>, %arg2: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
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
    %5 = scf.for %arg3 = %c0 to %4 step %c64 iter_args(%arg4 = %cst) -> (tensor<128x128xf32>) {
      %17 = tessel.load %arg1[%3, %arg3] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
      %18 = tessel.load %arg0[%1, %arg3] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
      %19 = tessel.trans %17 : tensor<128x64xbf16> -> tensor<64x128xbf16>
      %20 = tessel.dot %18, %19, %arg4 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
      scf.yield %20 : tensor<128x128xf32>
    }
    %cst_1 = arith.constant dense<1.562500e-02> : tensor<128x128xf32>
    %6 = arith.mulf %5, %cst_1 : tensor<128x128xf32>
    %7 = arith.mulf %6, %6 : tensor<128x128xf32>
    %8 = arith.mulf %7, %6 : tensor<128x128xf32>
    %cst_2 = arith.constant dense<4.471500e-02> : tensor<128x128xf32>
    %9 = arith.mulf %cst_2, %8 : tensor<128x128xf32>
    %10 = arith.addf %6, %9 : tensor<128x128xf32>
    %cst_3 = arith.constant dense<0.797884583> : tensor<128x128xf32>
    %11 = arith.mulf %cst_3, %10 : tensor<128x128xf32>
    %12 = math.tanh %11 : tensor<128x128xf32>
    %cst_4 = arith.constant dense<5.000000e-01> : tensor<128x128xf32>
    %13 = arith.mulf %cst_4, %6 : tensor<128x128xf32>
    %cst_5 = arith.constant dense<1.000000e+00> : tensor<128x128xf32>
    %14 = arith.addf %cst_5, %12 : tensor<128x128xf32>
    %15 = arith.mulf %13, %14 : tensor<128x128xf32>
    %16 = tessel.cast %15 : tensor<128x128xf32> -> tensor<128x128xbf16>
    tessel.store %16, %arg2[%1, %3] : tensor<128x128xbf16>, !tessel.ref<2 x bf16>
    return
  }
}

