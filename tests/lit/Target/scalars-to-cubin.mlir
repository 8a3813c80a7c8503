// REQUIRES: ptxas
// Runtime scalars down to a cubin in every schedule: alpha and beta are `.param .f32` kernel
// parameters (not constants folded into the code), read with ld.param.f32.
// RUN: rm -rf %t
// RUN: tessel-compile %inputs/gemm_alpha_beta_128x128.mlir --schedule tma --dump-dir %t/tma
// RUN: FileCheck %s --input-file=%t/tma/gemm_alpha_beta.ptx
// RUN: tessel-compile %inputs/gemm_alpha_beta_128x128.mlir --schedule multistage --dump-dir %t/ms
// RUN: FileCheck %s --input-file=%t/ms/gemm_alpha_beta.ptx
// RUN: tessel-compile %inputs/gemm_alpha_beta_128x128.mlir --schedule warp_specialized --dump-dir %t/ws
// RUN: FileCheck %s --input-file=%t/ws/gemm_alpha_beta.ptx
// RUN: tessel-compile %inputs/gemm_alpha_beta_128x128.mlir --schedule cooperative --dump-dir %t/coop
// RUN: FileCheck %s --input-file=%t/coop/gemm_alpha_beta.ptx
// RUN: tessel-compile %inputs/gemm_alpha_beta_128x128.mlir --schedule pingpong --dump-dir %t/pp
// RUN: FileCheck %s --input-file=%t/pp/gemm_alpha_beta.ptx
// RUN: test -s %t/pp/gemm_alpha_beta.cubin

// CHECK: .entry gemm_alpha_beta(
// CHECK: .param .f32 gemm_alpha_beta_param_10,
// CHECK-NEXT: .param .f32 gemm_alpha_beta_param_11,
// CHECK: ld.param.{{f32|b32}} %{{[a-z]+}}{{[0-9]+}}, [gemm_alpha_beta_param_1{{[01]}}];
