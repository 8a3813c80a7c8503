// RUN: tessel-opt %s --split-input-file --verify-diagnostics --tessel-verify-rings | FileCheck %s
// The ring protocol verifier (VerifyRings.cpp, rules R1-R5): a kernel whose ring would hang is a
// compile error naming the ring and the rule. Every kernel of tests/golden/configs.txt passes it
// (it runs in the JIT's kernel pipeline).

// A correct two-stage ring: two 16 KiB boxes per stage (one of them in a loop of two 8 KiB
// boxes), a multicast box counted once per receiving CTA.
// CHECK-LABEL: llvm.func @ring
llvm.func @ring(%a: !llvm.ptr, %b: !llvm.ptr, %bar0: i32, %bar1: i32, %e0: i32, %e1: i32, %x: i32, %s: i32) {
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c0 = arith.constant 0 : i32
  %c3_i16 = arith.constant 3 : i16
  %bytes = arith.constant 40960 : i32
  hopper.mbarrier.init %bar0, %c1 {ring = "full"}
  hopper.mbarrier.init %bar1, %c1 {ring = "full"}
  hopper.mbarrier.init %e0, %c2 {ring = "empty"}
  hopper.mbarrier.init %e1, %c2 {ring = "empty"}
  hopper.mbarrier.wait %e0, %x stage %s {ring = "empty"}
  hopper.mbarrier.arrive_expect_tx %bar0, %bytes {ring = "full"}
  hopper.tma.load %a[%x, %x] -> %x, %bar0 bytes 16384 : !llvm.ptr
  scf.for %i = %c0 to %c2 step %c1 : i32 {
    hopper.tma.load %b[%i, %x] -> %x, %bar0 bytes 4096 : !llvm.ptr
  }
  hopper.tma.load %b[%x, %x] -> %x, %bar0 multicast %c3_i16 bytes 8192 : !llvm.ptr
  hopper.mbarrier.wait %bar0, %x stage %s {ring = "full"}
  hopper.mbarrier.arrive %e0 {ring = "empty"}
  llvm.return
}

// -----

// R2: the consumer never releases the stage.
llvm.func @missing_arrive(%bar: i32, %x: i32) {
  %c1 = arith.constant 1 : i32
  hopper.mbarrier.init %bar, %c1 {ring = "empty"}
  hopper.mbarrier.init %bar, %c1 {ring = "empty"}
  // expected-error @+1 {{ring 'empty' is waited on but nothing arrives on it (rule R2: a missing arrive; the wait would never complete)}}
  hopper.mbarrier.wait %bar, %x stage %x {ring = "empty"}
  llvm.return
}

// -----

// R5: 24 KiB expected, 32 KiB delivered.
llvm.func @wrong_tx_bytes(%a: !llvm.ptr, %bar: i32, %x: i32) {
  %c1 = arith.constant 1 : i32
  %bytes = arith.constant 24576 : i32
  hopper.mbarrier.init %bar, %c1 {ring = "full"}
  hopper.mbarrier.init %bar, %c1 {ring = "full"}
  // expected-error @+1 {{ring 'full': arrive_expect_tx expects 24576 bytes but the TMA loads completing on this barrier deliver 32768 (rule R5: the phase would never complete or would complete early)}}
  hopper.mbarrier.arrive_expect_tx %bar, %bytes {ring = "full"}
  hopper.tma.load %a[%x, %x] -> %x, %bar bytes 16384 : !llvm.ptr
  hopper.tma.load %a[%x, %x] -> %x, %bar bytes 16384 : !llvm.ptr
  hopper.mbarrier.wait %bar, %x stage %x {ring = "full"}
  llvm.return
}

// -----

// R5 with bytes computed at launch (boxes clipped to the tensor's rows): their
// max_bytes, the unclipped boxes, must be what the loads deliver.
llvm.func @wrong_max_bytes(%a: !llvm.ptr, %bar: i32, %x: i32, %clipped: i32) {
  %c1 = arith.constant 1 : i32
  hopper.mbarrier.init %bar, %c1 {ring = "full"}
  hopper.mbarrier.init %bar, %c1 {ring = "full"}
  // expected-error @+1 {{ring 'full': arrive_expect_tx expects 16384 bytes but the TMA loads completing on this barrier deliver 32768 (rule R5: the phase would never complete or would complete early)}}
  hopper.mbarrier.arrive_expect_tx %bar, %clipped {max_bytes = 16384 : i64, ring = "full"}
  hopper.tma.load %a[%x, %x] -> %x, %bar bytes 16384 : !llvm.ptr
  hopper.tma.load %a[%x, %x] -> %x, %bar bytes 16384 : !llvm.ptr
  hopper.mbarrier.wait %bar, %x stage %x {ring = "full"}
  llvm.return
}

// -----

// R5: expected bytes and no load at all.
llvm.func @no_load(%bar: i32, %x: i32) {
  %c1 = arith.constant 1 : i32
  %bytes = arith.constant 16384 : i32
  hopper.mbarrier.init %bar, %c1 {ring = "full"}
  hopper.mbarrier.init %bar, %c1 {ring = "full"}
  // expected-error @+1 {{ring 'full': arrive_expect_tx expects 16384 bytes but no TMA load completes on this barrier (rule R5: the phase would never complete)}}
  hopper.mbarrier.arrive_expect_tx %bar, %bytes {ring = "full"}
  hopper.mbarrier.wait %bar, %x stage %x {ring = "full"}
  llvm.return
}

// -----

// R3: one stage.
llvm.func @one_stage(%bar: i32, %x: i32) {
  %c1 = arith.constant 1 : i32
  // expected-error @+1 {{ring 'empty' has 1 stage (rule R3: a stage is released one k-step late, so a one-stage ring would wait forever for K > BK)}}
  hopper.mbarrier.init %bar, %c1 {ring = "empty"}
  hopper.mbarrier.wait %bar, %x stage %x {ring = "empty"}
  hopper.mbarrier.arrive %bar {ring = "empty"}
  llvm.return
}

// -----

// R1: waited, never initialised.
llvm.func @uninitialised(%bar: i32, %x: i32) {
  // expected-error @+1 {{ring 'full' is waited on but never initialised (rule R1: mbarrier.init before any wait)}}
  hopper.mbarrier.wait %bar, %x stage %x {ring = "full"}
  hopper.mbarrier.arrive %bar {ring = "full"}
  llvm.return
}

// -----

// R4: a full ring counting two arrivals per phase gets one expect_tx.
llvm.func @full_count(%a: !llvm.ptr, %bar: i32, %x: i32) {
  %c2 = arith.constant 2 : i32
  %bytes = arith.constant 16384 : i32
  // expected-error @+1 {{ring 'full' is initialised with 2 arrivals per phase but its phases take one arrive_expect_tx (rule R4)}}
  hopper.mbarrier.init %bar, %c2 {ring = "full"}
  hopper.mbarrier.init %bar, %c2 {ring = "full"}
  hopper.mbarrier.arrive_expect_tx %bar, %bytes {ring = "full"}
  hopper.tma.load %a[%x, %x] -> %x, %bar bytes 16384 : !llvm.ptr
  hopper.mbarrier.wait %bar, %x stage %x {ring = "full"}
  llvm.return
}

// -----

// R6: the empty barriers expect 3 arrivals per phase, but the kernel's roles
// (tessel.ring_arrivals: 2 consumer warpgroups, one CTA) arrive twice.
llvm.func @empty_count(%bar: i32, %x: i32) attributes {tessel.ring_arrivals = {empty = 2 : i64, full = 1 : i64}} {
  %c3 = arith.constant 3 : i32
  // expected-error @+1 {{ring 'empty' is initialised with 3 arrivals per phase but its roles arrive 2 times per phase (rule R6: the phase would never complete)}}
  hopper.mbarrier.init %bar, %c3 {ring = "empty"}
  hopper.mbarrier.init %bar, %c3 {ring = "empty"}
  hopper.mbarrier.arrive %bar {ring = "empty"}
  hopper.mbarrier.wait %bar, %x stage %x {ring = "empty"}
  llvm.return
}

// -----

// The epilogue operand chunks (tessel-lower-epilogue rule 7): an arrival that
// returns its state, one 8 KiB chunk, a wait on that state. One barrier per
// consumer (R3 exempt).
// CHECK-LABEL: llvm.func @operand_chunk
llvm.func @operand_chunk(%c: !llvm.ptr, %bar: i32, %x: i32) {
  %c1 = arith.constant 1 : i32
  %bytes = arith.constant 8192 : i32
  hopper.mbarrier.init %bar, %c1 {ring = "operand"}
  %st = hopper.mbarrier.arrive_expect_tx %bar, %bytes {ring = "operand"} -> i64
  hopper.tma.load %c[%x, %x] -> %x, %bar bytes 8192 : !llvm.ptr
  hopper.mbarrier.wait_state %bar, %st stage %x {ring = "operand"}
  llvm.return
}

// -----

// R5 on an operand chunk: 8 KiB expected, 16 KiB delivered.
llvm.func @operand_chunk_bytes(%c: !llvm.ptr, %bar: i32, %x: i32) {
  %c1 = arith.constant 1 : i32
  %bytes = arith.constant 8192 : i32
  hopper.mbarrier.init %bar, %c1 {ring = "operand"}
  // expected-error @+1 {{ring 'operand': arrive_expect_tx expects 8192 bytes but the TMA loads completing on this barrier deliver 16384 (rule R5: the phase would never complete or would complete early)}}
  %st = hopper.mbarrier.arrive_expect_tx %bar, %bytes {ring = "operand"} -> i64
  hopper.tma.load %c[%x, %x] -> %x, %bar bytes 16384 : !llvm.ptr
  hopper.mbarrier.wait_state %bar, %st stage %x {ring = "operand"}
  llvm.return
}

// -----

// R1 seen through a wait on a state.
llvm.func @operand_chunk_uninitialised(%bar: i32, %st: i64, %x: i32) {
  // expected-error @+1 {{ring 'operand' is waited on but never initialised (rule R1: mbarrier.init before any wait)}}
  hopper.mbarrier.wait_state %bar, %st stage %x {ring = "operand"}
  llvm.return
}
