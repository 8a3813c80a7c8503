// REQUIRES: ptxas
// Transcendental math down to a cubin: the sm_90 fast paths, no library calls, no LLVM abort.
// RUN: rm -rf %t && tessel-compile %inputs/elementwise_math.mlir --dump-dir %t
// RUN: FileCheck %s --input-file=%t/elementwise_math.ptx
// RUN: test -s %t/elementwise_math.cubin

// CHECK-NOT: .extern .func
// CHECK: .entry elementwise_math(
// CHECK-DAG: ex2.approx.f32
// CHECK-DAG: tanh.approx.f32
// CHECK-DAG: lg2.approx.f32
// CHECK-DAG: fma.rn.f32
