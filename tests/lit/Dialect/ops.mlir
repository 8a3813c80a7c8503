// RUN: tessel-opt %s | tessel-opt | FileCheck %s
// Round trip of every tessel op and type.

// CHECK-LABEL: func.func @all_ops
// CHECK-SAME: !tessel.ref<2 x bf16>
func.func @all_ops(%A: !tessel.ref<2 x bf16>, %b: !tessel.ref<1 x f32>) attributes {tessel.kernel} {
  // CHECK: tessel.program_id 0
  %p = tessel.program_id 0
  // CHECK: tessel.num_programs 1
  %np = tessel.num_programs 1
  // CHECK: tessel.dim %{{.*}}, 1 : !tessel.ref<2 x bf16>
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  // CHECK: tessel.load %{{.*}}[%{{.*}}, %{{.*}}] : !tessel.ref<2 x bf16> -> tensor<64x32xbf16>
  %a = tessel.load %A[%p, %K] : !tessel.ref<2 x bf16> -> tensor<64x32xbf16>
  // A lower-rank tile covers the innermost dimensions (one matrix of a batch).
  // CHECK: tessel.load %{{.*}}[%{{.*}}, %{{.*}}] : !tessel.ref<2 x bf16> -> tensor<32xbf16>
  %row1 = tessel.load %A[%p, %K] : !tessel.ref<2 x bf16> -> tensor<32xbf16>
  // One element as a scalar (ts::tensor::at).
  // CHECK: tessel.load_element %{{.*}}[%{{.*}}] : !tessel.ref<1 x f32> -> f32
  %e = tessel.load_element %b[%p] : !tessel.ref<1 x f32> -> f32
  %l = tessel.load %A[%p, %K] : !tessel.ref<2 x bf16> -> tensor<64x32xbf16>
  // CHECK: tessel.trans %{{.*}} : tensor<64x32xbf16> -> tensor<32x64xbf16>
  %t = tessel.trans %l : tensor<64x32xbf16> -> tensor<32x64xbf16>
  %z = arith.constant dense<0.0> : tensor<64x64xf32>
  // CHECK: tessel.dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x32xbf16>, tensor<32x64xbf16> -> tensor<64x64xf32>
  %d = tessel.dot %a, %t, %z : tensor<64x32xbf16>, tensor<32x64xbf16> -> tensor<64x64xf32>
  %bias = tessel.load %b[%p] : !tessel.ref<1 x f32> -> tensor<64xf32>
  // CHECK: tessel.broadcast %{{.*}} [1] : tensor<64xf32> -> tensor<64x64xf32>
  %row = tessel.broadcast %bias [1] : tensor<64xf32> -> tensor<64x64xf32>
  %c2 = arith.constant 2.0 : f32
  // CHECK: tessel.splat %{{.*}} : f32 -> tensor<64x64xf32>
  %two = tessel.splat %c2 : f32 -> tensor<64x64xf32>
  %s = arith.addf %d, %row : tensor<64x64xf32>
  %m = arith.mulf %s, %two : tensor<64x64xf32>
  // CHECK: tessel.cast %{{.*}} : tensor<64x64xf32> -> tensor<64x64xbf16>
  %c = tessel.cast %m : tensor<64x64xf32> -> tensor<64x64xbf16>
  // CHECK: tessel.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : tensor<64x64xbf16>, !tessel.ref<2 x bf16>
  tessel.store %c, %A[%p, %np] : tensor<64x64xbf16>, !tessel.ref<2 x bf16>
  return
}

// CHECK-LABEL: func.func @scheduled
// CHECK-SAME: #tessel.schedule<kind = tma, tile = [128, 256, 64], stages = 4, warpgroups = 2, swizzle = 128>
func.func @scheduled() attributes {tessel.schedule = #tessel.schedule<kind = tma, tile = [128, 256, 64], stages = 4, warpgroups = 2, swizzle = 128>} {
  return
}

// The optional entries round-trip alone and together (the default cooperative / pingpong
// attribute has stream_k without cluster: its dumps used to fail to parse, `expected 'cluster'`).
// CHECK-LABEL: func.func @scheduled_optional
// CHECK-SAME: swizzle = 128, stream_k = 1>
// CHECK-SAME: swizzle = 64, raster = 16>
// CHECK-SAME: swizzle = 128, cluster = [2, 1], raster = 4>
// CHECK-SAME: swizzle = 32, cluster = [1, 2], raster = 16, stream_k = 1>
func.func @scheduled_optional() attributes {
    a = #tessel.schedule<kind = cooperative, tile = [128, 256, 64], stages = 4, warpgroups = 2, swizzle = 128, stream_k = 1>,
    b = #tessel.schedule<kind = pingpong, tile = [128, 128, 64], stages = 4, warpgroups = 2, swizzle = 64, raster = 16>,
    c = #tessel.schedule<kind = cooperative, tile = [128, 256, 64], stages = 3, warpgroups = 2, swizzle = 128, cluster = [2, 1], raster = 4>,
    d = #tessel.schedule<kind = pingpong, tile = [128, 128, 64], stages = 4, warpgroups = 2, swizzle = 32, cluster = [1, 2], raster = 16, stream_k = 1>} {
  return
}

// Reductions: one value per row (axis 1) or per column (axis 0), stored with {combine}.
// CHECK-LABEL: func.func @reduce
// CHECK: %[[R:.*]] = tessel.reduce %{{.*}}, amax, 1 : tensor<128x256xf32> -> tensor<128xf32>
// CHECK: tessel.store %[[R]], %{{.*}}[%{{.*}}] {combine} : tensor<128xf32>, !tessel.ref<1 x f32>
// CHECK: tessel.reduce %{{.*}}, sum, 0 : tensor<128x256xbf16> -> tensor<256xf32>
// CHECK: tessel.reduce %{{.*}}, max, 0
func.func @reduce(%y: tensor<128x256xf32>, %h: tensor<128x256xbf16>, %V: !tessel.ref<1 x f32>, %i: index) {
  %r = tessel.reduce %y, amax, 1 : tensor<128x256xf32> -> tensor<128xf32>
  tessel.store %r, %V[%i] {combine} : tensor<128xf32>, !tessel.ref<1 x f32>
  %s = tessel.reduce %h, sum, 0 : tensor<128x256xbf16> -> tensor<256xf32>
  tessel.store %s, %V[%i] {combine} : tensor<256xf32>, !tessel.ref<1 x f32>
  %m = tessel.reduce %y, max, 0 : tensor<128x256xf32> -> tensor<256xf32>
  tessel.store %m, %V[%i] {combine} : tensor<256xf32>, !tessel.ref<1 x f32>
  return
}

// fp8: refs, an e4m3 x e5m2 dot, casts both ways.
// CHECK-LABEL: func.func @fp8
// CHECK-SAME: !tessel.ref<2 x f8E4M3FN>, %{{.*}}: !tessel.ref<2 x f8E5M2>
func.func @fp8(%A: !tessel.ref<2 x f8E4M3FN>, %B: !tessel.ref<2 x f8E5M2>) attributes {tessel.kernel} {
  %p = tessel.program_id 0
  %a = tessel.load %A[%p, %p] : !tessel.ref<2 x f8E4M3FN> -> tensor<64x128xf8E4M3FN>
  %b = tessel.load %B[%p, %p] : !tessel.ref<2 x f8E5M2> -> tensor<64x128xf8E5M2>
  %bt = tessel.trans %b : tensor<64x128xf8E5M2> -> tensor<128x64xf8E5M2>
  %z = arith.constant dense<0.0> : tensor<64x64xf32>
  // CHECK: tessel.dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x128xf8E4M3FN>, tensor<128x64xf8E5M2> -> tensor<64x64xf32>
  %d = tessel.dot %a, %bt, %z : tensor<64x128xf8E4M3FN>, tensor<128x64xf8E5M2> -> tensor<64x64xf32>
  // CHECK: tessel.cast %{{.*}} : tensor<64x64xf32> -> tensor<64x64xf8E4M3FN>
  %q = tessel.cast %d : tensor<64x64xf32> -> tensor<64x64xf8E4M3FN>
  // CHECK: tessel.cast %{{.*}} : tensor<64x64xf8E4M3FN> -> tensor<64x64xbf16>
  %r = tessel.cast %q : tensor<64x64xf8E4M3FN> -> tensor<64x64xbf16>
  tessel.store %q, %A[%p, %p] : tensor<64x64xf8E4M3FN>, !tessel.ref<2 x f8E4M3FN>
  return
}
