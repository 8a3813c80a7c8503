// Operand layouts and swizzle modes in tessel-lower-to-nvvm: the TMA box
// parameters ("tma:<arg>:<box inner>x<box outer>:<swizzle>[:c<contiguous dim>]"),
// the TMA copies (twice: the prologue fill and the refill; one per box, or a
// loop over more than 4 boxes), the wgmma
// descriptors' high bits (LBO, SBO, swizzle mode: the values
// tests/lit/Inputs/wgmma_layout_model.py checks) and the transpose immediates
// (layout col for an M-major A, row for an N-major B).
//
// K-major A and B (gemm_128x128: A 128 x 64, B 128 x 64 transposed).
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=tma swizzle=128" --tessel-plan-pipeline --tessel-lower-to-nvvm -o %t.K128
// RUN: FileCheck %s --check-prefix=K128 --input-file=%t.K128
// RUN: grep -c hopper.tma.load %t.K128 | FileCheck %s --check-prefix=K128-COPIES
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=tma swizzle=64" --tessel-plan-pipeline --tessel-lower-to-nvvm -o %t.K64
// RUN: FileCheck %s --check-prefix=K64 --input-file=%t.K64
// RUN: grep -c hopper.tma.load %t.K64 | FileCheck %s --check-prefix=K64-COPIES
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=tma swizzle=32" --tessel-plan-pipeline --tessel-lower-to-nvvm -o %t.K32
// RUN: FileCheck %s --check-prefix=K32 --input-file=%t.K32
// RUN: grep -c hopper.tma.load %t.K32 | FileCheck %s --check-prefix=K32-COPIES
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=tma swizzle=-1" --tessel-plan-pipeline --tessel-lower-to-nvvm -o %t.KNONE
// RUN: FileCheck %s --check-prefix=KNONE --input-file=%t.KNONE
// RUN: grep -c hopper.tma.load %t.KNONE | FileCheck %s --check-prefix=KNONE-COPIES
//
// MN-major A (tessel.contiguous_dim = 0) and B (loaded K x N, no transpose).
// RUN: tessel-opt %inputs/gemm_mn_major.mlir --tessel-select-schedule="schedule=tma" --tessel-plan-pipeline --tessel-lower-to-nvvm -o %t.MN128
// RUN: FileCheck %s --check-prefix=MN128 --input-file=%t.MN128
// RUN: grep -c hopper.tma.load %t.MN128 | FileCheck %s --check-prefix=MN128-COPIES
// RUN: tessel-opt %inputs/gemm_mn_major.mlir --tessel-select-schedule="schedule=tma swizzle=64" --tessel-plan-pipeline --tessel-lower-to-nvvm -o %t.MN64
// RUN: FileCheck %s --check-prefix=MN64 --input-file=%t.MN64
// RUN: grep -c hopper.tma.load %t.MN64 | FileCheck %s --check-prefix=MN64-COPIES
// RUN: tessel-opt %inputs/gemm_mn_major.mlir --tessel-select-schedule="schedule=tma swizzle=32" --tessel-plan-pipeline --tessel-lower-to-nvvm -o %t.MN32
// RUN: FileCheck %s --check-prefix=MN32 --input-file=%t.MN32
// RUN: grep -c hopper.tma.load %t.MN32 | FileCheck %s --check-prefix=MN32-COPIES
// RUN: tessel-opt %inputs/gemm_mn_major.mlir --tessel-select-schedule="schedule=tma swizzle=-1" --tessel-plan-pipeline --tessel-lower-to-nvvm -o %t.MNNONE
// RUN: FileCheck %s --check-prefix=MNNONE --input-file=%t.MNNONE
// RUN: grep -c hopper.tma.load %t.MNNONE | FileCheck %s --check-prefix=MNNONE-COPIES
//
// M-major A from a transposed K x M load, N-major B through contiguous_dim = 0.
// RUN: tessel-opt %inputs/gemm_a_transposed.mlir --tessel-select-schedule="schedule=cooperative" --tessel-plan-pipeline --tessel-lower-to-nvvm -o %t.AT
// RUN: FileCheck %s --check-prefix=AT --input-file=%t.AT

// K128: tessel.params = [{{.*}}"tma:0:64x128:128:r", "tma:1:64x128:128:r"
// K128-COPIES: {{^}}4{{$}}
// K128: arith.constant 4611686293305360384 : i64
// K128: hopper.wgmma {{.*}} shape [64, {{[0-9]+}}, 16] "bf16" :

// K64: tessel.params = [{{.*}}"tma:0:32x128:64:r", "tma:1:32x128:64:r"
// K64-COPIES: {{^}}8{{$}}
// K64: arith.constant -9223371899415756800 : i64
// K64: hopper.wgmma {{.*}} shape [64, {{[0-9]+}}, 16] "bf16" :

// K32: tessel.params = [{{.*}}"tma:0:16x128:32:r", "tma:1:16x128:32:r"
// K32-COPIES: {{^}}16{{$}}
// K32: arith.constant -4611685949707845632 : i64

// KNONE: tessel.params = [{{.*}}"tma:0:8x128:0:r", "tma:1:8x128:0:r"
// KNONE-COPIES: {{^}}4{{$}}
// KNONE: arith.constant 34368126976 : i64

// MN128: tessel.params = [{{.*}}"tma:0:64x64:128:c0", "tma:1:64x64:128"
// MN128-COPIES: {{^}}8{{$}}
// MN128: arith.constant 4611686293338849280 : i64
// MN128: hopper.wgmma {{.*}} shape [64, {{[0-9]+}}, 16] "bf16" a_mn_major

// MN64: tessel.params = [{{.*}}"tma:0:32x64:64:c0", "tma:1:32x64:64"
// MN64-COPIES: {{^}}16{{$}}
// MN64: arith.constant -9223371899399045120 : i64
// MN64: hopper.wgmma {{.*}} shape [64, {{[0-9]+}}, 16] "bf16" a_mn_major

// MN32: tessel.params = [{{.*}}"tma:0:16x64:32:c0", "tma:1:16x64:32"
// MN32-COPIES: {{^}}4{{$}}
// MN32: arith.constant -4611685949699522560 : i64

// MNNONE: tessel.params = [{{.*}}"tma:0:8x64:0:c0", "tma:1:8x64:0"
// MNNONE-COPIES: {{^}}4{{$}}
// MNNONE: arith.constant 274878431232 : i64

// AT: tessel.params = [{{.*}}"tma:0:64x64:128", "tma:1:64x64:128:c0"
// AT: arith.constant 4611686293338849280 : i64
// AT: hopper.wgmma {{.*}} shape [64, {{[0-9]+}}, 16] "bf16" a_mn_major
