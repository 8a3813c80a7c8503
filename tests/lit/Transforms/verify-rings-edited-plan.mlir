// A hand-edited plan that would hang is a compile error: the resources of a
// pingpong kernel say the empty barriers take 2 arrivals per phase, but only
// the consumer whose tile it was releases a stage (tessel-verify-rings, R6).
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=pingpong" --tessel-plan-pipeline \
// RUN:   | sed -e 's/arrivals = {empty = 1 : i64/arrivals = {empty = 2 : i64/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=pingpong" --tessel-kernel-pipeline | FileCheck %s --check-prefix=OK

// CHECK: error: ring 'empty' is initialised with 2 arrivals per phase but its roles arrive 1 times per phase (rule R6: the phase would never complete)
// OK: llvm.func @gemm
// OK-SAME: tessel.ring_arrivals = {empty = 1 : i64, full = 1 : i64}
