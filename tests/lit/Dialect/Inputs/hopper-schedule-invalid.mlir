// The plan ops' verifiers (tests/lit/Dialect/hopper-schedule.mlir runs this file).

func.func @one_stage() {
  // expected-error @+1 {{'hopper.ring' op ring 'ab' needs at least 2 stages, got 1}}
  hopper.ring "ab" stages 1 copy "tma" stage_bytes 32768
  return
}

// -----

func.func @cluster_needs_persistent() {
  // expected-error @+1 {{'hopper.tile_scheduler' op clusters and stream_k need the persistent tile scheduler}}
  %x, %y, %z = hopper.tile_scheduler "grid" raster_group 0 cluster [2, 1]
  return
}

// -----

func.func @stream_k_cluster() {
  // expected-error @+1 {{'hopper.tile_scheduler' op stream_k needs a 1x1 cluster (a cluster's CTAs walk tiles in lockstep)}}
  %x, %y, %z = hopper.tile_scheduler "persistent" raster_group 8 cluster [1, 2] stream_k
  return
}

// -----

func.func @registers() {
  // expected-error @+1 {{'hopper.warp_specialize' op register budgets exceed the 65536-register file: (40 + 3 x 160) x 128}}
  hopper.warp_specialize producer "warpgroup" regs 40 {
  } consumers 3 regs 160 order "cooperative" {
  }
  return
}

// -----

func.func @pingpong_two() {
  // expected-error @+1 {{'hopper.warp_specialize' op order "pingpong" needs a producer warpgroup and 2 consumers}}
  hopper.warp_specialize producer "warpgroup" regs 40 {
  } consumers 3 regs 152 order "pingpong" {
  }
  return
}

// -----

func.func @wgmma_m64() {
  // expected-error @+1 {{'hopper.mma_schedule' op wgmma shape must be m64nNk16 (k32 for fp8), got m128}}
  hopper.mma_schedule "wgmma" shape [128, 128, 16] k_steps 4 row_blocks 1 wait_depth 1
  return
}
