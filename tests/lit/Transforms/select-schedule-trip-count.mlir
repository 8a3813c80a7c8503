// Rule 9 of tessel-select-schedule: a mainloop whose trip count depends on the
// tile (a triangular GEMM: row block m runs to m + BM). The schedules of one
// tile per CTA compute it from the tile's program ids; cooperative and
// pingpong carry a running ring position with whole tiles and a 1x1 cluster
// (decomposition auto takes whole tiles: no stream_k), and refuse stream-K and
// clusters at the loop.
// RUN: tessel-opt %inputs/gemm_triangular_128x128.mlir -tessel-select-schedule="schedule=warp_specialized" | FileCheck %s --check-prefix=WS
// RUN: tessel-opt %inputs/gemm_triangular_128x128.mlir -tessel-select-schedule="schedule=multistage" | FileCheck %s --check-prefix=MS
// RUN: tessel-opt %inputs/gemm_triangular_128x128.mlir -tessel-select-schedule="schedule=cooperative" | FileCheck %s --check-prefix=COOP
// RUN: tessel-opt %inputs/gemm_triangular_128x128.mlir -tessel-select-schedule="schedule=pingpong" | FileCheck %s --check-prefix=PP
// RUN: not tessel-opt %inputs/gemm_triangular_128x128.mlir -tessel-select-schedule="schedule=pingpong decomposition=stream-k" 2>&1 | FileCheck %s --check-prefix=SK
// RUN: not tessel-opt %inputs/gemm_triangular_128x128.mlir -tessel-select-schedule="schedule=cooperative cluster=1x2" 2>&1 | FileCheck %s --check-prefix=CLUSTER
// RUN: sed 's/%arg3 = %c0 to %4 step/%arg3 = %c0 to %c128_1 step/' %inputs/gemm_triangular_128x128.mlir | tessel-opt -tessel-select-schedule="schedule=cooperative" | FileCheck %s --check-prefix=FIXED

// WS: tessel.schedule = #tessel.schedule<kind = warp_specialized
// MS: tessel.schedule = #tessel.schedule<kind = multistage
// COOP: tessel.schedule = #tessel.schedule<kind = cooperative, tile = [128, 128, 64], stages = 4, warpgroups = 2, swizzle = 128>
// PP: tessel.schedule = #tessel.schedule<kind = pingpong, tile = [128, 128, 64], stages = {{[0-9]+}}, warpgroups = 2, swizzle = 128>
// SK: error: the mainloop's bounds depend on the tile (they read a program_id): decomposition stream-k splits the k-iterations of tiles that must all have one trip count; use data-parallel
// CLUSTER: error: the mainloop's bounds depend on the tile (they read a program_id): cluster 1x2 walks one k-range for the two tiles of a pair; use cluster 1x1
// FIXED: tessel.schedule = #tessel.schedule<kind = cooperative, {{.*}}stream_k = 1>

// A scaled accumulation (block-scaled fp8) whose k-loop runs to m: auto takes warp_specialized
// (cooperative otherwise: R8 in the JIT, rule 8 here); cooperative builds it with whole tiles.
// RUN: sed 's/scf.for %k = %c0 to %K step/scf.for %k = %c0 to %m step/' %inputs/gemm_blockscale_128x128_fp8.mlir | tessel-opt -tessel-select-schedule | FileCheck %s --check-prefix=SCALED
// RUN: sed 's/scf.for %k = %c0 to %K step/scf.for %k = %c0 to %m step/' %inputs/gemm_blockscale_128x128_fp8.mlir | tessel-opt -tessel-select-schedule="schedule=cooperative" | FileCheck %s --check-prefix=SCALEDCOOP
// SCALED: tessel.schedule = #tessel.schedule<kind = warp_specialized
// SCALEDCOOP: tessel.schedule = #tessel.schedule<kind = cooperative, tile = [128, 128, 128], stages = {{[0-9]+}}, warpgroups = 2, swizzle = 128>
