// RUN: tessel-opt %inputs/gemm_bias_relu_128x256.mlir -tessel-select-schedule="schedule=cooperative" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=COOP
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=warp_specialized" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=WS
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=tma" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=TMA
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule="schedule=multistage" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=MS
// RUN: tessel-opt %inputs/gemm_alpha_beta_128x128.mlir -tessel-select-schedule="schedule=pingpong" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=C0
// RUN: tessel-opt %inputs/gemm_alpha_beta_128x128.mlir -tessel-select-schedule="schedule=tma" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=C0-TMA
// RUN: tessel-opt %inputs/gemm_128x128_fp8.mlir -tessel-select-schedule="schedule=pingpong" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=FP8
// RUN: tessel-opt %inputs/gemm_alpha_beta_128x192.mlir -tessel-select-schedule="schedule=pingpong" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=C0-CHUNK
// RUN: tessel-opt %inputs/gemm_alpha_beta_128x192.mlir -tessel-select-schedule="schedule=cooperative" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=C0-COOP
// RUN: tessel-opt %inputs/gemm_alpha_beta_f32_128x192.mlir -tessel-select-schedule="schedule=cooperative" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=C0-L2
// RUN: tessel-opt %inputs/gemm_two_operands_64x192.mlir -tessel-select-schedule="schedule=pingpong" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=TWO
// RUN: tessel-opt %inputs/batched_residual_128x128.mlir -tessel-select-schedule="schedule=pingpong" -tessel-materialize-tile-scheduler -tessel-insert-async-copies -tessel-warp-specialize -tessel-schedule-mma -tessel-lower-epilogue | FileCheck %s --check-prefix=BATCHED

// Cooperative (stream-K by default): the fixup, then a TMA store through the
// staging buffers.
// COOP: hopper.epilogue staging_buffers 2 fixup "stream_k"
// COOP: tessel.store {{.*}} {hopper.store = "tma_store"}

// WS: hopper.epilogue staging_buffers 2 fixup "none"
// WS: tessel.store {{.*}} {hopper.store = "tma_store"}

// An e4m3 output of 128 bytes per row (one whole chunk): staged too.
// FP8: tessel.store {{.*}} {hopper.store = "tma_store"} : tensor<128x128xf8E4M3FN>

// TMA: hopper.epilogue staging_buffers 0 fixup "none"
// TMA: tessel.store {{.*}} {hopper.store = "register_pairs"}

// MS: hopper.epilogue staging_buffers 0 fixup "none"
// MS: tessel.store {{.*}} {hopper.store = "fragments"}

// Rule 6: an M x N epilogue operand of a warp-specialized schedule goes
// through shared memory where its tiles fit beside the ring (pingpong
// 128x128x64, 4 stages: 2 x 32 KiB); 128x192's (2 x 48 KiB beside 4 stages
// of 40 KiB) do not: rule 7 sends it chunk by chunk through the staging
// buffers in pingpong, rule 8 has the producer prefetch it into L2 in
// cooperative; schedule tma has no producer warp.
// C0: tessel.load %{{.*}}[%{{.*}}, %{{.*}}] {hopper.prefetch = "tma_smem"} : !tessel.ref<2 x bf16> -> tensor<128x128xbf16>
// C0-CHUNK: tessel.load %{{.*}}[%{{.*}}, %{{.*}}] {hopper.prefetch = "tma_chunk"} : !tessel.ref<2 x bf16> -> tensor<128x192xbf16>
// C0-COOP: tessel.load %{{.*}}[%{{.*}}, %{{.*}}] {hopper.prefetch = "tma_chunk"} : !tessel.ref<2 x bf16> -> tensor<128x192xbf16>
// C0-L2: tessel.load %{{.*}}[%{{.*}}, %{{.*}}] {hopper.prefetch = "tma_l2"} : !tessel.ref<2 x f32> -> tensor<128x192xf32>
// C0-TMA-NOT: hopper.prefetch
// Rule 7 never beside a rule-6 operand (they would share the consumer's barrier).
// TWO: tessel.load %{{.*}}[%{{.*}}, %{{.*}}] {hopper.prefetch = "tma_smem"} : !tessel.ref<2 x bf16> -> tensor<64x192xbf16>
// TWO: tessel.load %{{.*}}[%{{.*}}, %{{.*}}] {hopper.prefetch = "tma_l2"} : !tessel.ref<2 x bf16> -> tensor<64x192xbf16>

// Rules 1 and 6 for one matrix of a batched (rank-3) tensor: 3-d TMA boxes.
// BATCHED: tessel.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] {hopper.prefetch = "tma_smem"} : !tessel.ref<3 x bf16> -> tensor<128x128xbf16>
// BATCHED: tessel.store {{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] {hopper.store = "tma_store"} : tensor<128x128xbf16>, !tessel.ref<3 x bf16>
