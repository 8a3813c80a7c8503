// RUN: tessel-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// Round trip of the hopper ops, and their verifier.

// CHECK-LABEL: llvm.func @ops
// CHECK: hopper.mbarrier.init %arg1, %arg3
// CHECK: hopper.fence.mbarrier_init
// CHECK: hopper.mbarrier.arrive_expect_tx %arg1, %arg3
// CHECK: hopper.tma.load %arg0[%arg3, %arg3] -> %arg2, %arg1 : !llvm.ptr
// CHECK: hopper.tma.load %arg0[%arg3, %arg3, %arg3] -> %arg2, %arg1 multicast %arg4 : !llvm.ptr
// CHECK: hopper.mbarrier.wait %arg1, %arg3 stage %arg3 {bounded, ring = "empty"}
// CHECK: hopper.mbarrier.arrive %arg1
llvm.func @ops(%desc: !llvm.ptr, %bar: i32, %dst: i32, %x: i32, %mask: i16) {
  hopper.mbarrier.init %bar, %x
  hopper.fence.mbarrier_init
  hopper.mbarrier.arrive_expect_tx %bar, %x
  hopper.tma.load %desc[%x, %x] -> %dst, %bar : !llvm.ptr
  hopper.tma.load %desc[%x, %x, %x] -> %dst, %bar multicast %mask : !llvm.ptr
  hopper.mbarrier.wait %bar, %x stage %x {bounded, ring = "empty"}
  hopper.mbarrier.arrive %bar
  llvm.return
}

// -----

llvm.func @one_coordinate(%desc: !llvm.ptr, %bar: i32, %x: i32) {
  // expected-error @+1 {{'hopper.tma.load' op takes 2 or 3 coordinates (a 2-d or 3-d tensor map), got 1}}
  hopper.tma.load %desc[%x] -> %x, %bar : !llvm.ptr
  llvm.return
}
