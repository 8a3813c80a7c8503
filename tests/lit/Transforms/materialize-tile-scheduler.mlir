// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=tma" -tessel-materialize-tile-scheduler | FileCheck %s --check-prefix=GRID
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=multistage" -tessel-materialize-tile-scheduler | FileCheck %s --check-prefix=RASTER
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=cooperative raster-group=4" -tessel-materialize-tile-scheduler | FileCheck %s --check-prefix=STREAMK
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=cooperative cluster=2x1" -tessel-materialize-tile-scheduler | FileCheck %s --check-prefix=CLUSTER
// RUN: tessel-opt %s -tessel-materialize-tile-scheduler | FileCheck %s --check-prefix=EW

// tma: one CTA per tile in launch order; the program ids are the scheduler's.
// GRID: %[[X:.*]], %[[Y:.*]], %{{.*}} = hopper.tile_scheduler "grid" raster_group 0 cluster [1, 1]{{$}}
// GRID-NOT: tessel.program_id
// GRID: arith.muli %[[X]], %c128
// GRID: arith.muli %[[Y]], %c256

// multistage: one CTA per tile, the launch order remapped into raster groups of 8.
// RASTER: hopper.tile_scheduler "grid" raster_group 8 cluster [1, 1]{{$}}

// cooperative: persistent, stream-K by default, the schedule's raster group.
// STREAMK: hopper.tile_scheduler "persistent" raster_group 4 cluster [1, 1] stream_k{{$}}

// A 2x1 cluster walks pairs of tiles along program_id 0, whole tiles.
// CLUSTER: hopper.tile_scheduler "persistent" raster_group 8 cluster [2, 1]{{$}}

// Kernels without a dot have no schedule and keep their program ids.
// EW-NOT: hopper.tile_scheduler
// EW: tessel.program_id 0
func.func @add(%X: !tessel.ref<1 x f32>, %Y: !tessel.ref<1 x f32>) attributes {tessel.kernel} {
  %c256 = arith.constant 256 : index
  %p = tessel.program_id 0
  %o = arith.muli %p, %c256 : index
  %x = tessel.load %X[%o] : !tessel.ref<1 x f32> -> tensor<256xf32>
  tessel.store %x, %Y[%o] : tensor<256xf32>, !tessel.ref<1 x f32>
  return
}
