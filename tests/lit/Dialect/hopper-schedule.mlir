// RUN: tessel-opt %s | tessel-opt | FileCheck %s
// RUN: tessel-opt %S/Inputs/hopper-schedule-invalid.mlir -split-input-file -verify-diagnostics

// The plan ops round-trip.
// CHECK-LABEL: func.func @plan
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = hopper.tile_scheduler "persistent" raster_group 8 cluster [1, 1] stream_k
// CHECK: hopper.ring "ab" stages 4 copy "tma" stage_bytes 32768
// CHECK: hopper.warp_specialize producer "warpgroup" regs 40 {
// CHECK-NEXT: hopper.produce "ab"
// CHECK-NEXT: } consumers 2 regs 232 order "pingpong" {
// CHECK-NEXT: hopper.consume "ab"
// CHECK-NEXT: hopper.mma_schedule "wgmma" shape [64, 128, 16] k_steps 4 row_blocks 2 wait_depth 1
// CHECK-NEXT: hopper.epilogue staging_buffers 2 fixup "stream_k"
// CHECK: hopper.resources threads 384 smem_bytes 163904 {arrivals = {empty = 1 : i64}, barriers = {consumer = array<i64: 1, 2>}, offsets = {a = 0 : i64, b = 65536 : i64}}
// CHECK: hopper.async_load %arg0[%{{.*}}, %{{.*}}] into "ab"[0] {box = array<i64: 64, 128>, boxes = 1 : i64, copy = "tma", multicast = 1 : i64, swizzle = 128 : i64} : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
func.func @plan(%A: !tessel.ref<2 x bf16>) {
  %x, %y, %z = hopper.tile_scheduler "persistent" raster_group 8 cluster [1, 1] stream_k
  hopper.ring "ab" stages 4 copy "tma" stage_bytes 32768
  hopper.warp_specialize producer "warpgroup" regs 40 {
    hopper.produce "ab"
  } consumers 2 regs 232 order "pingpong" {
    hopper.consume "ab"
    hopper.mma_schedule "wgmma" shape [64, 128, 16] k_steps 4 row_blocks 2 wait_depth 1
    hopper.epilogue staging_buffers 2 fixup "stream_k"
  }
  hopper.resources threads 384 smem_bytes 163904 {arrivals = {empty = 1 : i64}, barriers = {consumer = array<i64: 1, 2>}, offsets = {a = 0 : i64, b = 65536 : i64}}
  %c0 = arith.constant 0 : index
  %a = hopper.async_load %A[%x, %c0] into "ab"[0] {box = array<i64: 64, 128>, boxes = 1 : i64, copy = "tma", multicast = 1 : i64, swizzle = 128 : i64} : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
  return
}
