// REQUIRES: ptxas
// Compile-only: schedule `multistage` (cp.async + ldmatrix + mma.sync) all the
// way to a cubin with ptxas, no GPU: the 128x256x64 bf16 GEMM (8 warps of
// 64x64, 4 stages, 128-byte rows) and a 128x128x32 f16 one (4 warps, 3 stages,
// 64-byte rows).
// RUN: rm -rf %t && tessel-compile %inputs/gemm_128x256.mlir --schedule multistage --dump-dir %t/bf16
// RUN: FileCheck %s --check-prefixes=CHECK,BF16 --implicit-check-not=mbarrier --implicit-check-not=cp.async.bulk --implicit-check-not=wgmma --implicit-check-not=.trans --input-file=%t/bf16/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/bf16/ptxas.log
// RUN: test -s %t/bf16/gemm.cubin
// RUN: ls %t/bf16 | FileCheck %s --check-prefix=FILES
// RUN: tessel-compile %inputs/gemm_128x128x32_f16.mlir --schedule multistage --stages 3 --dump-dir %t/f16
// RUN: FileCheck %s --check-prefixes=CHECK,F16 --implicit-check-not=mbarrier --implicit-check-not=cp.async.bulk --implicit-check-not=wgmma --implicit-check-not=.trans --input-file=%t/f16/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/f16/ptxas.log
// RUN: FileCheck %s --check-prefix=SCHED --input-file=%t/f16/02-select-schedule.mlir

// SCHED: #tessel.schedule<kind = multistage, tile = [128, 128, 32], stages = 3, warpgroups = 1, swizzle = 64>

// CHECK: .target sm_90a
// CHECK: .extern .shared .align 1024 .b8 __tessel_smem[];
// CHECK: .entry gemm(
// No TMA descriptors: 3 tensors x (pointer, 2 sizes, 2 strides) = 15 parameters.
// CHECK-NOT: .param .align 64
// CHECK: .param .u64 gemm_param_14
// CHECK-NOT: .param
// BF16: .reqntid 256, 1, 1
// F16: .reqntid 128, 1, 1
// The mainloop (its blocks are laid out in any order): 16-byte cp.async with a
// source size (zero-fill), one commit group per k-tile, wait_group stages-2,
// one CTA barrier, ldmatrix.x4 (never .trans for K-major operands) from swizzled rows (immediate offsets per 16-row
// block), mma.sync; no mbarrier, TMA or wgmma anywhere (implicit-check-not).
// Interior tiles: unpredicated 16-byte cp.async (immediate offsets per chunk); edge tiles: with a
// source size (zero-fill).
// CHECK-DAG: cp.async.cg.shared.global [{{%r[0-9]+}}+{{[0-9]+}}], [{{%rd[0-9]+}}], 16;
// CHECK-DAG: cp.async.cg.shared.global [{{%r[0-9]+}}+{{[0-9]+}}], [{{%rd[0-9]+}}], 16, {{%r[0-9]+}};
// CHECK-DAG: cp.async.commit_group;
// BF16-DAG: cp.async.wait_group 2;
// F16-DAG: cp.async.wait_group 1;
// CHECK-DAG: bar.sync 0;
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}}, [{{%r[0-9]+}}+2048];
// BF16-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// F16-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// Unaligned rows: element loads into one 16-byte shared store.
// CHECK-DAG: st.shared.v4.b32
// CHECK-DAG: cp.async.wait_group 0;
// Paired 16-bit stores in the epilogue.
// CHECK-DAG: st.global.v2.b16

// LOG: Compiling entry function 'gemm' for 'sm_90a'
// LOG: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

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
