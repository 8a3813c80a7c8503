// REQUIRES: ptxas
// Compile-only: the warp-specialized schedules to cubin with ptxas, no GPU.
// RUN: rm -rf %t && tessel-compile %inputs/gemm_128x256.mlir --schedule warp_specialized --dump-dir %t/ws
// RUN: FileCheck %s --input-file=%t/ws/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/ws/ptxas.log
// RUN: tessel-compile %inputs/gemm_128x256.mlir --schedule cooperative --dump-dir %t/coop
// RUN: FileCheck %s --check-prefixes=CHECK,COOP --input-file=%t/coop/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/coop/ptxas.log

// A producer warpgroup and two consumer warpgroups; ptxas honours setmaxnreg
// only with .minnctapersm (or .maxnreg).
// COOP: .param .u64 gemm_param_17,
// COOP: .param .u64 gemm_param_18,
// COOP: .param .u64 gemm_param_19
// CHECK: .reqntid 384, 1, 1
// CHECK: .minnctapersm 1
// CHECK: mbarrier.init.shared::cta.b64
// CHECK-DAG: setmaxnreg.dec.sync.aligned.u32 40;
// CHECK-DAG: setmaxnreg.inc.sync.aligned.u32 232;
// CHECK-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// CHECK-DAG: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// CHECK-DAG: mbarrier.arrive.shared::cta.b64
// Persistent: the tile loop strides by the launched grid.
// COOP-DAG: %nctaid.x

// LOG: 0 bytes spill stores, 0 bytes spill loads
// LOG-NOT: C7508
// LOG-NOT: C7514
// LOG-NOT: C7515
