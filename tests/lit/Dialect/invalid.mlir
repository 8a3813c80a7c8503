// RUN: tessel-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{rank must be 1, 2 or 3, got 4}}
func.func @rank4(%A: !tessel.ref<4 x f32>) { return }

// -----

func.func @offsets(%A: !tessel.ref<2 x f32>, %i: index) {
  // expected-error @+1 {{expects 2 offsets (one per tensor dimension), got 1}}
  %t = tessel.load %A[%i] : !tessel.ref<2 x f32> -> tensor<16x16xf32>
  return
}

// -----

func.func @element_offsets(%A: !tessel.ref<2 x f32>, %i: index) {
  // expected-error @+1 {{expects 2 offsets (one per tensor dimension), got 1}}
  %e = tessel.load_element %A[%i] : !tessel.ref<2 x f32> -> f32
  return
}

// -----

func.func @element_type(%A: !tessel.ref<1 x i32>, %i: index) {
  // expected-error @+1 {{result type 'f32' must equal the tensor element type 'i32'}}
  %e = tessel.load_element %A[%i] : !tessel.ref<1 x i32> -> f32
  return
}

// -----

func.func @tile_rank(%A: !tessel.ref<2 x f32>, %i: index) {
  // expected-error @+1 {{tile rank 3 must be between 1 and the tensor rank 2}}
  %t = tessel.load %A[%i, %i] : !tessel.ref<2 x f32> -> tensor<2x16x16xf32>
  return
}

// -----

func.func @store_dtype(%A: !tessel.ref<2 x bf16>, %i: index, %t: tensor<16x16xf32>) {
  // expected-error @+1 {{tile element type 'f32' must equal the tensor element type 'bf16'}}
  tessel.store %t, %A[%i, %i] : tensor<16x16xf32>, !tessel.ref<2 x bf16>
  return
}

// -----

func.func @dot_inner(%a: tensor<64x32xbf16>, %b: tensor<16x64xbf16>, %c: tensor<64x64xf32>) {
  // expected-error @+1 {{inner dimensions differ: a is 64x32, b is 16x64}}
  %d = tessel.dot %a, %b, %c : tensor<64x32xbf16>, tensor<16x64xbf16> -> tensor<64x64xf32>
  return
}

// -----

func.func @dot_f32(%a: tensor<64x32xf32>, %b: tensor<32x64xf32>, %c: tensor<64x64xf32>) {
  // expected-error @+1 {{inputs must be f16, bf16, f8E4M3FN or f8E5M2, got 'f32'}}
  %d = tessel.dot %a, %b, %c : tensor<64x32xf32>, tensor<32x64xf32> -> tensor<64x64xf32>
  return
}

// -----

func.func @trans(%a: tensor<64x32xbf16>) {
  // expected-error @+1 {{result must be the source with its two dimensions swapped}}
  %t = tessel.trans %a : tensor<64x32xbf16> -> tensor<64x32xbf16>
  return
}

// -----

func.func @broadcast(%a: tensor<32xf32>) {
  // expected-error @+1 {{source dim 0 (32) must equal result dim 1 (64)}}
  %t = tessel.broadcast %a [1] : tensor<32xf32> -> tensor<64x64xf32>
  return
}

// -----

func.func @dim(%A: !tessel.ref<2 x f32>) {
  // expected-error @+1 {{axis 2 out of range for rank 2}}
  %d = tessel.dim %A, 2 : !tessel.ref<2 x f32>
  return
}

// -----

// expected-error @+1 {{expected cluster, raster or stream_k (in this order) after ',', got 'cluster'}}
func.func @order() attributes {a = #tessel.schedule<kind = tma, tile = [128, 128, 64], stages = 4, warpgroups = 1, swizzle = 128, raster = 4, cluster = [2, 1]>} { return }

// -----

// expected-error @+1 {{unknown schedule kind 'fast'}}
func.func @kind() attributes {a = #tessel.schedule<kind = fast, tile = [128, 128, 64], stages = 4, warpgroups = 1, swizzle = 128>} { return }

// -----

func.func @reduce_axis(%y: tensor<128x256xf32>) {
  // expected-error @+1 {{axis 2 is out of range for a 2-d tile (axis 1 reduces each row to one value, axis 0 each column)}}
  %r = tessel.reduce %y, sum, 2 : tensor<128x256xf32> -> tensor<128xf32>
  return
}

// -----

func.func @reduce_rank(%y: tensor<128xf32>) {
  // expected-error @+1 {{reduces a 2-d tile, got a tile of rank 1}}
  %r = tessel.reduce %y, sum, 0 : tensor<128xf32> -> tensor<1xf32>
  return
}

// -----

func.func @reduce_result(%y: tensor<128x256xf32>) {
  // expected-error @+1 {{result must be tensor<128xf32> (axis 1 of a 128x256 tile removed)}}
  %r = tessel.reduce %y, max, 1 : tensor<128x256xf32> -> tensor<256xf32>
  return
}

// -----

func.func @reduce_int(%y: tensor<128x256xi32>) {
  // expected-error @+1 {{reduces a floating-point tile, got 'i32'}}
  %r = tessel.reduce %y, max, 1 : tensor<128x256xi32> -> tensor<128xf32>
  return
}

// -----

func.func @reduce_plain_store(%y: tensor<128x256xf32>, %V: !tessel.ref<1 x f32>, %i: index) {
  // expected-error @+1 {{the result of a reduction can only be stored with `tessel.store ... {combine}`}}
  %r = tessel.reduce %y, sum, 1 : tensor<128x256xf32> -> tensor<128xf32>
  // expected-note @+1 {{used here}}
  tessel.store %r, %V[%i] : tensor<128xf32>, !tessel.ref<1 x f32>
  return
}

// -----

func.func @combine_without_reduce(%v: tensor<128xf32>, %V: !tessel.ref<1 x f32>, %i: index) {
  // expected-error @+1 {{`combine` stores the result of a tessel.reduce}}
  tessel.store %v, %V[%i] {combine} : tensor<128xf32>, !tessel.ref<1 x f32>
  return
}

// -----

func.func @dot_fp8_bf16(%a: tensor<64x128xf8E4M3FN>, %b: tensor<128x64xbf16>, %c: tensor<64x64xf32>) {
  // expected-error @+1 {{a and b must have the same element type, or both be fp8; got 'f8E4M3FN' and 'bf16'}}
  %d = tessel.dot %a, %b, %c : tensor<64x128xf8E4M3FN>, tensor<128x64xbf16> -> tensor<64x64xf32>
  return
}

// -----

func.func @cast_fp8_i32(%a: tensor<64x64xf8E5M2>) {
  // expected-error @+1 {{casts between f16, bf16, f32 and i32, and between fp8 and the float types, only; got 'f8E5M2' to 'i32'}}
  %c = tessel.cast %a : tensor<64x64xf8E5M2> -> tensor<64x64xi32>
  return
}
