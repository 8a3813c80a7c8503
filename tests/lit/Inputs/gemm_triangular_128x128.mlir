// A triangular GEMM: row block m runs its k-loop to m + BM (the mainloop's trip count depends on
// the tile, tessel-select-schedule rule 9).
module {
  func.func @tri_128_128_64(%arg0: !tessel.ref<2 x bf16>, %arg1: !tessel.ref<2 x bf16>, %arg2: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
    %0 = tessel.program_id 0
    %c128 = arith.constant 128 : index
    %1 = arith.muli %0, %c128 : index
    %2 = tessel.program_id 1
    %c128_0 = arith.constant 128 : index
    %3 = arith.muli %2, %c128_0 : index
    %cst = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
    %c128_1 = arith.constant 128 : index
    %4 = arith.addi %1, %c128_1 : index
    %c64 = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %5 = scf.for %arg3 = %c0 to %4 step %c64 iter_args(%arg4 = %cst) -> (tensor<128x128xf32>) {
      %7 = tessel.load %arg1[%3, %arg3] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
      %8 = tessel.load %arg0[%1, %arg3] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
      %9 = tessel.trans %7 : tensor<128x64xbf16> -> tensor<64x128xbf16>
      %10 = tessel.dot %8, %9, %arg4 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
      scf.yield %10 : tensor<128x128xf32>
    }
    %6 = tessel.cast %5 : tensor<128x128xf32> -> tensor<128x128xbf16>
    tessel.store %6, %arg2[%1, %3] : tensor<128x128xbf16>, !tessel.ref<2 x bf16>
    return
  }
}

