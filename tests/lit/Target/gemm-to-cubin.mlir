// REQUIRES: ptxas
// Compile-only: the tma-schedule GEMM all the way to a cubin with ptxas, no GPU.
// RUN: rm -rf %t && tessel-compile %inputs/gemm_128x256.mlir --schedule tma --stages 4 --dump-dir %t
// RUN: FileCheck %s --input-file=%t/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/ptxas.log
// RUN: test -s %t/gemm.cubin
// RUN: ls %t | FileCheck %s --check-prefix=FILES

// CHECK: .version 8.5
// CHECK: .target sm_90a
// CHECK: .extern .shared .align 1024 .b8 __tessel_smem[];
// CHECK: .entry gemm(
// CHECK: .param .align 64 .b8 gemm_param_15[128],
// CHECK: .param .align 64 .b8 gemm_param_16[128]
// CHECK: .reqntid 256, 1, 1
// CHECK: .minnctapersm 1
// CHECK: mbarrier.init.shared::cta.b64
// CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// CHECK: wgmma.wait_group.sync.aligned 1
// Paired bf16 stores in the epilogue.
// CHECK: st.global.v2.b16

// LOG: Compiling entry function 'gemm' for 'sm_90a'
// LOG: 0 bytes spill stores, 0 bytes spill loads
// LOG-NOT: C7514
// LOG-NOT: C7515

// FILES: 01-tessel.mlir
// FILES: 02-select-schedule.mlir
// FILES: 10-convert-hopper-to-nvvm.mlir
// FILES: 11-convert-to-llvm.mlir
// FILES: 12-kernel.ll
// FILES: 13-kernel.opt.ll
// FILES: 14-kernel.ptx
// FILES: gemm.cubin
// FILES: gemm.ptx
// FILES: ptxas.log
