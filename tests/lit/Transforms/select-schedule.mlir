// RUN: tessel-opt %s -split-input-file -tessel-select-schedule -verify-diagnostics | FileCheck %s
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=cooperative stages=3" 2>/dev/null | FileCheck %s --check-prefix=COOP
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=pingpong" 2>&1 | FileCheck %s --check-prefix=PINGPONG
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=cooperative raster-group=16" 2>/dev/null | FileCheck %s --check-prefix=RASTER
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="raster-group=-1" 2>&1 | FileCheck %s --check-prefix=BADRASTER
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=cooperative decomposition=data-parallel" 2>/dev/null | FileCheck %s --check-prefix=DP
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=cooperative decomposition=stream-k" 2>/dev/null | FileCheck %s --check-prefix=SK
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=cooperative cluster=2x1" 2>/dev/null | FileCheck %s --check-prefix=CLUSTERDP
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=tma decomposition=stream-k" 2>&1 | FileCheck %s --check-prefix=BADSK
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="decomposition=sideways" 2>&1 | FileCheck %s --check-prefix=BADDECOMP
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=cooperative stages=1" 2>&1 | FileCheck %s --check-prefix=ONESTAGE
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=pingpong stages=6" 2>/dev/null | FileCheck %s --check-prefix=SIXSTAGES
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=pingpong stages=7" 2>&1 | FileCheck %s --check-prefix=SEVENSTAGES
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=pingpong stages=-1" 2>/dev/null | FileCheck %s --check-prefix=MAXSTAGES
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=pingpong stages=-2" 2>&1 | FileCheck %s --check-prefix=BADSTAGES
// RUN: tessel-opt %inputs/gemm_256x192.mlir -tessel-select-schedule="schedule=cooperative" | FileCheck %s --check-prefix=COOP256
// RUN: not tessel-opt %inputs/gemm_256x192.mlir -tessel-select-schedule="schedule=cooperative stages=4" 2>&1 | FileCheck %s --check-prefix=COOP256S4
// RUN: not tessel-opt %inputs/gemm_256x192.mlir -tessel-select-schedule="schedule=warp_specialized" 2>&1 | FileCheck %s --check-prefix=WS256
// RUN: sed 's/192/256/g' %inputs/gemm_256x192.mlir | not tessel-opt -tessel-select-schedule="schedule=cooperative" 2>&1 | FileCheck %s --check-prefix=COOP256N
// RUN: sed 's/tensor<128x/tensor<192x/g' %inputs/gemm_128x256.mlir | not tessel-opt -tessel-select-schedule="schedule=warp_specialized" 2>&1 | FileCheck %s --check-prefix=WS512
// RUN: sed 's/tensor<128x/tensor<256x/g' %inputs/gemm_128x256.mlir | not tessel-opt -tessel-select-schedule="schedule=tma" 2>&1 | FileCheck %s --check-prefix=TMA512
// RUN: sed 's/tensor<128x/tensor<192x/g' %inputs/gemm_128x192.mlir | tessel-opt -tessel-select-schedule="schedule=warp_specialized" | FileCheck %s --check-prefix=WS512OK

// Cooperative with a 1x1 cluster takes stream-K by default (the kernel decides
// per launch whether it pays).
// COOP: tessel.schedule = #tessel.schedule<kind = cooperative, tile = [128, 256, 64], stages = 3, warpgroups = 2, swizzle = 128, stream_k = 1>
// DP: tessel.schedule = #tessel.schedule<kind = cooperative, tile = [128, 256, 64], stages = 4, warpgroups = 2, swizzle = 128>
// SK: tessel.schedule = #tessel.schedule<kind = cooperative, tile = [128, 256, 64], stages = 4, warpgroups = 2, swizzle = 128, stream_k = 1>
// CLUSTERDP: tessel.schedule = #tessel.schedule<kind = cooperative, tile = [128, 256, 64], stages = 4, warpgroups = 2, swizzle = 128, cluster = [2, 1]>
// BADSK: decomposition stream-k needs schedule 'cooperative' or 'pingpong' with a 1x1 cluster, got 'tma' with cluster 1x1
// BADDECOMP: unknown decomposition 'sideways' (expected auto, data-parallel or stream-k)
// ONESTAGE: schedule 'cooperative' needs at least 2 stages (a stage is released one k-step late), got 1
// A 128x128 tile takes 4 stages of 32 KiB by default, and up to 6 when asked
// for; the error names what fits, not the default.
// SIXSTAGES: #tessel.schedule<kind = pingpong, tile = [128, 128, 64], stages = 6,
// SEVENSTAGES: 7 stages of 32768 bytes do not fit in shared memory (at most 6 beside the epilogue's staging buffers)
// stages = -1 (ts::stages_max): the deepest ring that fits.
// MAXSTAGES: #tessel.schedule<kind = pingpong, tile = [128, 128, 64], stages = 6,
// BADSTAGES: stages must be at least 2, 0 (tessel's choice) or -1 (as many as fit), got -2
// The raster group is printed only when it is not the default.
// RASTER: tessel.schedule = #tessel.schedule<kind = cooperative, tile = [128, 256, 64], stages = 4, warpgroups = 2, swizzle = 128, raster = 16, stream_k = 1>
// BADRASTER: option raster-group (options::raster_group) must be in [0, 1024] (0: the default, 8, or 16 for tiles of at most 64 rows), got -1
// Cooperative 256-row tiles: two consumer warpgroups of 128 rows, BN <= 192
// (192 accumulator registers per thread); 3 stages of 56 KiB fit beside the
// staging buffers. warp_specialized keeps one consumer per 64 rows.
// COOP256: tessel.schedule = #tessel.schedule<kind = cooperative, tile = [256, 192, 64], stages = 3, warpgroups = 2, swizzle = 128, stream_k = 1>
// COOP256S4: 4 stages of 57344 bytes do not fit in shared memory (at most 3 beside the epilogue's staging buffers)
// WS256: schedule 'warp_specialized' needs BM <= 192 (one consumer warpgroup per 64 rows), got 256
// The same kernel with a 256x256 tile (line 17):
// COOP256N: schedule 'cooperative' with BM = 256 keeps 128 rows per consumer warpgroup, BN f32 registers per thread: BN must be at most 192, got 256
// Rule 3b: 512 threads (three consumers and the producer; tma's four consumers) leave ptxas 128
// registers per thread, too few beside 128 accumulators (ptxas C7602); 96 fit.
// WS512: schedule 'warp_specialized' with BM = 192 runs 3 consumer warpgroups and a producer: 512 threads, which leave ptxas 128 registers per thread; BN = 256 takes 128 of them: at most 96 (BN <= 192), or BM <= 128
// TMA512: schedule 'tma' with BM = 256 runs 4 consumer warpgroups: 512 threads, which leave ptxas 128 registers per thread; BN = 256 takes 128 of them: at most 96 (BN <= 192), or BM <= 192
// WS512OK: #tessel.schedule<kind = warp_specialized, tile = [192, 192, 64]
// PINGPONG: schedule 'pingpong' keeps a whole tile per consumer warpgroup, (BM / 64) x BN / 2 f32 registers per thread: at most 192 (128 x 192, 192 x 128, 64 x 256), got 128 x 256

// CHECK-LABEL: func.func @gemm
// CHECK-SAME: tessel.schedule = #tessel.schedule<kind = tma, tile = [128, 256, 64], stages = 4, warpgroups = 2, swizzle = 128>
func.func @gemm(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<128x256xf32>) {
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

// An elementwise kernel gets no schedule.
// CHECK-LABEL: func.func @axpy
// CHECK-NOT: tessel.schedule
func.func @axpy(%X: !tessel.ref<1 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %x = tessel.load %X[%c0] : !tessel.ref<1 x f32> -> tensor<1024xf32>
  tessel.store %x, %X[%c0] : tensor<1024xf32>, !tessel.ref<1 x f32>
  return
}

// -----

// fp8: BK * 1 byte must be 128 (wgmma k32 steps of a 128-byte swizzle row).
func.func @fp8_bk64(%A: !tessel.ref<2 x f8E4M3FN>, %B: !tessel.ref<2 x f8E5M2>, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x f8E4M3FN>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %a = tessel.load %A[%c0, %k] : !tessel.ref<2 x f8E4M3FN> -> tensor<128x64xf8E4M3FN>
    %b = tessel.load %B[%c0, %k] : !tessel.ref<2 x f8E5M2> -> tensor<128x64xf8E5M2>
    %bt = tessel.trans %b : tensor<128x64xf8E5M2> -> tensor<64x128xf8E5M2>
    // expected-error @+1 {{schedule 'tma' needs BK * sizeof(element) == 128 bytes (BK = 128 for 'f8E4M3FN'), got BK = 64}}
    %d = tessel.dot %a, %bt, %c : tensor<128x64xf8E4M3FN>, tensor<64x128xf8E5M2> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tessel.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, !tessel.ref<2 x f32>
  return
}

// -----

func.func @bk32(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c32 iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %a = tessel.load %A[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x32xbf16>
    %b = tessel.load %B[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x32xbf16>
    %bt = tessel.trans %b : tensor<128x32xbf16> -> tensor<32x128xbf16>
    // expected-error @+1 {{schedule 'tma' needs BK * sizeof(element) == 128 bytes (BK = 64 for 'bf16'), got BK = 32}}
    %d = tessel.dot %a, %bt, %c : tensor<128x32xbf16>, tensor<32x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tessel.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, !tessel.ref<2 x f32>
  return
}

// -----

func.func @not_carried(%A: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %a = tessel.load %A[%c0, %c0] : !tessel.ref<2 x bf16> -> tensor<64x64xbf16>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  // expected-error @+1 {{tessel.dot must sit directly in a top-level loop}}
  %d = tessel.dot %a, %a, %zero : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  tessel.store %d, %C[%c0, %c0] : tensor<64x64xf32>, !tessel.ref<2 x f32>
  return
}

// -----

// CHECK-LABEL: func.func @gemm_128x128
// CHECK-SAME: tessel.schedule = #tessel.schedule<kind = tma, tile = [128, 128, 64], stages = 4, warpgroups = 2, swizzle = 128>
func.func @gemm_128x128(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %a = tessel.load %A[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %b = tessel.load %B[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %bt = tessel.trans %b : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tessel.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, !tessel.ref<2 x f32>
  return
}

// -----

// What the kernel builder has no lowering for is the user's error, at the
// scheduling step (rule 0): a loop in a kernel without a dot,
func.func @elementwise_loop(%X: !tessel.ref<1 x f32>, %Y: !tessel.ref<1 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant dense<0.0> : tensor<64xf32>
  // expected-error @+1 {{a ts::range loop is built only as a GEMM's mainloop (the loop around ts::dot); a kernel without a ts::dot (an elementwise kernel) has none}}
  %s = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (tensor<64xf32>) {
    %x = tessel.load %X[%i] : !tessel.ref<1 x f32> -> tensor<64xf32>
    %y = arith.addf %acc, %x : tensor<64xf32>
    scf.yield %y : tensor<64xf32>
  }
  tessel.store %s, %Y[%c0] : tensor<64xf32>, !tessel.ref<1 x f32>
  return
}

// -----

// a second loop beside a GEMM's mainloop,
func.func @second_loop(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %a = tessel.load %A[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %b = tessel.load %B[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %bt = tessel.trans %b : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  // expected-error @+1 {{a ts::range loop is built only as a GEMM's mainloop (the loop around ts::dot); this kernel has a second loop}}
  %twice = scf.for %i = %c0 to %K step %c1 iter_args(%t = %acc) -> (tensor<128x128xf32>) {
    %u = arith.addf %t, %t : tensor<128x128xf32>
    scf.yield %u : tensor<128x128xf32>
  }
  tessel.store %twice, %C[%c0, %c0] : tensor<128x128xf32>, !tessel.ref<2 x f32>
  return
}

// -----

// and a mainloop that carries a value besides the accumulator (a scalar
// reassigned in the loop).
func.func @carried_scalar(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %w0: f32, %C: !tessel.ref<2 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  // expected-error @+1 {{'scf.for' op the mainloop may carry only the accumulator (acc += ts::dot(...)): another value (a tile, scalar or index) reassigned in the loop is not built yet; compute it after the loop}}
  %acc:2 = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero, %w = %w0) -> (tensor<128x128xf32>, f32) {
    %a = tessel.load %A[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %b = tessel.load %B[%c0, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %bt = tessel.trans %b : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    %w2 = arith.mulf %w, %w0 : f32
    scf.yield %d, %w2 : tensor<128x128xf32>, f32
  }
  tessel.store %acc#0, %C[%c0, %c0] : tensor<128x128xf32>, !tessel.ref<2 x f32>
  return
}
