// RUN: tessel-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// Round trip of the hopper ops, and their verifier.

// CHECK-LABEL: llvm.func @ops
// CHECK: hopper.mbarrier.init %arg1, %arg3 {ring = "full"}
// CHECK: hopper.fence.mbarrier_init
// CHECK: hopper.mbarrier.arrive_expect_tx %arg1, %arg3 {ring = "full"}
// CHECK: hopper.tma.load %arg0[%arg3, %arg3] -> %arg2, %arg1 bytes 16384 : !llvm.ptr
// CHECK: hopper.tma.load %arg0[%arg3, %arg3, %arg3] -> %arg2, %arg1 multicast %arg4 bytes 8192 : !llvm.ptr
// CHECK: hopper.mbarrier.wait %arg1, %arg3 stage %arg3 {bounded, ring = "empty"}
// CHECK: hopper.mbarrier.arrive %arg1 {ring = "empty"}
llvm.func @ops(%desc: !llvm.ptr, %bar: i32, %dst: i32, %x: i32, %mask: i16) {
  hopper.mbarrier.init %bar, %x {ring = "full"}
  hopper.fence.mbarrier_init
  hopper.mbarrier.arrive_expect_tx %bar, %x {ring = "full"}
  hopper.tma.load %desc[%x, %x] -> %dst, %bar bytes 16384 : !llvm.ptr
  hopper.tma.load %desc[%x, %x, %x] -> %dst, %bar multicast %mask bytes 8192 : !llvm.ptr
  hopper.mbarrier.wait %bar, %x stage %x {bounded, ring = "empty"}
  hopper.mbarrier.arrive %bar {ring = "empty"}
  llvm.return
}

// An arrival that returns its state, and a wait on that state (the epilogue
// operand chunks of tessel-lower-epilogue rule 7).
// CHECK-LABEL: llvm.func @state
// CHECK: %[[S:.*]] = hopper.mbarrier.arrive_expect_tx %arg0, %arg1 {ring = "operand"} -> i64
// CHECK: hopper.mbarrier.wait_state %arg0, %[[S]] stage %arg1 {bounded, ring = "operand"}
llvm.func @state(%bar: i32, %x: i32) {
  %st = hopper.mbarrier.arrive_expect_tx %bar, %x {ring = "operand"} -> i64
  hopper.mbarrier.wait_state %bar, %st stage %x {bounded, ring = "operand"}
  llvm.return
}

// The warp-specialized roles and the TMA-store epilogue.
// CHECK-LABEL: llvm.func @roles
// CHECK: hopper.setmaxnreg decrease to 40
// CHECK: hopper.setmaxnreg increase to 232
// CHECK: hopper.named_barrier sync %arg1, 128
// CHECK: hopper.named_barrier arrive %arg1, 256
// CHECK: hopper.mbarrier.arrive_cluster %arg1, %arg1 {ring = "empty"}
// CHECK: hopper.cluster.sync
// CHECK: hopper.prefetch_tensormap %arg0 : !llvm.ptr
// CHECK: hopper.stmatrix %arg1, %arg1, %arg1, %arg1, %arg1
// CHECK: hopper.fence.proxy_async
// CHECK: hopper.tma.store %arg1 -> %arg0[%arg1, %arg1] : !llvm.ptr
// CHECK: hopper.tma.store.commit
// CHECK: hopper.tma.store.wait 1 read
// CHECK: hopper.tma.store.wait 0{{$}}
llvm.func @roles(%desc: !llvm.ptr, %x: i32) {
  hopper.setmaxnreg decrease to 40
  hopper.setmaxnreg increase to 232
  hopper.named_barrier sync %x, 128
  hopper.named_barrier arrive %x, 256
  hopper.mbarrier.arrive_cluster %x, %x {ring = "empty"}
  hopper.cluster.sync
  hopper.prefetch_tensormap %desc : !llvm.ptr
  hopper.stmatrix %x, %x, %x, %x, %x
  hopper.fence.proxy_async
  hopper.tma.store %x -> %desc[%x, %x] : !llvm.ptr
  hopper.tma.store.commit
  hopper.tma.store.wait 1 read
  hopper.tma.store.wait 0
  llvm.return
}

// -----

llvm.func @one_coordinate(%desc: !llvm.ptr, %bar: i32, %x: i32) {
  // expected-error @+1 {{'hopper.tma.load' op takes 2 or 3 coordinates (a 2-d or 3-d tensor map), got 1}}
  hopper.tma.load %desc[%x] -> %x, %bar bytes 16384 : !llvm.ptr
  llvm.return
}

// -----

llvm.func @registers() {
  // expected-error @+1 {{'hopper.setmaxnreg' op register count must be a multiple of 8 in [24, 256], got 100}}
  hopper.setmaxnreg increase to 100
  llvm.return
}

// -----

// CHECK-LABEL: llvm.func @wgmma
// CHECK: hopper.wgmma.fence
// CHECK: hopper.wgmma %arg0, %arg1, %arg2 shape [64, 8, 16] "bf16" a_mn_major : !llvm.struct<(f32, f32, f32, f32)>
// CHECK: hopper.wgmma.commit
// CHECK: hopper.wgmma.wait 1
llvm.func @wgmma(%da: i64, %db: i64, %acc: !llvm.struct<(f32, f32, f32, f32)>) {
  hopper.wgmma.fence
  %d = hopper.wgmma %da, %db, %acc shape [64, 8, 16] "bf16" a_mn_major : !llvm.struct<(f32, f32, f32, f32)>
  hopper.wgmma.commit
  hopper.wgmma.wait 1
  llvm.return
}

// -----

// fp8: k32, B's type named when it differs from A's.
// CHECK-LABEL: llvm.func @wgmma_fp8
// CHECK: hopper.wgmma %arg0, %arg1, %arg2 shape [64, 8, 32] "e4m3" : !llvm.struct<(f32, f32, f32, f32)>
// CHECK: hopper.wgmma %arg0, %arg1, %{{.*}} shape [64, 8, 32] "e4m3", "e5m2" : !llvm.struct<(f32, f32, f32, f32)>
llvm.func @wgmma_fp8(%da: i64, %db: i64, %acc: !llvm.struct<(f32, f32, f32, f32)>) {
  %d = hopper.wgmma %da, %db, %acc shape [64, 8, 32] "e4m3" : !llvm.struct<(f32, f32, f32, f32)>
  %e = hopper.wgmma %da, %db, %d shape [64, 8, 32] "e4m3", "e5m2" : !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}

// -----

// zero_acc: the first k step of a block-scaled stage ignores the accumulator (scale-d = 0).
// CHECK-LABEL: llvm.func @wgmma_zero_acc
// CHECK: hopper.wgmma %arg0, %arg1, %arg2 shape [64, 8, 32] "e4m3" zero_acc : !llvm.struct<(f32, f32, f32, f32)>
llvm.func @wgmma_zero_acc(%da: i64, %db: i64, %acc: !llvm.struct<(f32, f32, f32, f32)>) {
  %d = hopper.wgmma %da, %db, %acc shape [64, 8, 32] "e4m3" zero_acc : !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}

// -----

llvm.func @wgmma_fp8_k16(%da: i64, %db: i64, %acc: !llvm.struct<(f32, f32, f32, f32)>) {
  // expected-error @+1 {{'hopper.wgmma' op shape must be [64, n, 32] for e4m3 with n a multiple of 8 in [8, 256]}}
  %d = hopper.wgmma %da, %db, %acc shape [64, 8, 16] "e4m3" : !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}

// -----

llvm.func @wgmma_fp8_mn_major(%da: i64, %db: i64, %acc: !llvm.struct<(f32, f32, f32, f32)>) {
  // expected-error @+1 {{'hopper.wgmma' op fp8 operands are K-major only (no transpose immediates)}}
  %d = hopper.wgmma %da, %db, %acc shape [64, 8, 32] "e5m2" b_mn_major : !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}

// -----

llvm.func @wgmma_mixed_half(%da: i64, %db: i64, %acc: !llvm.struct<(f32, f32, f32, f32)>) {
  // expected-error @+1 {{'hopper.wgmma' op type_b pairs two fp8 types (e4m3, e5m2), got "bf16", "e4m3"}}
  %d = hopper.wgmma %da, %db, %acc shape [64, 8, 16] "bf16", "e4m3" : !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}

// -----

llvm.func @wgmma_accumulator(%da: i64, %db: i64, %acc: !llvm.struct<(f32, f32)>) {
  // expected-error @+1 {{'hopper.wgmma' op a 64 x 8 f32 accumulator is 4 registers per thread, got 2}}
  %d = hopper.wgmma %da, %db, %acc shape [64, 8, 16] "bf16" : !llvm.struct<(f32, f32)>
  llvm.return
}

// -----

// CHECK-LABEL: llvm.func @multistage
// CHECK: hopper.cp_async %arg1 -> %arg0 + 2048 : !llvm.ptr<1>
// CHECK: hopper.cp_async %arg1 -> %arg0 + 0 src_bytes %arg2 : !llvm.ptr<1>
// CHECK: hopper.cp_async.commit
// CHECK: hopper.cp_async.wait 2
// CHECK: hopper.ldmatrix %arg0 + 512 trans : !llvm.struct<(i32, i32, i32, i32)>
// CHECK: hopper.mma_sync %arg2, %arg2, %arg2, %arg2, %arg2, %arg2, %arg3, %arg3, %arg3, %arg3 "bf16" : !llvm.struct<(f32, f32, f32, f32)>
llvm.func @multistage(%dst: i32, %src: !llvm.ptr<1>, %n: i32, %c: f32) {
  hopper.cp_async %src -> %dst + 2048 : !llvm.ptr<1>
  hopper.cp_async %src -> %dst + 0 src_bytes %n : !llvm.ptr<1>
  hopper.cp_async.commit
  hopper.cp_async.wait 2
  %r = hopper.ldmatrix %dst + 512 trans : !llvm.struct<(i32, i32, i32, i32)>
  %d = hopper.mma_sync %n, %n, %n, %n, %n, %n, %c, %c, %c, %c "bf16" : !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}
