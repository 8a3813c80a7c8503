// REQUIRES: ptxas
// Compile-only: the warp-specialized schedules to cubin with ptxas, no GPU.
// RUN: rm -rf %t && tessel-compile %inputs/gemm_128x256.mlir --schedule warp_specialized --dump-dir %t/ws
// RUN: FileCheck %s --check-prefixes=CHECK,WS --input-file=%t/ws/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/ws/ptxas.log
// RUN: tessel-compile %inputs/gemm_128x256.mlir --schedule cooperative --dump-dir %t/coop
// RUN: FileCheck %s --check-prefixes=CHECK,PERSISTENT --input-file=%t/coop/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/coop/ptxas.log
// The raster group (options::raster_group) reaches the schedule and changes the tile order.
// RUN: tessel-compile %inputs/gemm_128x256.mlir --schedule cooperative --raster-group 16 --dump-dir %t/r16
// RUN: FileCheck %s --check-prefix=RASTER --input-file=%t/r16/02-select-schedule.mlir
// RUN: not diff -q %t/coop/gemm.ptx %t/r16/gemm.ptx
// RUN: tessel-compile %inputs/gemm_128x128.mlir --schedule pingpong --dump-dir %t/pingpong
// RUN: FileCheck %s --check-prefixes=CHECK,PERSISTENT,PINGPONG --input-file=%t/pingpong/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/pingpong/ptxas.log

// Parameters: 3 tensors x (pointer, 2 sizes, 2 strides), TMA descriptors of
// A, B and the TMA-store descriptor of C, C's TMA-usable flag, and for the
// persistent schedules the user's grid.
// CHECK: .param .align 64 .b8 gemm_param_17[128],
// CHECK-NEXT: .param .u64 gemm_param_18
// PERSISTENT: .param .u64 gemm_param_21
// A producer warpgroup and two consumer warpgroups; ptxas honours setmaxnreg
// only with .minnctapersm (or .maxnreg).
// CHECK: .reqntid 384, 1, 1
// CHECK: .minnctapersm 1
// CHECK: mbarrier.init.shared::cta.b64
// CHECK-DAG: setmaxnreg.dec.sync.aligned.u32 40;
// CHECK-DAG: setmaxnreg.inc.sync.aligned.u32 232;
// CHECK-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// WS-DAG: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// PINGPONG-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK-DAG: mbarrier.arrive.shared::cta.b64
// Pingpong consumers take turns through two named barriers.
// PINGPONG-DAG: bar.arrive %r{{[0-9]+}}, 256;
// PINGPONG-DAG: bar.sync %r{{[0-9]+}}, 256;
// The TMA-store epilogue: stmatrix into the staging chunk, proxy fence, a
// named barrier per consumer warpgroup, the bulk tensor store.
// CHECK-DAG: stmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-DAG: fence.proxy.async.shared::cta;
// CHECK-DAG: bar.sync %r{{[0-9]+}}, 128;
// CHECK-DAG: cp.async.bulk.tensor.2d.global.shared::cta.bulk_group
// CHECK-DAG: cp.async.bulk.commit_group;
// CHECK-DAG: cp.async.bulk.wait_group.read 1;
// CHECK-DAG: cp.async.bulk.wait_group 0;
// Persistent: the tile loop strides by the launched grid.
// PERSISTENT-DAG: %nctaid.x

// RASTER: raster = 16, stream_k = 1>
// LOG: 0 bytes spill stores, 0 bytes spill loads
// LOG-NOT: C7508
// LOG-NOT: C7514
// LOG-NOT: C7515
// LOG-NOT: C7517
// LOG-NOT: C7519
