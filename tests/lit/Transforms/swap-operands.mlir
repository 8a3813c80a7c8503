// RUN: tessel-opt %inputs/gemm_16x64_bias.mlir -tessel-swap-operands | FileCheck %s
// RUN: tessel-opt %inputs/gemm_16x64_bias.mlir -tessel-swap-operands="schedule=multistage" | FileCheck %s --check-prefix=KEEP
// RUN: tessel-opt %inputs/gemm_16x64_bias.mlir -tessel-swap-operands="cluster=2x1" | FileCheck %s --check-prefix=KEEP
// RUN: tessel-opt %inputs/gemm_16x64_bias.mlir -tessel-swap-operands -tessel-select-schedule="schedule=pingpong stages=-1" | FileCheck %s --check-prefix=PINGPONG
// RUN: tessel-opt %inputs/gemm_128x128.mlir -tessel-swap-operands | FileCheck %s --check-prefix=WIDE
// RUN: tessel-opt %s -split-input-file -tessel-swap-operands | FileCheck %s --check-prefix=RULES
// RUN: not tessel-opt %s -split-input-file -tessel-swap-operands -tessel-select-schedule 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not tessel-opt %s -split-input-file -tessel-swap-operands="schedule=warp_specialized" -tessel-select-schedule="schedule=warp_specialized" 2>&1 | FileCheck %s --check-prefix=WS

// The 16 x 64 tile is computed as its 64 x 16 transpose: B's tile is wgmma's
// A, A's tile transposed its B; the epilogue reads the result transposed back.
// CHECK:      %[[LOOP:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO:.*]]) -> (tensor<64x16xf32>) {
// CHECK:        %[[A:.*]] = tessel.load %arg0{{.*}} -> tensor<16x64xbf16>
// CHECK:        %[[B:.*]] = tessel.load %arg1{{.*}} -> tensor<64x64xbf16>
// CHECK:        %[[AT:.*]] = tessel.trans %[[A]] : tensor<16x64xbf16> -> tensor<64x16xbf16>
// CHECK:        tessel.dot %[[B]], %[[AT]], %{{.*}} : tensor<64x64xbf16>, tensor<64x16xbf16> -> tensor<64x16xf32>
// CHECK:      %[[ACC:.*]] = tessel.trans %[[LOOP]] : tensor<64x16xf32> -> tensor<16x64xf32>
// CHECK:      arith.addf %[[ACC]], %{{.*}} : tensor<16x64xf32>
// CHECK:      tessel.store {{.*}} : tensor<16x64xbf16>

// Rule S4: multistage takes the tile as it is; so does a cluster.
// KEEP: tessel.dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x64xbf16>, tensor<64x64xbf16> -> tensor<16x64xf32>
// KEEP-NOT: tensor<64x16xf32>

// PINGPONG: tessel.schedule = #tessel.schedule<kind = pingpong, tile = [64, 16, 64], stages = 19

// A tile of 64 rows or more is unchanged.
// WIDE-NOT: tessel.trans %{{.*}} : tensor<128x128xf32>
// WIDE: tessel.dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>

// -----

// Rule S3: a reduction keeps the tile; tessel-select-schedule then names the rules.
// ERR: error: BM must be 64, 128, 192 or 256, got 16 (tessel-swap-operands computes a tile of 8-56 rows, a multiple of 8, as its transpose when BN is a multiple of 64 up to 256, with one dot, no reduction, no cluster and a schedule other than multistage: docs/small-m.md)
// RULES-LABEL: func.func @reduces
// RULES: tessel.dot {{.*}} -> tensor<16x64xf32>
func.func @reduces(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %V: !tessel.ref<1 x f32>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %p0 = tessel.program_id 0
  %p1 = tessel.program_id 1
  %m = arith.muli %p0, %c16 : index
  %n = arith.muli %p1, %c64 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<16x64xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<16x64xf32>) {
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x bf16> -> tensor<16x64xbf16>
    %b = tessel.load %B[%n, %k] : !tessel.ref<2 x bf16> -> tensor<64x64xbf16>
    %bt = tessel.trans %b : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<16x64xbf16>, tensor<64x64xbf16> -> tensor<16x64xf32>
    scf.yield %d : tensor<16x64xf32>
  }
  %s = tessel.reduce %acc, sum, 1 : tensor<16x64xf32> -> tensor<16xf32>
  tessel.store %s, %V[%m] {combine} : tensor<16xf32>, !tessel.ref<1 x f32>
  return
}

// -----

// Rule S1: BN must be a multiple of 64 (the transposed tile's rows).
// RULES-LABEL: func.func @narrow
// RULES: tessel.dot {{.*}} -> tensor<16x48xf32>
func.func @narrow(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c48 = arith.constant 48 : index
  %c64 = arith.constant 64 : index
  %p0 = tessel.program_id 0
  %p1 = tessel.program_id 1
  %m = arith.muli %p0, %c16 : index
  %n = arith.muli %p1, %c48 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<16x48xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<16x48xf32>) {
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x bf16> -> tensor<16x64xbf16>
    %b = tessel.load %B[%n, %k] : !tessel.ref<2 x bf16> -> tensor<48x64xbf16>
    %bt = tessel.trans %b : tensor<48x64xbf16> -> tensor<64x48xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<16x64xbf16>, tensor<64x48xbf16> -> tensor<16x48xf32>
    scf.yield %d : tensor<16x48xf32>
  }
  %r = tessel.cast %acc : tensor<16x48xf32> -> tensor<16x48xbf16>
  tessel.store %r, %C[%m, %n] : tensor<16x48xbf16>, !tessel.ref<2 x bf16>
  return
}

// -----

// A rule about the transposed tile names it: warp_specialized holds at most 192 rows, and the
// kernel computes the 256 x 16 transpose of this 16 x 256 tile.
// RULES-LABEL: func.func @wide_n
// RULES: tessel.dot {{.*}} -> tensor<256x16xf32>
// WS: error: schedule 'warp_specialized' needs BM <= 192 (one consumer warpgroup per 64 rows), got 256
// WS: remark: the kernel computes the 256x16 transpose of the program's 16x256 tile (tessel-swap-operands, docs/small-m.md): the rule above is about that tile
func.func @wide_n(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %p0 = tessel.program_id 0
  %p1 = tessel.program_id 1
  %m = arith.muli %p0, %c16 : index
  %n = arith.muli %p1, %c256 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<16x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<16x256xf32>) {
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x bf16> -> tensor<16x64xbf16>
    %b = tessel.load %B[%n, %k] : !tessel.ref<2 x bf16> -> tensor<256x64xbf16>
    %bt = tessel.trans %b : tensor<256x64xbf16> -> tensor<64x256xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<16x64xbf16>, tensor<64x256xbf16> -> tensor<16x256xf32>
    scf.yield %d : tensor<16x256xf32>
  }
  %r = tessel.cast %acc : tensor<16x256xf32> -> tensor<16x256xbf16>
  tessel.store %r, %C[%m, %n] : tensor<16x256xbf16>, !tessel.ref<2 x bf16>
  return
}

// -----

// Rule S5: an MN-major operand (here A, tessel.contiguous_dim = 0) keeps the tile.
// RULES-LABEL: func.func @mn_major
// RULES: tessel.dot {{.*}} -> tensor<16x64xf32>
func.func @mn_major(%A: !tessel.ref<2 x bf16> {tessel.contiguous_dim = 0 : i64}, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %p0 = tessel.program_id 0
  %p1 = tessel.program_id 1
  %m = arith.muli %p0, %c16 : index
  %n = arith.muli %p1, %c64 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<16x64xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<16x64xf32>) {
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x bf16> -> tensor<16x64xbf16>
    %b = tessel.load %B[%n, %k] : !tessel.ref<2 x bf16> -> tensor<64x64xbf16>
    %bt = tessel.trans %b : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<16x64xbf16>, tensor<64x64xbf16> -> tensor<16x64xf32>
    scf.yield %d : tensor<16x64xf32>
  }
  %r = tessel.cast %acc : tensor<16x64xf32> -> tensor<16x64xbf16>
  tessel.store %r, %C[%m, %n] : tensor<16x64xbf16>, !tessel.ref<2 x bf16>
  return
}
