// REQUIRES: ptxas
// Compile-only: schedule `multistage` with MN-major operands (argument attribute
// tessel.contiguous_dim = 0 on A: M has unit stride, on B: N has unit stride), to a cubin with
// ptxas: MN-major tiles are copied with 16-byte cp.async along M / N into BK rows of BM / BN
// elements and read with ldmatrix .trans; K-major ones as before; no spills.
// RUN: rm -rf %t
// Both MN-major, 128x128x64 (4 warps).
// RUN: tessel-compile %inputs/gemm_128x128_mn_major.mlir --schedule multistage --dump-dir %t/both
// RUN: FileCheck %s --implicit-check-not=wgmma --implicit-check-not=ldmatrix.sync.aligned.m8n8.x4.shared --input-file=%t/both/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/both/ptxas.log
// A MN-major, B K-major, 128x256x64 (8 warps).
// RUN: tessel-compile %inputs/gemm_128x256_a_mn_major.mlir --schedule multistage --dump-dir %t/a
// RUN: FileCheck %s --check-prefixes=CHECK,MIXED --implicit-check-not=wgmma --input-file=%t/a/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/a/ptxas.log
// B MN-major, A K-major, 128x128x32 f16 (64-byte K-major rows, 256-byte MN-major rows).
// RUN: tessel-compile %inputs/gemm_128x128x32_f16_b_mn_major.mlir --schedule multistage --stages 3 --dump-dir %t/b
// RUN: FileCheck %s --check-prefixes=CHECK,MIXED --implicit-check-not=wgmma --input-file=%t/b/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/b/ptxas.log

// CHECK: .entry gemm(
// CHECK-DAG: cp.async.cg.shared.global [{{%r[0-9]+}}+{{[0-9]+}}], [{{%rd[0-9]+}}], 16;
// CHECK-DAG: cp.async.cg.shared.global [{{%r[0-9]+}}+{{[0-9]+}}], [{{%rd[0-9]+}}], 16, {{%r[0-9]+}};
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}}, [{{%r[0-9]+}}+{{[0-9]+}}];
// MIXED-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-DAG: mma.sync.aligned.m16n8k16.row.col.f32
// CHECK-DAG: st.shared.v4.b32

// LOG: Compiling entry function 'gemm' for 'sm_90a'
// LOG: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
