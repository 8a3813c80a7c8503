// Hand-edited plans (a dump's stage 08 replayed with tessel-opt) that the kernel builder cannot
// build are compile errors, not crashes (both crashed tessel-opt before; found by
// scripts/fuzz-compile --mutate): a store path changed to 'reduce_atomic' for a store that is not
// a reduction, and a multistage warp tile that does not cover the CTA tile. Edits that compiled to
// a wrong kernel are errors too: k_steps that skip part of BK, row blocks a warpgroup does not
// hold, and a wait depth that releases a stage wgmma still reads. So are a ring whose stage count
// or stage size no longer matches the shared-memory layout of stage 08 (2^31 - 1 stages hung
// tessel-opt; 6 under a layout for 4 built a kernel whose last stages overlap the staging buffers),
// and, found by reading the builder, an epilogue operand path the builder does not have, or
// 'tma_chunk' (whose chunks must be the store's) outside pingpong, threads that are not the roles', a raster group of 0 for a
// tile walk that divides by it, a persistent scheduler for a schedule that computes one tile per
// CTA, a schedule tile that is not the dot's, and named barrier ids shared between kinds.
// RUN: tessel-opt %inputs/gemm_alpha_beta_128x128.mlir --tessel-select-schedule="schedule=pingpong" --tessel-plan-pipeline \
// RUN:   | sed -e 's/"tma_smem"/"tma_fast"/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=OPATH
// RUN: tessel-opt %inputs/gemm_two_operands_64x192.mlir --tessel-select-schedule="schedule=pingpong" --tessel-plan-pipeline \
// RUN:   | sed -e 's/"tma_l2"/"tma_chunk"/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=OCHUNK
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=cooperative" --tessel-plan-pipeline \
// RUN:   | sed -e 's/hopper.store = "tma_store"/hopper.store = "reduce_atomic"/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=PATH
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=cooperative" --tessel-plan-pipeline \
// RUN:   | sed -e 's/hopper.store = "tma_store"/hopper.store = "fragments"/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=FRAGMENTS
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=multistage" --tessel-plan-pipeline \
// RUN:   | sed -e 's/warp_tile = array<i64: 64, 64>/warp_tile = array<i64: 2, 64>/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=cooperative" --tessel-plan-pipeline \
// RUN:   | sed -e 's/k_steps 4/k_steps 3/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=KSTEPS
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=cooperative" --tessel-plan-pipeline \
// RUN:   | sed -e 's/row_blocks 1/row_blocks 2/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=ROWS
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=cooperative" --tessel-plan-pipeline \
// RUN:   | sed -e 's/wait_depth 1/wait_depth 2/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=WAIT
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=cooperative" --tessel-plan-pipeline \
// RUN:   | sed -e 's/hopper.mma_schedule "wgmma"/hopper.mma_schedule "mma.sync"/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=INSTR
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=cooperative" --tessel-plan-pipeline \
// RUN:   | sed -e 's/hopper.ring "ab" stages 4/hopper.ring "ab" stages 6/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=LAYOUT
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=cooperative" --tessel-plan-pipeline \
// RUN:   | sed -e 's/hopper.ring "ab" stages 4/hopper.ring "ab" stages 2147483647/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=multistage" --tessel-plan-pipeline \
// RUN:   | sed -e 's/hopper.ring "ab" stages \([0-9]*\) copy "cp.async" stage_bytes 32768/hopper.ring "ab" stages \1 copy "cp.async" stage_bytes 16384/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=BYTES
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=cooperative" --tessel-plan-pipeline \
// RUN:   | sed -e 's/hopper.resources threads 384/hopper.resources threads 256/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=multistage" --tessel-plan-pipeline \
// RUN:   | sed -e 's/raster_group 8/raster_group 0/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=RASTER
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=tma" --tessel-plan-pipeline \
// RUN:   | sed -e 's/hopper.tile_scheduler "grid"/hopper.tile_scheduler "persistent"/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=WALK
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=pingpong" --tessel-plan-pipeline \
// RUN:   | sed -e 's/tile = \[128, 128, 64\]/tile = [128, 64, 64]/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=TILE
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=pingpong" --tessel-plan-pipeline \
// RUN:   | sed -e 's/turn = array<i64: 3, 4>/turn = array<i64: 2, 3>/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=BARRIER
// RUN: tessel-opt %inputs/gemm_128x128.mlir --tessel-select-schedule="schedule=cooperative" --tessel-plan-pipeline \
// RUN:   | sed -e 's/fixup "stream_k"/fixup "none"/' \
// RUN:   | not tessel-opt --tessel-build-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=EPILOGUE

// PATH: error: store path 'reduce_atomic' is the path of a {combine} store of a tessel.reduce, and the only one: got 'reduce_atomic' for another store
// FRAGMENTS: error: store path 'fragments' is not built for a wgmma kernel (multistage stores take 'fragments', the others do not)
// WARPS: error: an mma.sync schedule's warps must cover the 128x128 tile with warp tiles of 32 or 64 rows and columns, got 2x2 warps of 2x64
// KSTEPS: error: a 128x128x64 tile of 16-bit operands takes wgmma shape [64, 128, 16] with k_steps 4, got [64, 128, 16] with k_steps 3
// ROWS: error: schedule 'cooperative' holds 1 row block(s) of 64 per warpgroup for BM = 128, got row_blocks 2
// WAIT: error: wait_depth must be 0 or 1 (a stage is released once the wgmma group after it was issued and the one reading it retired), got 2
// INSTR: error: a tma ring feeds wgmma, not mma.sync
// LAYOUT: error: the shared-memory layout is not the one of the ring's 6 stages of 32768 bytes
// HUGE: error: 2147483647 stages of 32768 bytes do not fit in shared memory
// BYTES: error: stage_bytes 16384 is not the 32768 bytes of one stage's A and B tiles
// THREADS: error: threads 256 are not the roles' 3 warpgroups x 128 = 384
// RASTER: error: raster_group must be at least 1 for a persistent tile scheduler or a multistage kernel (0 means program ids from %ctaid, for one tile per CTA), got 0
// WALK: error: a persistent tile scheduler needs a producer warpgroup to walk the tiles (schedules tma and multistage compute one tile per CTA)
// TILE: error: the schedule's tile 128x64x64 is not the dot's 128x128 tile with step 64
// BARRIER: error: named barrier ids must be distinct, in [1, 15] and consecutive within a kind (0 is the CTA's bar.sync 0): barriers.turn has 2
// EPILOGUE: error: hopper.epilogue records the tile scheduler's and the roles' decisions (staging_buffers 2 fixup "stream_k" here): edit hopper.tile_scheduler or hopper.warp_specialize instead
// OPATH: error: unknown epilogue operand path 'tma_fast' (expected tma_smem, tma_chunk or tma_l2): run tessel-lower-epilogue
// OCHUNK: error: epilogue operand path 'tma_chunk' is one operand of a kernel without 'tma_smem' operands, read only by stores of 16-bit elements through staging buffers (path 'tma_store'): run tessel-lower-epilogue, which checks its rules
