// The grouped GEMM of examples/09_grouped_gemm (grouped_gemm<128, 128>), as traced: each row tile reads
// its group from %arg2 (tessel.load_element) and loads B from that group's weights, %arg1[g, n, k].
module {
  func.func @examples_grouped_gemm_128_128_64(%arg0: !tessel.ref<2 x bf16>, %arg1: !tessel.ref<3 x bf16>, %arg2: !tessel.ref<1 x i32>, %arg3: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
    %0 = tessel.program_id 0
    %c128 = arith.constant 128 : index
    %1 = arith.muli %0, %c128 : index
    %2 = tessel.program_id 1
    %c128_0 = arith.constant 128 : index
    %3 = arith.muli %2, %c128_0 : index
    %4 = tessel.program_id 0
    %5 = tessel.load_element %arg2[%4] : !tessel.ref<1 x i32> -> i32
    %cst = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
    %6 = tessel.dim %arg0, 1 : !tessel.ref<2 x bf16>
    %c64 = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %7 = scf.for %arg4 = %c0 to %6 step %c64 iter_args(%arg5 = %cst) -> (tensor<128x128xf32>) {
      %9 = arith.index_cast %5 : i32 to index
      %10 = tessel.load %arg1[%9, %3, %arg4] : !tessel.ref<3 x bf16> -> tensor<128x64xbf16>
      %11 = tessel.load %arg0[%1, %arg4] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
      %12 = tessel.trans %10 : tensor<128x64xbf16> -> tensor<64x128xbf16>
      %13 = tessel.dot %11, %12, %arg5 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
      scf.yield %13 : tensor<128x128xf32>
    }
    %8 = tessel.cast %7 : tensor<128x128xf32> -> tensor<128x128xbf16>
    tessel.store %8, %arg3[%1, %3] : tensor<128x128xbf16>, !tessel.ref<2 x bf16>
    return
  }
}

