// REQUIRES: ptxas
// The dumped hopper stage of a pingpong kernel shows the schedule as ops: the producer's register
// budget, its ring waits and TMA loads; the consumers' budget, the turn barriers that order
// their mainloops, the full-barrier waits, the stmatrix + TMA-store epilogue.
// RUN: rm -rf %t && tessel-compile %inputs/gemm_128x128.mlir --schedule pingpong --dump-dir %t
// RUN: FileCheck %s --input-file=%t/09-lower-to-nvvm.mlir
// RUN: FileCheck %s --check-prefix=NVVM --input-file=%t/10-convert-hopper-to-nvvm.mlir

// CHECK: hopper.mbarrier.init
// CHECK: hopper.fence.mbarrier_init
// CHECK: hopper.prefetch_tensormap
// Producer warpgroup.
// CHECK: hopper.setmaxnreg decrease to 40
// CHECK: hopper.mbarrier.wait {{.*}} {ring = "empty"}
// CHECK: hopper.mbarrier.arrive_expect_tx
// CHECK: hopper.tma.load
// CHECK: hopper.tma.load
// Consumer warpgroups: consumer 0 opens the first turn, each waits for its own.
// CHECK: hopper.setmaxnreg increase to 232
// CHECK: hopper.named_barrier arrive %c3_i32, 256
// CHECK: hopper.named_barrier sync {{.*}}, 256
// CHECK: hopper.mbarrier.wait {{.*}} {ring = "full"}
// CHECK: hopper.wgmma.fence
// CHECK: hopper.wgmma {{.*}} shape [64, 128, 16] "bf16"
// CHECK: hopper.wgmma.commit
// CHECK: hopper.wgmma.wait 1
// CHECK: hopper.mbarrier.arrive
// CHECK: hopper.named_barrier arrive {{.*}}, 256
// Epilogue.
// CHECK: hopper.tma.store.wait 1 read
// CHECK: hopper.stmatrix
// CHECK: hopper.fence.proxy_async
// CHECK: hopper.tma.store {{.*}} -> %arg{{[0-9]+}}[
// CHECK: hopper.tma.store.commit
// CHECK: hopper.tma.store.wait 0

// NVVM-NOT: hopper.
