// Rule 9 of tessel-select-schedule: a mainloop whose trip count depends on the
// tile (a triangular GEMM: row block m runs to m + BM) runs in the schedules of
// one tile per CTA; cooperative and pingpong, which run every tile of a CTA
// (and the stream-K split) with one trip count, refuse it at the loop.
// RUN: tessel-opt %inputs/gemm_triangular_128x128.mlir -tessel-select-schedule="schedule=warp_specialized" | FileCheck %s --check-prefix=WS
// RUN: tessel-opt %inputs/gemm_triangular_128x128.mlir -tessel-select-schedule="schedule=multistage" | FileCheck %s --check-prefix=MS
// RUN: not tessel-opt %inputs/gemm_triangular_128x128.mlir -tessel-select-schedule="schedule=cooperative" 2>&1 | FileCheck %s --check-prefix=COOP
// RUN: not tessel-opt %inputs/gemm_triangular_128x128.mlir -tessel-select-schedule="schedule=pingpong" 2>&1 | FileCheck %s --check-prefix=PP
// RUN: sed 's/%arg3 = %c0 to %4 step/%arg3 = %c0 to %c128_1 step/' %inputs/gemm_triangular_128x128.mlir | tessel-opt -tessel-select-schedule="schedule=cooperative" | FileCheck %s --check-prefix=FIXED

// WS: tessel.schedule = #tessel.schedule<kind = warp_specialized
// MS: tessel.schedule = #tessel.schedule<kind = multistage
// COOP: error: the mainloop's bounds depend on the tile (they read a program_id): schedule 'cooperative' runs every tile of a CTA with one trip count; use 'warp_specialized', 'tma' or 'multistage'
// PP: error: the mainloop's bounds depend on the tile (they read a program_id): schedule 'pingpong' runs every tile of a CTA with one trip count; use 'warp_specialized', 'tma' or 'multistage'
// FIXED: tessel.schedule = #tessel.schedule<kind = cooperative
