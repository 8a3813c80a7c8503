// REQUIRES: ptxas
// Compile-only: two-CTA clusters with TMA multicast on the persistent schedules.
// RUN: rm -rf %t && tessel-compile %inputs/gemm_128x256.mlir --schedule cooperative --cluster 2x1 --dump-dir %t/c21
// RUN: FileCheck %s --check-prefixes=CHECK,B --input-file=%t/c21/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/c21/ptxas.log
// RUN: FileCheck %s --check-prefix=NOREL --input-file=%t/c21/gemm.ptx
// RUN: FileCheck %s --check-prefix=SCHED --input-file=%t/c21/02-select-schedule.mlir
// RUN: tessel-compile %inputs/gemm_128x128.mlir --schedule pingpong --cluster 1x2 --dump-dir %t/p12
// RUN: FileCheck %s --input-file=%t/p12/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/p12/ptxas.log
// RUN: not tessel-compile %inputs/gemm_128x256.mlir --schedule warp_specialized --cluster 2x1 --dump-dir %t/bad 2>&1 | FileCheck %s --check-prefix=ERR

// SCHED: cluster = [2, 1]>
// The cluster directive; barriers initialised before any peer touches them.
// CHECK: .explicitcluster
// CHECK: .reqnctapercluster 2, 1, 1
// CHECK: %cluster_ctarank
// CHECK: fence.mbarrier_init.release.cluster;
// CHECK: barrier.cluster.arrive.release;
// CHECK-NEXT: barrier.cluster.wait.acquire;
// Half of the shared tile per CTA, multicast to both; the other operand plain.
// CHECK-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster
// CHECK-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [
// Stages are released in every CTA of the cluster.
// CHECK-DAG: mapa.shared::cluster.u32
// CHECK-DAG: mbarrier.arrive.shared::cluster.b64
// The remote arrives keep the default .release.cta (.release.cluster costs a
// MEMBAR.ALL.GPU per arrive).
// NOREL-NOT: mbarrier.arrive.release.cluster
// B-DAG: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16

// LOG: 0 bytes spill stores, 0 bytes spill loads
// LOG-NOT: C7508
// LOG-NOT: C751

// ERR: cluster 2x1 needs a persistent schedule (cooperative or pingpong), got 'warp_specialized'
