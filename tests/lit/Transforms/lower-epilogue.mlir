// RUN: tessel-opt %inputs/gemm_bias_relu_128x256.mlir -tessel-select-schedule="schedule=cooperative" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=COOP
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=warp_specialized" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=WS
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=tma" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=TMA
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=multistage" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=MS

// Cooperative (stream-K by default): the fixup, then a TMA store through the
// staging buffers.
// COOP: hopper.epilogue staging_buffers 2 fixup "stream_k"
// COOP: tessel.store {{.*}} {hopper.store = "tma_store"}

// WS: hopper.epilogue staging_buffers 2 fixup "none"
// WS: tessel.store {{.*}} {hopper.store = "tma_store"}

// TMA: hopper.epilogue staging_buffers 0 fixup "none"
// TMA: tessel.store {{.*}} {hopper.store = "register_pairs"}

// MS: hopper.epilogue staging_buffers 0 fixup "none"
// MS: tessel.store {{.*}} {hopper.store = "fragments"}
