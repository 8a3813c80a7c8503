// What GemmMatch (GemmMatch.h) accepts as a scaled accumulation, acc += f(dot(a, b)):
// the accumulator in that one addition only, and a factor of elementwise operations,
// broadcast vectors, scalars and loaded tensor elements.
// RUN: tessel-opt %s -split-input-file -tessel-select-schedule -verify-diagnostics

func.func @acc_twice(%A: !tessel.ref<2 x f8E4M3FN>, %B: !tessel.ref<2 x f8E4M3FN>, %C: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x f8E4M3FN>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c128 iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %a = tessel.load %A[%c0, %k] : !tessel.ref<2 x f8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %b = tessel.load %B[%c0, %k] : !tessel.ref<2 x f8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %bt = tessel.trans %b : tensor<128x128xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    // expected-error @+1 {{a scaled accumulation (acc += dot(a, b) * s) may use the accumulator only in that one addition}}
    %d = tessel.dot %a, %bt, %zero : tensor<128x128xf8E4M3FN>, tensor<128x128xf8E4M3FN> -> tensor<128x128xf32>
    %x = arith.mulf %d, %c : tensor<128x128xf32>
    %next = arith.addf %c, %x : tensor<128x128xf32>
    scf.yield %next : tensor<128x128xf32>
  }
  %r = tessel.cast %acc : tensor<128x128xf32> -> tensor<128x128xbf16>
  tessel.store %r, %C[%c0, %c0] : tensor<128x128xbf16>, !tessel.ref<2 x bf16>
  return
}

// -----

func.func @transposed_factor(%A: !tessel.ref<2 x f8E4M3FN>, %B: !tessel.ref<2 x f8E4M3FN>, %S: !tessel.ref<2 x f32>, %C: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x f8E4M3FN>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c128 iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %a = tessel.load %A[%c0, %k] : !tessel.ref<2 x f8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %b = tessel.load %B[%c0, %k] : !tessel.ref<2 x f8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %bt = tessel.trans %b : tensor<128x128xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %d = tessel.dot %a, %bt, %zero : tensor<128x128xf8E4M3FN>, tensor<128x128xf8E4M3FN> -> tensor<128x128xf32>
    %s = tessel.load %S[%c0, %k] : !tessel.ref<2 x f32> -> tensor<128x128xf32>
    // expected-error @+1 {{cannot be part of a scaled accumulation (acc += dot(a, b) * s): its factor may use elementwise operations, .row() / .col() vectors, scalars and tensor elements (ts::tensor::at) only}}
    %st = tessel.trans %s : tensor<128x128xf32> -> tensor<128x128xf32>
    %x = arith.mulf %d, %st : tensor<128x128xf32>
    %next = arith.addf %c, %x : tensor<128x128xf32>
    scf.yield %next : tensor<128x128xf32>
  }
  %r = tessel.cast %acc : tensor<128x128xf32> -> tensor<128x128xbf16>
  tessel.store %r, %C[%c0, %c0] : tensor<128x128xbf16>, !tessel.ref<2 x bf16>
  return
}
