// tessel-compile --schedule auto (its default) compiles what ts::jit compiles for
// schedule::automatic (the rule's choice for a large K, AutoSchedule.cpp), not the
// select-schedule pass's own `auto` (tma): a `.auto` dump's 01-tessel.mlir compiles to the kernel
// ts::jit built. A 128x128 bf16 tile: pingpong with the stream-K plan (R2).
// RUN: rm -rf %t && tessel-compile %inputs/gemm_128x128.mlir --dump-dir %t 2>&1 | FileCheck %s --check-prefix=SAYS
// RUN: FileCheck %s --check-prefix=CHOICE < %t/02-select-schedule.mlir
// RUN: rm -rf %t.pp && tessel-compile %inputs/gemm_128x128.mlir --schedule pingpong --dump-dir %t.pp > /dev/null 2>&1
// RUN: cmp %t/14-kernel.ptx %t.pp/14-kernel.ptx
// The pass alone keeps its own rule (tessel-opt --tessel-select-schedule="schedule=auto").
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule | FileCheck %s --check-prefix=PASS
// SAYS: tessel-compile: schedule auto: pingpong (R2: pingpong with the stream-K plan
// SAYS-SAME: as ts::jit compiles it
// CHOICE: #tessel.schedule<kind = pingpong, tile = [128, 128, 64]
// PASS: #tessel.schedule<kind = tma, tile = [128, 128, 64]
