// RUN: tessel-opt %s --tessel-convert-hopper-to-nvvm | FileCheck %s

// Each hopper op becomes its PTX, 1:1, in order, operands in order.
// CHECK-LABEL: llvm.func @ring
// CHECK: llvm.inline_asm has_side_effects "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}" %arg1, %arg3
// CHECK: llvm.inline_asm has_side_effects "fence.mbarrier_init.release.cluster;", "~{memory}"
// CHECK: llvm.inline_asm has_side_effects "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r,~{memory}" %arg1, %arg3
// CHECK: llvm.inline_asm has_side_effects "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3}], [$4];", "r,l,r,r,r,~{memory}" %arg2, %arg0, %arg3, %arg3, %arg1
// CHECK: llvm.inline_asm has_side_effects "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [$0], [$1, {$2, $3, $4}], [$5], $6;", "r,l,r,r,r,r,h,~{memory}" %arg2, %arg0, %arg3, %arg3, %arg3, %arg1, %arg4
// CHECK: llvm.inline_asm has_side_effects "cp.async.bulk.prefetch.tensor.2d.L2.global.tile [$0, {$1, $2}];", "l,r,r,~{memory}" %arg0, %arg3, %arg2
// CHECK: llvm.inline_asm has_side_effects "cp.async.bulk.prefetch.tensor.3d.L2.global.tile [$0, {$1, $2, $3}];", "l,r,r,r,~{memory}" %arg0, %arg3, %arg2, %arg1
// CHECK: llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0AWAIT:\0Ambarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\0A@!p bra WAIT;\0A}", "r,r,~{memory}" %arg1, %arg3
// CHECK: llvm.inline_asm has_side_effects "mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}" %arg1
// CHECK-NOT: hopper.
// CHECK: llvm.return
llvm.func @ring(%desc: !llvm.ptr, %bar: i32, %dst: i32, %x: i32, %mask: i16) {
  hopper.mbarrier.init %bar, %x {ring = "full"}
  hopper.fence.mbarrier_init
  hopper.mbarrier.arrive_expect_tx %bar, %x {ring = "full"}
  hopper.tma.load %desc[%x, %x] -> %dst, %bar bytes 16384 : !llvm.ptr
  hopper.tma.load %desc[%x, %x, %x] -> %dst, %bar multicast %mask bytes 8192 : !llvm.ptr
  hopper.tma.prefetch %desc[%x, %dst] : !llvm.ptr
  hopper.tma.prefetch %desc[%x, %dst, %bar] : !llvm.ptr
  hopper.mbarrier.wait %bar, %x stage %x {ring = "full"}
  hopper.mbarrier.arrive %bar {ring = "empty"}
  llvm.return
}

// An arrival that returns its state (a constant byte count as an immediate, a
// computed one as an operand), and a wait on the state, not on a parity.
// CHECK-LABEL: llvm.func @state
// CHECK: %[[S:.*]] = llvm.inline_asm has_side_effects "mbarrier.arrive.expect_tx.shared::cta.b64 $0, [$1], 8192;", "=l,r,~{memory}" %arg0 : (i32) -> i64
// CHECK: llvm.inline_asm has_side_effects "mbarrier.arrive.expect_tx.shared::cta.b64 $0, [$1], $2;", "=l,r,r,~{memory}" %arg0, %arg1 : (i32, i32) -> i64
// CHECK: llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0AWAIT:\0Ambarrier.try_wait.shared::cta.b64 p, [$0], $1;\0A@!p bra WAIT;\0A}", "r,l,~{memory}" %arg0, %[[S]]
// CHECK-NOT: hopper.
llvm.func @state(%bar: i32, %x: i32) {
  %bytes = arith.constant 8192 : i32
  %st = hopper.mbarrier.arrive_expect_tx %bar, %bytes {ring = "operand"} -> i64
  %st2 = hopper.mbarrier.arrive_expect_tx %bar, %x {ring = "operand"} -> i64
  hopper.mbarrier.wait_state %bar, %st stage %x {ring = "operand"}
  llvm.return
}

// A bounded wait (TESSEL_DEBUG): the timed loop, then the report and trap in an scf.if.
// CHECK-LABEL: llvm.func @bounded
// CHECK: %globaltimer
// CHECK: scf.if
// CHECK: llvm.call @vprintf
// CHECK: "trap;"
llvm.func @bounded(%bar: i32, %x: i32) {
  hopper.mbarrier.wait %bar, %x stage %x {bounded, ring = "empty"}
  llvm.return
}

// The same for a wait on an arrival's state.
// CHECK-LABEL: llvm.func @bounded_state
// CHECK: mbarrier.try_wait.shared::cta.b64
// CHECK: %globaltimer
// CHECK: scf.if
// CHECK: llvm.call @vprintf
// CHECK: "trap;"
llvm.func @bounded_state(%bar: i32, %st: i64, %x: i32) {
  hopper.mbarrier.wait_state %bar, %st stage %x {bounded, ring = "operand"}
  llvm.return
}


// CHECK-LABEL: llvm.func @roles
// CHECK: "setmaxnreg.dec.sync.aligned.u32 40;", "~{memory}"
// CHECK: "setmaxnreg.inc.sync.aligned.u32 232;", "~{memory}"
// CHECK: "bar.sync $0, 128;", "r,~{memory}" %arg1
// CHECK: "bar.arrive $0, 256;", "r,~{memory}" %arg1
// CHECK: "{\0A.reg .b32 remote;\0Amapa.shared::cluster.u32 remote, $0, $1;\0Ambarrier.arrive.shared::cluster.b64 _, [remote];\0A}", "r,r,~{memory}" %arg1, %arg1
// CHECK: "barrier.cluster.arrive.release;\0Abarrier.cluster.wait.acquire;", "~{memory}"
// CHECK: "prefetch.tensormap [$0];", "l,~{memory}" %arg0
// CHECK: "stmatrix.sync.aligned.m8n8.x4.shared.b16 [$0], {$1, $2, $3, $4};", "r,r,r,r,r,~{memory}"
// CHECK: "fence.proxy.async.shared::cta;", "~{memory}"
// CHECK: "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$0, {$1, $2}], [$3];", "l,r,r,r,~{memory}" %arg0, %arg1, %arg1, %arg1
// CHECK: "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [$0, {$1, $2, $3}], [$4];", "l,r,r,r,r,~{memory}" %arg0, %arg1, %arg1, %arg2, %arg1
// CHECK: "cp.async.bulk.commit_group;", "~{memory}"
// CHECK: "cp.async.bulk.wait_group.read 1;", "~{memory}"
// CHECK: "cp.async.bulk.wait_group 0;", "~{memory}"
// CHECK-NOT: hopper.
llvm.func @roles(%desc: !llvm.ptr, %x: i32, %z: i32) {
  hopper.setmaxnreg decrease to 40
  hopper.setmaxnreg increase to 232
  hopper.named_barrier sync %x, 128
  hopper.named_barrier arrive %x, 256
  hopper.mbarrier.arrive_cluster %x, %x {ring = "empty"}
  hopper.cluster.sync
  hopper.prefetch_tensormap %desc : !llvm.ptr
  hopper.stmatrix %x, %x, %x, %x, %x
  hopper.fence.proxy_async
  hopper.tma.store %x -> %desc[%x, %x] : !llvm.ptr
  hopper.tma.store %x -> %desc[%x, %x, %z] : !llvm.ptr
  hopper.tma.store.commit
  hopper.tma.store.wait 1 read
  hopper.tma.store.wait 0
  llvm.return
}

// wgmma becomes the upstream nvvm ops (the transpose immediates from the MN-major flags).
// CHECK-LABEL: llvm.func @wgmma
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async %arg0, %arg1, %arg2, <m = 64, n = 8, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <col>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK-NOT: hopper.
llvm.func @wgmma(%da: i64, %db: i64, %acc: !llvm.struct<(f32, f32, f32, f32)>) -> !llvm.struct<(f32, f32, f32, f32)> {
  hopper.wgmma.fence
  %d = hopper.wgmma %da, %db, %acc shape [64, 8, 16] "bf16" a_mn_major : !llvm.struct<(f32, f32, f32, f32)>
  hopper.wgmma.commit
  hopper.wgmma.wait 1
  llvm.return %d : !llvm.struct<(f32, f32, f32, f32)>
}

// fp8: A's and B's types from `type` / `type_b`, no transpose (row A, col B).
// CHECK-LABEL: llvm.func @wgmma_fp8
// CHECK: nvvm.wgmma.mma_async %arg0, %arg1, %arg2, <m = 64, n = 8, k = 32>, D[<f32>, <one>], A[<e4m3>, <one>, <row>], B[<e5m2>, <one>, <col>]
llvm.func @wgmma_fp8(%da: i64, %db: i64, %acc: !llvm.struct<(f32, f32, f32, f32)>) -> !llvm.struct<(f32, f32, f32, f32)> {
  %d = hopper.wgmma %da, %db, %acc shape [64, 8, 32] "e4m3", "e5m2" : !llvm.struct<(f32, f32, f32, f32)>
  llvm.return %d : !llvm.struct<(f32, f32, f32, f32)>
}

// Multistage's copies, fragment loads and MMAs (mma.sync without side effects).
// CHECK-LABEL: llvm.func @multistage
// CHECK: llvm.inline_asm has_side_effects "cp.async.cg.shared.global [$0+2048], [$1], 16;", "r,l,~{memory}" %arg0, %arg1
// CHECK: llvm.inline_asm has_side_effects "cp.async.cg.shared.global [$0+0], [$1], 16, $2;", "r,l,r,~{memory}" %arg0, %arg1, %arg2
// CHECK: llvm.inline_asm has_side_effects "cp.async.commit_group;"
// CHECK: llvm.inline_asm has_side_effects "cp.async.wait_group 2;"
// CHECK: llvm.inline_asm has_side_effects "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {$0, $1, $2, $3}, [$4+512];", "=r,=r,=r,=r,r,~{memory}" %arg0
// CHECK: llvm.inline_asm "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};", "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f"
// CHECK-NOT: hopper.
llvm.func @multistage(%dst: i32, %src: !llvm.ptr<1>, %n: i32, %c: f32) -> !llvm.struct<(f32, f32, f32, f32)> {
  hopper.cp_async %src -> %dst + 2048 : !llvm.ptr<1>
  hopper.cp_async %src -> %dst + 0 src_bytes %n : !llvm.ptr<1>
  hopper.cp_async.commit
  hopper.cp_async.wait 2
  %r = hopper.ldmatrix %dst + 512 trans : !llvm.struct<(i32, i32, i32, i32)>
  %d = hopper.mma_sync %n, %n, %n, %n, %n, %n, %c, %c, %c, %c "bf16" : !llvm.struct<(f32, f32, f32, f32)>
  llvm.return %d : !llvm.struct<(f32, f32, f32, f32)>
}
