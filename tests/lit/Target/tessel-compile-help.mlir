// tessel-compile --help lists tessel's options, not LLVM's and MLIR's ~170.
// RUN: tessel-compile --help | FileCheck %s
// CHECK: OVERVIEW: tessel ahead-of-time compiler
// CHECK: tessel-compile options:
// CHECK-DAG: --cluster=<string>
// CHECK-DAG: --decomposition=<string>
// CHECK-DAG: --dump-dir=<string>
// CHECK-DAG: --raster-group=<int>
// CHECK-DAG: --schedule=<string>
// CHECK-DAG: --stages=<int>
// CHECK-DAG: --swizzle=<string>
// CHECK-NOT: --mlir-
// CHECK-NOT: --nvptx-
