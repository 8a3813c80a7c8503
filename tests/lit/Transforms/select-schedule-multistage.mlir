// Schedule `multistage`: its tile rules (SelectSchedule.cpp, M1-M5).
// RUN: tessel-opt %s -split-input-file -tessel-select-schedule="schedule=multistage" -verify-diagnostics | FileCheck %s
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=multistage stages=2" 2>&1 | FileCheck %s --check-prefix=S2
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=multistage stages=1" 2>&1 | FileCheck %s --check-prefix=S1
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=multistage stages=5" 2>&1 | FileCheck %s --check-prefix=S5

// M5: explicit stages (the error cases further down make every run but the
// first exit non-zero, hence `not`); 1 is not a pipeline; 5 x 48 KiB does not fit.
// S2: #tessel.schedule<kind = multistage, tile = [128, 256, 64], stages = 2, warpgroups = 2, swizzle = 128>
// S1: schedule 'multistage' needs at least 2 stages, got 1
// S5: schedule 'multistage' with 5 stages of 49152 bytes does not fit in 227 KiB of shared memory (at most 4 stages)

// 128x256x64: 8 warps of 64x64, 4 stages of 48 KiB by default, 128-byte rows.
// CHECK-LABEL: func.func @gemm_128x256x64
// CHECK-SAME: tessel.schedule = #tessel.schedule<kind = multistage, tile = [128, 256, 64], stages = 4, warpgroups = 2, swizzle = 128>
func.func @gemm_128x256x64(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %cbk = arith.constant 64 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %cbk iter_args(%c = %zero) -> (tensor<128x256xf32>) {
    %a = tessel.load %A[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %b = tessel.load %B[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<256x64xbf16>
    %bt = tessel.trans %b : tensor<256x64xbf16> -> tensor<64x256xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<128x64xbf16>, tensor<64x256xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  tessel.store %acc, %C[%c0, %c0] : tensor<128x256xf32>, !tessel.ref<2 x f32>
  return
}

// -----

// 128x128x32: 4 warps of 64x64 (one warpgroup), 64-byte rows.
// CHECK-LABEL: func.func @gemm_128x128x32_f16
// CHECK-SAME: tessel.schedule = #tessel.schedule<kind = multistage, tile = [128, 128, 32], stages = 4, warpgroups = 1, swizzle = 64>
func.func @gemm_128x128x32_f16(%A: !tessel.ref<2 x f16>, %B: !tessel.ref<2 x f16>, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %cbk = arith.constant 32 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x f16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %cbk iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %a = tessel.load %A[%c0, %k] : !tessel.ref<2 x f16> -> tensor<128x32xf16>
    %b = tessel.load %B[%c0, %k] : !tessel.ref<2 x f16> -> tensor<128x32xf16>
    %bt = tessel.trans %b : tensor<128x32xf16> -> tensor<32x128xf16>
    %d = tessel.dot %a, %bt, %c : tensor<128x32xf16>, tensor<32x128xf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tessel.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, !tessel.ref<2 x f32>
  return
}

// -----

// 64x32x32: 2 warps of 32x32.
// CHECK-LABEL: func.func @gemm_64x32x32
// CHECK-SAME: tessel.schedule = #tessel.schedule<kind = multistage, tile = [64, 32, 32], stages = 4, warpgroups = 1, swizzle = 64>
func.func @gemm_64x32x32(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %cbk = arith.constant 32 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<64x32xf32>
  %acc = scf.for %k = %c0 to %K step %cbk iter_args(%c = %zero) -> (tensor<64x32xf32>) {
    %a = tessel.load %A[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<64x32xbf16>
    %b = tessel.load %B[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<32x32xbf16>
    %bt = tessel.trans %b : tensor<32x32xbf16> -> tensor<32x32xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<64x32xbf16>, tensor<32x32xbf16> -> tensor<64x32xf32>
    scf.yield %d : tensor<64x32xf32>
  }
  tessel.store %acc, %C[%c0, %c0] : tensor<64x32xf32>, !tessel.ref<2 x f32>
  return
}

// -----

// M3
func.func @bk16(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %cbk = arith.constant 16 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %cbk iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %a = tessel.load %A[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x16xbf16>
    %b = tessel.load %B[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x16xbf16>
    %bt = tessel.trans %b : tensor<128x16xbf16> -> tensor<16x128xbf16>
    // expected-error @+1 {{schedule 'multistage' needs BK = 32 or 64 (64- or 128-byte swizzled rows), got BK = 16}}
    %d = tessel.dot %a, %bt, %c : tensor<128x16xbf16>, tensor<16x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tessel.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, !tessel.ref<2 x f32>
  return
}

// -----

// M4: warp tiles
func.func @bm48(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %cbk = arith.constant 32 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<48x128xf32>
  %acc = scf.for %k = %c0 to %K step %cbk iter_args(%c = %zero) -> (tensor<48x128xf32>) {
    %a = tessel.load %A[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<48x32xbf16>
    %b = tessel.load %B[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x32xbf16>
    %bt = tessel.trans %b : tensor<128x32xbf16> -> tensor<32x128xbf16>
    // expected-error @+1 {{schedule 'multistage' needs BM and BN to be multiples of 32 (the warp tile), got 48x128}}
    %d = tessel.dot %a, %bt, %c : tensor<48x32xbf16>, tensor<32x128xbf16> -> tensor<48x128xf32>
    scf.yield %d : tensor<48x128xf32>
  }
  tessel.store %acc, %C[%c0, %c0] : tensor<48x128xf32>, !tessel.ref<2 x f32>
  return
}

// -----

// M4: at most 8 warps
func.func @warps16(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %cbk = arith.constant 32 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<256x256xf32>
  %acc = scf.for %k = %c0 to %K step %cbk iter_args(%c = %zero) -> (tensor<256x256xf32>) {
    %a = tessel.load %A[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<256x32xbf16>
    %b = tessel.load %B[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<256x32xbf16>
    %bt = tessel.trans %b : tensor<256x32xbf16> -> tensor<32x256xbf16>
    // expected-error @+1 {{schedule 'multistage' needs at most 8 warps; tile 256x256 has 16 warps of 64x64}}
    %d = tessel.dot %a, %bt, %c : tensor<256x32xbf16>, tensor<32x256xbf16> -> tensor<256x256xf32>
    scf.yield %d : tensor<256x256xf32>
  }
  tessel.store %acc, %C[%c0, %c0] : tensor<256x256xf32>, !tessel.ref<2 x f32>
  return
}

// -----

// M1: A loaded K x M and transposed for the dot (an MN-major program) is accepted.
// CHECK-LABEL: func.func @m_major_a
// CHECK-SAME: tessel.schedule = #tessel.schedule<kind = multistage, tile = [128, 128, 32], stages = 4, warpgroups = 1, swizzle = 64>
func.func @m_major_a(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %cbk = arith.constant 32 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %cbk iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %a0 = tessel.load %A[%k, %c0] : !tessel.ref<2 x bf16> -> tensor<32x128xbf16>
    %a = tessel.trans %a0 : tensor<32x128xbf16> -> tensor<128x32xbf16>
    %b = tessel.load %B[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x32xbf16>
    %bt = tessel.trans %b : tensor<128x32xbf16> -> tensor<32x128xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<128x32xbf16>, tensor<32x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tessel.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, !tessel.ref<2 x f32>
  return
}

// -----

// M1: an MN-major B (tessel.contiguous_dim = 0: N has unit stride) is stored as BK rows of BN
// elements, which the swizzle needs to be 32 or a multiple of 64.
func.func @n_major_b_96(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16> {tessel.contiguous_dim = 0 : i64}, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %cbk = arith.constant 32 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<128x96xf32>
  %acc = scf.for %k = %c0 to %K step %cbk iter_args(%c = %zero) -> (tensor<128x96xf32>) {
    %a = tessel.load %A[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x32xbf16>
    %b = tessel.load %B[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<96x32xbf16>
    %bt = tessel.trans %b : tensor<96x32xbf16> -> tensor<32x96xbf16>
    // expected-error @+1 {{schedule 'multistage' loads an MN-major B tile (tessel.contiguous_dim) as rows of BN elements: it must be 32 or a multiple of 64, got 96}}
    %d = tessel.dot %a, %bt, %c : tensor<128x32xbf16>, tensor<32x96xbf16> -> tensor<128x96xf32>
    scf.yield %d : tensor<128x96xf32>
  }
  tessel.store %acc, %C[%c0, %c0] : tensor<128x96xf32>, !tessel.ref<2 x f32>
  return
}
