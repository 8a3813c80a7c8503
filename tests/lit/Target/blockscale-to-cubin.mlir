// REQUIRES: ptxas
// A scaled accumulation (block-scaled fp8) down to a cubin in the consumer warpgroups: each
// k-step's wgmmas start from zero (scale-d = 0) into a partial accumulator, the factors are
// loaded before the wait that retires the previous k-step (wait_group 1: the next k-step stays
// in flight), and the partial is added with one fma per register; ptxas keeps the wgmma pipeline
// (no C7514 serialisation) and spills nothing.
// RUN: rm -rf %t
// RUN: tessel-compile %inputs/gemm_blockscale_128x128_fp8.mlir --schedule cooperative --dump-dir %t/coop
// RUN: FileCheck %s --input-file=%t/coop/gemm_blockscale.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/coop/ptxas.log
// RUN: tessel-compile %inputs/gemm_blockscale_128x128_fp8.mlir --schedule warp_specialized --dump-dir %t/ws
// RUN: FileCheck %s --input-file=%t/ws/gemm_blockscale.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/ws/ptxas.log
// RUN: test -s %t/ws/gemm_blockscale.cubin

// CHECK: .entry gemm_blockscale(
// CHECK: setp.ne.b32 p, 0, 0;
// CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3
// CHECK: setp.ne.b32 p, 1, 0;
// CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3
// CHECK: wgmma.commit_group.sync.aligned;
// CHECK: @p ld.global.b32
// CHECK: wgmma.wait_group.sync.aligned 1;
// CHECK: mbarrier.arrive.shared::cta.b64
// CHECK: fma.rn.f32
// CHECK: wgmma.wait_group.sync.aligned 0;

// LOG-NOT: C7514
// LOG: 0 bytes spill stores, 0 bytes spill loads
