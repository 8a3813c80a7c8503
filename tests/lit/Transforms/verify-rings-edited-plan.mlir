// A hand-edited plan that would hang is a compile error: the resources of a
// pingpong kernel say the empty barriers take 2 arrivals per phase, but only
// the consumer whose tile it was releases a stage (tessel-verify-rings, R6).
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=pingpong" --tessel-plan-pipeline \
// RUN:   | sed -e 's/arrivals = {empty = 1 : i64/arrivals = {empty = 2 : i64/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=pingpong" --tessel-kernel-pipeline | FileCheck %s --check-prefix=OK
// An epilogue operand's chunk load (tessel-lower-epilogue rule 7) edited to deliver half the bytes
// its arrival expects: the arrival returns a state for its wait, and R5 still checks it.
// RUN: tessel-opt %inputs/gemm_alpha_beta_128x192.mlir --tessel-select-schedule="schedule=cooperative" --tessel-plan-pipeline \
// RUN:   --tessel-lower-to-nvvm | sed -e 's/bytes 8192 : !llvm.ptr/bytes 4096 : !llvm.ptr/' \
// RUN:   | not tessel-opt --tessel-verify-rings 2>&1 | FileCheck %s --check-prefix=CHUNK

// CHECK: error: ring 'empty' is initialised with 2 arrivals per phase but its roles arrive 1 times per phase (rule R6: the phase would never complete)
// OK: llvm.func @gemm
// OK-SAME: tessel.ring_arrivals = {empty = 1 : i64, full = 1 : i64}
// CHUNK: error: ring 'operand': arrive_expect_tx expects 8192 bytes but the TMA loads completing on this barrier deliver 4096 (rule R5: the phase would never complete or would complete early)
