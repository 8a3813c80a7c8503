// REQUIRES: ptxas
// Compile-only: a batched GEMM (matrix program_id(2) of rank-3 tensors) under
// every schedule. The operand loads are 3-d TMA copies whose outermost
// coordinate is the batch index; the warp-specialized schedules store rank-3 C
// with 3-d TMA boxes (rows past M clipped at the matrix, not written into the
// next one), tma from registers.
// RUN: rm -rf %t
// RUN: tessel-compile %inputs/batched_gemm_128x128.mlir --schedule tma --dump-dir %t/tma
// RUN: FileCheck %s --implicit-check-not=cp.async.bulk.tensor.3d.global --input-file=%t/tma/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/tma/ptxas.log
// RUN: FileCheck %s --check-prefix=PARAMS --input-file=%t/tma/10-convert-hopper-to-nvvm.mlir
// RUN: tessel-compile %inputs/batched_gemm_128x128.mlir --schedule cooperative --dump-dir %t/coop
// RUN: FileCheck %s --check-prefixes=CHECK --input-file=%t/coop/gemm.ptx
// RUN: FileCheck %s --check-prefixes=STORE --input-file=%t/coop/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/coop/ptxas.log
// RUN: tessel-compile %inputs/batched_gemm_128x128.mlir --schedule pingpong --cluster 2x1 --dump-dir %t/pp
// RUN: FileCheck %s --check-prefixes=CHECK,MC --input-file=%t/pp/gemm.ptx
// RUN: FileCheck %s --check-prefixes=STORE --input-file=%t/pp/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/pp/ptxas.log
// RUN: tessel-compile %inputs/batched_gemm_128x128.mlir --schedule multistage --dump-dir %t/ms
// RUN: FileCheck %s --check-prefix=MS --implicit-check-not=cp.async.bulk.tensor --input-file=%t/ms/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/ms/ptxas.log

// PARAMS: "tma:0:64x128:128:r", "tma:1:64x128:128:r"
// CHECK: cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes{{.*}}[{{.*}}, {{{.*}}, {{.*}}, {{.*}}}]
// MC: cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster
// CHECK-NOT: cp.async.bulk.tensor.2d
// STORE: cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [{{.*}}, {{{.*}}, {{.*}}, {{.*}}}], [{{.*}}]
// multistage: the batch offset moves the pointer; no TMA.
// MS-DAG: %ctaid.z
// MS-DAG: cp.async.cg.shared.global
// LOG: 0 bytes spill stores, 0 bytes spill loads
// LOG-NOT: C7508
// LOG-NOT: C751
