// REQUIRES: ptxas
// Compile-only: cooperative with stream-K (StreamK.cpp) to cubin, no GPU.
// RUN: rm -rf %t && tessel-compile %inputs/gemm_128x128.mlir --schedule cooperative --decomposition stream-k --dump-dir %t/sk128
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/sk128/ptxas.log
// RUN: tessel-compile %inputs/gemm_128x256.mlir --schedule cooperative --decomposition stream-k --dump-dir %t/sk
// RUN: FileCheck %s --input-file=%t/sk/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/sk/ptxas.log
// RUN: tessel-compile %inputs/gemm_128x256.mlir --schedule cooperative --dump-dir %t/auto
// RUN: FileCheck %s --input-file=%t/auto/gemm.ptx
// RUN: tessel-compile %inputs/gemm_128x256.mlir --schedule cooperative --decomposition data-parallel --dump-dir %t/dp
// RUN: FileCheck %s --check-prefix=DP --input-file=%t/dp/gemm.ptx
// RUN: FileCheck %s --check-prefix=SCHED --input-file=%t/sk/02-select-schedule.mlir
// Pingpong takes stream-K by default too; a tile's 128 consumer threads sync on
// their own barrier (1 + consumer) instead of barrier 5.
// RUN: tessel-compile %inputs/gemm_128x128.mlir --schedule pingpong --dump-dir %t/pp
// RUN: FileCheck %s --check-prefix=PP --input-file=%t/pp/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/pp/ptxas.log
// RUN: FileCheck %s --check-prefix=SCHED --input-file=%t/pp/02-select-schedule.mlir
// RUN: tessel-compile %inputs/gemm_128x128.mlir --schedule pingpong --decomposition data-parallel --dump-dir %t/ppdp
// RUN: FileCheck %s --check-prefix=DP --input-file=%t/ppdp/gemm.ptx

// SCHED: stream_k = 1>
// The workspace is the last parameter, after the user's grid.
// CHECK: .param .u64 gemm_param_21,
// CHECK-NEXT: .param .u64 .ptr .global .align 1 gemm_param_22
// Rule S1: partial tile, gpu-scope fence, consumer barrier, release of the flag.
// CHECK-DAG: st.global.v4.f32
// CHECK-DAG: fence.acq_rel.gpu;
// CHECK-DAG: bar.sync 5, 256;
// CHECK-DAG: st.release.gpu.global.u32 [{{.*}}], 1;
// Rules S2, S3: acquire spin, clear, reads through L2.
// CHECK-DAG: ld.acquire.gpu.global.u32
// CHECK-DAG: st.relaxed.gpu.global.u32 [{{.*}}], 0;
// CHECK-DAG: ld.global.cg.v4.f32
// The data-parallel kernel has none of it.
// DP-NOT: gemm_param_22
// DP-NOT: ld.acquire.gpu
// PP: .param .u64 .ptr .global .align 1 gemm_param_22
// PP-NOT: bar.sync 5,
// PP-DAG: fence.acq_rel.gpu;
// PP-DAG: st.release.gpu.global.u32 [{{.*}}], 1;
// PP-DAG: ld.acquire.gpu.global.u32
// PP-DAG: ld.global.cg.v4.f32
// LOG: 0 bytes spill stores, 0 bytes spill loads
// LOG-NOT: C7508
// LOG-NOT: C7514
