// The masked grouped GEMM of examples/09_grouped_gemm (grouped_gemm_masked<64, 128>), as traced: group
// program_id(2)'s row count is read from %arg2 (tessel.load_element); a tile past it has a k-loop of
// no steps (its bound live * K, live = min(max(rows - m, 0), 1)) and stores past C's rows.
module {
  func.func @examples_grouped_gemm_masked_64_128_64(%arg0: !tessel.ref<3 x bf16>, %arg1: !tessel.ref<3 x bf16>, %arg2: !tessel.ref<1 x i32>, %arg3: !tessel.ref<3 x bf16>) attributes {tessel.kernel} {
    %cst = arith.constant dense<0.000000e+00> : tensor<64x128xf32>
    %c1 = arith.constant 1 : index
    %c0 = arith.constant 0 : index
    %c128 = arith.constant 128 : index
    %c64 = arith.constant 64 : index
    %0 = tessel.program_id 2
    %1 = tessel.program_id 0
    %2 = arith.muli %1, %c64 : index
    %3 = tessel.program_id 1
    %4 = arith.muli %3, %c128 : index
    %5 = tessel.load_element %arg2[%0] : !tessel.ref<1 x i32> -> i32
    %6 = arith.index_cast %5 : i32 to index
    %7 = arith.subi %6, %2 : index
    %8 = arith.maxsi %7, %c0 : index
    %9 = arith.minsi %8, %c1 : index
    %10 = tessel.dim %arg0, 2 : !tessel.ref<3 x bf16>
    %11 = arith.muli %9, %10 : index
    %12 = scf.for %arg4 = %c0 to %11 step %c64 iter_args(%arg5 = %cst) -> (tensor<64x128xf32>) {
      %18 = tessel.load %arg1[%0, %4, %arg4] : !tessel.ref<3 x bf16> -> tensor<128x64xbf16>
      %19 = tessel.load %arg0[%0, %2, %arg4] : !tessel.ref<3 x bf16> -> tensor<64x64xbf16>
      %20 = tessel.trans %18 : tensor<128x64xbf16> -> tensor<64x128xbf16>
      %21 = tessel.dot %19, %20, %arg5 : tensor<64x64xbf16>, tensor<64x128xbf16> -> tensor<64x128xf32>
      scf.yield %21 : tensor<64x128xf32>
    }
    %13 = tessel.dim %arg3, 1 : !tessel.ref<3 x bf16>
    %14 = arith.subi %c1, %9 : index
    %15 = arith.muli %14, %13 : index
    %16 = arith.addi %2, %15 : index
    %17 = tessel.cast %12 : tensor<64x128xf32> -> tensor<64x128xbf16>
    tessel.store %17, %arg3[%0, %16, %4] : tensor<64x128xbf16>, !tessel.ref<3 x bf16>
    return
  }
}
