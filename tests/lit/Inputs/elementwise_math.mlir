// Y = tanh(exp(X)) + log(X) + erf(X) on 1-d f32 tensors, 256 elements per program instance.
module {
  func.func @elementwise_math(%arg0: !tessel.ref<1 x f32>, %arg1: !tessel.ref<1 x f32>) attributes {tessel.kernel} {
    %0 = tessel.program_id 0
    %c256 = arith.constant 256 : index
    %1 = arith.muli %0, %c256 : index
    %2 = tessel.load %arg0[%1] : !tessel.ref<1 x f32> -> tensor<256xf32>
    %3 = math.exp %2 : tensor<256xf32>
    %4 = math.tanh %3 : tensor<256xf32>
    %5 = math.log %2 : tensor<256xf32>
    %6 = math.erf %2 : tensor<256xf32>
    %7 = arith.addf %4, %5 : tensor<256xf32>
    %8 = arith.addf %7, %6 : tensor<256xf32>
    tessel.store %8, %arg1[%1] : tensor<256xf32>, !tessel.ref<1 x f32>
    return
  }
}
