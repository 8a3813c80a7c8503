// Rule 5 of tessel-select-schedule: a CTA cluster multicasts one operand tile
// to the two CTAs of a pair (2x1: B, to program_id(0) 2i and 2i+1; 1x2: A,
// along program_id(1)), so that tile's offsets must not depend on the program
// id the pair differs in. @grouped (a grouped GEMM) reads its B's group from a
// table per row of tiles (tessel.load_element at program_id(0)): 1x2 is fine,
// 2x1 is not. @skewed offsets A's rows by program_id(1): the other way round.
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=cooperative cluster=1x2" 2>&1 | FileCheck %s --check-prefix=PAIRN
// RUN: not tessel-opt %s -split-input-file -tessel-select-schedule="schedule=pingpong cluster=2x1" 2>&1 | FileCheck %s --check-prefix=PAIRM

// PAIRN-DAG: func.func @grouped({{.*}}cluster = [1, 2]
// PAIRN-DAG: error: cluster 1x2 multicasts A's tile to the two CTAs of a pair along program_id(1), but its offsets depend on program_id(1): the two CTAs would need different tiles (use cluster 2x1 or 1x1)
// PAIRM-DAG: error: cluster 2x1 multicasts B's tile to the two CTAs of a pair along program_id(0), but its offsets depend on program_id(0): the two CTAs would need different tiles (use cluster 1x2 or 1x1)
// PAIRM-DAG: func.func @skewed({{.*}}cluster = [2, 1]

func.func @grouped(%A: !tessel.ref<2 x bf16>, %W: !tessel.ref<3 x bf16>, %G: !tessel.ref<1 x i32>, %C: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
  %pm = tessel.program_id 0
  %c128 = arith.constant 128 : index
  %m = arith.muli %pm, %c128 : index
  %pn = tessel.program_id 1
  %n = arith.muli %pn, %c128 : index
  %g = tessel.load_element %G[%pm] : !tessel.ref<1 x i32> -> i32
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %c64 = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %gi = arith.index_cast %g : i32 to index
    %b = tessel.load %W[%gi, %n, %k] : !tessel.ref<3 x bf16> -> tensor<128x64xbf16>
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %bt = tessel.trans %b : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %r = tessel.cast %acc : tensor<128x128xf32> -> tensor<128x128xbf16>
  tessel.store %r, %C[%m, %n] : tensor<128x128xbf16>, !tessel.ref<2 x bf16>
  return
}

// -----

func.func @skewed(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %C: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
  %pm = tessel.program_id 0
  %c128 = arith.constant 128 : index
  %m = arith.muli %pm, %c128 : index
  %pn = tessel.program_id 1
  %n = arith.muli %pn, %c128 : index
  %skew = arith.addi %m, %pn : index
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %c64 = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %b = tessel.load %B[%n, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %a = tessel.load %A[%skew, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %bt = tessel.trans %b : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %r = tessel.cast %acc : tensor<128x128xf32> -> tensor<128x128xbf16>
  tessel.store %r, %C[%m, %n] : tensor<128x128xbf16>, !tessel.ref<2 x bf16>
  return
}
