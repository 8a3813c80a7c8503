// REQUIRES: ptxas
// Compile-only, 64B swizzle: boxes 64 bytes wide, to cubin with ptxas (no
// GPU): a K-major GEMM (schedule cooperative) and an MN-major one (A M-major through
// tessel.contiguous_dim = 0, B N-major loaded K x N; schedule pingpong). Checks the
// TMA box parameters, the wgmma transpose immediates, no spills and no
// serialised wgmma (C7514) or ignored setmaxnreg (C7508).
// RUN: rm -rf %t
// RUN: tessel-compile %inputs/gemm_128x128.mlir --schedule cooperative --swizzle 64 --dump-dir %t/k
// RUN: FileCheck %s --check-prefix=K --input-file=%t/k/10-convert-hopper-to-nvvm.mlir
// RUN: FileCheck %s --check-prefix=K-PTX --input-file=%t/k/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/k/ptxas.log
// RUN: test -s %t/k/gemm.cubin
// RUN: tessel-compile %inputs/gemm_mn_major.mlir --schedule pingpong --swizzle 64 --dump-dir %t/mn
// RUN: FileCheck %s --check-prefix=MN --input-file=%t/mn/10-convert-hopper-to-nvvm.mlir
// RUN: FileCheck %s --check-prefix=MN-PTX --input-file=%t/mn/gemm.ptx
// RUN: FileCheck %s --check-prefix=LOG --input-file=%t/mn/ptxas.log
// RUN: test -s %t/mn/gemm.cubin

// K: "tma:0:32x128:64:r", "tma:1:32x128:64:r"
// K-PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, 1, 1, 0, 0;
// K-PTX-NOT: , 1, 1, 1, 1;

// MN: "tma:0:32x64:64:c0", "tma:1:32x64:64"
// MN-PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, 1, 1, 1, 1;
// MN-PTX-NOT: , 1, 1, 0, 0;

// LOG-NOT: C7508
// LOG-NOT: C7514
// LOG: 0 bytes spill stores, 0 bytes spill loads
// LOG-NOT: C7508
// LOG-NOT: C7514
