// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s
// RUN: tessel-opt %s -tessel-lower-to-nvvm | FileCheck %s --check-prefix=EW
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule -tessel-plan-pipeline -tessel-lower-to-nvvm=bounded-waits=true | FileCheck %s --check-prefix=BOUNDED
// RUN: tessel-opt %inputs/gemm_128x256.mlir -tessel-select-schedule -tessel-plan-pipeline -tessel-lower-to-nvvm=bounded-waits=true -tessel-convert-hopper-to-nvvm | FileCheck %s --check-prefix=DEBUG
// RUN: tessel-opt %inputs/gemm_alpha_beta_f32_128x192.mlir -tessel-select-schedule="schedule=cooperative" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=PREFETCH
// RUN: tessel-opt %inputs/gemm_alpha_beta_128x192.mlir -tessel-select-schedule="schedule=pingpong" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=CHUNK
// RUN: tessel-opt %inputs/gemm_alpha_beta_128x192.mlir -tessel-select-schedule="schedule=cooperative" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=CHUNK
// RUN: tessel-opt %inputs/gemm_alpha_beta_128x128.mlir -tessel-select-schedule="schedule=pingpong" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=OPERAND
// RUN: sed 's/%C\[%m, %n\]/%C[%c0, %n]/' %inputs/gemm_128x256.mlir | tessel-opt -tessel-select-schedule -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=NOCLIP
// RUN: tessel-opt %inputs/grouped_gemm_128x128.mlir -tessel-select-schedule="schedule=cooperative" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=GROUPED
// RUN: tessel-opt %inputs/gemm_triangular_128x128.mlir -tessel-select-schedule="schedule=pingpong" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=TRIPS
// RUN: tessel-opt %inputs/gemm_triangular_128x128.mlir -tessel-select-schedule="schedule=pingpong" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=ROTATED
// RUN: tessel-opt %inputs/gemm_128x128.mlir -tessel-select-schedule="schedule=tma" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=INLINE
// RUN: tessel-opt %inputs/gemm_128x128.mlir -tessel-select-schedule="schedule=warp_specialized" -tessel-plan-pipeline -tessel-lower-to-nvvm | FileCheck %s --check-prefix=WSONE

// A non-persistent CTA's one tile is built without a loop around it (a one-trip loop let LLVM's
// LICM hoist the epilogue's addresses above the mainloop, where they spilled).
// WSONE: hopper.setmaxnreg decrease to 40
// WSONE: scf.for
// WSONE-NOT: scf.for
// WSONE: hopper.tma.load
// WSONE: hopper.setmaxnreg increase to 232
// WSONE-NOT: scf.for
// WSONE: scf.for {{.*}} iter_args

// The tma schedule: one extern dynamic shared base, TMA descriptors as byval
// grid_constant params, a parity-waited mbarrier ring (hopper ops), wgmma from
// descriptors.
// CHECK: llvm.mlir.global external @__tessel_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.func @gemm(
// CHECK-SAME: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}
// CHECK-SAME: nvvm.kernel
// CHECK-SAME: nvvm.reqntid = array<i32: 256, 1, 1>
// CHECK-SAME: tessel.params = ["ptr:0", "size:0:0", "size:0:1", "stride:0:0", "stride:0:1", {{.*}}, "tma:0:64x128:128:r", "tma:1:64x256:128:r"]
// CHECK-SAME: tessel.shared_bytes = 196672
// CHECK: hopper.mbarrier.init %{{.*}}, %{{.*}}
// CHECK: hopper.fence.mbarrier_init
// CHECK: bar.sync 0
// C written at row 0 whatever the tile: A's rows past M would reach stored rows, so A keeps
// its whole box (TMA's zero fill); B, whose offset %n the store uses, is clipped.
// NOCLIP: tessel.params = [{{.*}}"tma:0:64x128:128", "tma:1:64x256:128:r"]

// A stage expects the bytes of boxes clipped to the tensors' rows (M < 128, N < 256
// load no zero-filled rows), at most the whole 48 KiB stage:
// CHECK: arith.minsi %{{.*}}, %c128_i64 : i64
// CHECK: arith.minsi %{{.*}}, %c256_i64 : i64
// CHECK: hopper.mbarrier.arrive_expect_tx %{{.*}}, %{{.*}} {max_bytes = 49152 : i64, ring = "full"}
// CHECK: hopper.tma.load %arg{{[0-9]+}}[%{{.*}}, %{{.*}}] -> %{{.*}}, %{{.*}} : !llvm.ptr
// CHECK: scf.for
// CHECK: hopper.mbarrier.wait %{{.*}}, %{{.*}} stage %{{.*}} {ring = "full"}
// CHECK: hopper.wgmma.fence
// CHECK-COUNT-4: hopper.wgmma %{{.*}} shape [64, 256, 16] "bf16" :
// CHECK: hopper.wgmma.commit
// CHECK: hopper.wgmma.wait 1
// CHECK: hopper.mbarrier.arrive
// CHECK: hopper.wgmma.wait 0
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: llvm.store

// TESSEL_DEBUG: waits are marked bounded; after conversion they give up after 4 s of
// %globaltimer, print the ring, stage, parity, and trap.
// BOUNDED: hopper.mbarrier.wait %{{.*}}, %{{.*}} stage %{{.*}} {bounded, ring = "full"}
// DEBUG-DAG: llvm.func @vprintf(!llvm.ptr, !llvm.ptr) -> i32
// DEBUG-DAG: llvm.mlir.global internal constant @__tessel_timeout_full("tessel: kernel 'gemm': thread %d of block (%d, %d, %d) waited 4 s on mbarrier full[%d] for parity %d
// DEBUG: %globaltimer
// DEBUG: llvm.call @vprintf
// DEBUG: "trap;"

// Elementwise kernels: blocked layout, bounds-checked loads (predicated: 0 outside the tensor)
// and stores.
// EW-LABEL: llvm.func @axpy
// EW-SAME: nvvm.reqntid = array<i32: 128, 1, 1>
// EW: nvvm.read.ptx.sreg.ctaid.x
// EW: arith.cmpi ult
// EW: llvm.inline_asm {{.*}}"{\0A.reg .pred p;\0Asetp.ne.b32 p, $2, 0;\0Amov.b32 $0, 0;\0A@p ld.global.b32 $0, [$1];\0A}", "=r,l,r,~{memory}"
// EW: arith.mulf
// EW: llvm.store
func.func @axpy(%X: !tessel.ref<1 x f32>, %Y: !tessel.ref<1 x f32>) attributes {tessel.kernel} {
  %c1024 = arith.constant 1024 : index
  %p = tessel.program_id 0
  %o = arith.muli %p, %c1024 : index
  %x = tessel.load %X[%o] : !tessel.ref<1 x f32> -> tensor<1024xf32>
  %c2 = arith.constant dense<2.0> : tensor<1024xf32>
  %y = tessel.load %Y[%o] : !tessel.ref<1 x f32> -> tensor<1024xf32>
  %m = arith.mulf %x, %c2 : tensor<1024xf32>
  %s = arith.addf %m, %y : tensor<1024xf32>
  tessel.store %s, %Y[%o] : tensor<1024xf32>, !tessel.ref<1 x f32>
  return
}

// A tile used three times (x^3 + x) is loaded once per element written: 1024
// elements on 128 threads, 8 loads.
// EW-LABEL: llvm.func @x_three_times
// EW-COUNT-8: @p ld.global.b32
// EW-NOT: @p ld.global.b32
// EW: llvm.return
func.func @x_three_times(%X: !tessel.ref<1 x f32>, %Y: !tessel.ref<1 x f32>) attributes {tessel.kernel} {
  %c1024 = arith.constant 1024 : index
  %p = tessel.program_id 0
  %o = arith.muli %p, %c1024 : index
  %x = tessel.load %X[%o] : !tessel.ref<1 x f32> -> tensor<1024xf32>
  %x2 = arith.mulf %x, %x : tensor<1024xf32>
  %x3 = arith.mulf %x2, %x : tensor<1024xf32>
  %s = arith.addf %x3, %x : tensor<1024xf32>
  tessel.store %s, %Y[%o] : tensor<1024xf32>, !tessel.ref<1 x f32>
  return
}

// An epilogue operand prefetched into L2 (tessel-lower-epilogue rule 8; an f32
// C0, which rules 6 and 7 do not take): an optional descriptor of the whole 128 x 192 tile and its TMA-usable flag;
// the producer prefetches it after issuing the tile's k-stages, when usable.
// PREFETCH: tessel.params = [{{.*}}"tmastore:5:64x64:128", "tmaprefetch:4:192x128:0", "tmaok:5", "tmaok:4"
// PREFETCH: hopper.tma.load
// PREFETCH: scf.if
// PREFETCH-NEXT: hopper.tma.prefetch %{{.*}}[%{{.*}}, %{{.*}}] : !llvm.ptr
// The consumers read C0 with predicated 32-bit loads (0 outside the tensor, no branch).
// PREFETCH: llvm.inline_asm has_side_effects {{.*}}@p ld.global.b32 $0, [$1];{{.*}}"=r,l,r,~{memory}"

// An epilogue operand read through shared memory (tessel-lower-epilogue rule
// 6; Epilogue.cpp rules O1-O3): the staging chunks' boxes; one barrier per
// consumer; each consumer's thread 0 loads its 2 x 2 chunks when it starts a
// tile (the bytes of the usable operands, at most 32 KiB), every consumer
// thread waits before the epilogue, which reads the fragments with ldmatrix.
// OPERAND: tessel.params = [{{.*}}"tmastore:5:64x64:128", "tmaoperand:4:64x64:128", "tmaok:5", "tmaok:4"
// OPERAND-SAME: tessel.ring_arrivals = {empty = 1 : i64, full = 1 : i64, operand = 1 : i64}
// OPERAND-COUNT-2: hopper.mbarrier.init %{{.*}}, %{{.*}} {ring = "operand"}
// OPERAND: hopper.mbarrier.arrive_expect_tx %[[BAR:.*]], %{{.*}} {max_bytes = 32768 : i64, ring = "operand"}
// OPERAND-COUNT-4: hopper.tma.load %{{.*}}[%{{.*}}, %{{.*}}] -> %{{.*}}, %[[BAR]] bytes 8192 : !llvm.ptr
// OPERAND: hopper.wgmma
// OPERAND: hopper.mbarrier.wait %{{.*}}, %{{.*}} stage %{{.*}} {ring = "operand"}
// OPERAND: hopper.ldmatrix %{{.*}} + 0 : !llvm.struct<(i32, i32, i32, i32)>
// OPERAND: hopper.stmatrix

// An epilogue operand chunk by chunk through the staging buffers (rule 7;
// Epilogue.cpp rules O4-O6; pingpong and cooperative alike): the chunk descriptor; the producer prefetches the
// tile's 2 x 3 chunks into L2; per staged chunk, after rule E1's barrier, the
// consumer's thread 0 loads the chunk into the staging buffer (unless the chunk
// before issued it) and waits on its arrival's state, a barrier, ldmatrix from
// that buffer, stmatrix into it.
// CHUNK: "tmastore:5:64x64:128", "tmaoperand:4:64x64:128", "tmaok:5", "tmaok:4"
// CHUNK-COUNT-6: hopper.tma.prefetch %{{.*}}[%{{.*}}, %{{.*}}] : !llvm.ptr
// (wait 0 in cooperative 128x192: an odd number of chunks per tile, rule E1)
// CHUNK: hopper.tma.store.wait {{[01]}} read
// CHUNK: hopper.named_barrier
// CHUNK: %[[ST:.*]] = hopper.mbarrier.arrive_expect_tx %[[BAR:.*]], %{{.*}} {ring = "operand"} -> i64
// CHUNK-NEXT: hopper.tma.load %{{.*}}[%{{.*}}, %{{.*}}] -> %{{.*}}, %[[BAR]] bytes 8192 : !llvm.ptr
// CHUNK: hopper.mbarrier.wait_state %{{.*}}, %{{.*}} stage %{{.*}} {ring = "operand"}
// CHUNK: hopper.named_barrier
// The next chunk's load into the other buffer before this chunk's math (rule O7).
// CHUNK: hopper.tma.store.wait 0 read
// CHUNK: hopper.mbarrier.arrive_expect_tx %{{.*}}, %{{.*}} {ring = "operand"} -> i64
// CHUNK: hopper.tma.load
// CHUNK: hopper.ldmatrix
// CHUNK: hopper.stmatrix

// A grouped GEMM's B offset is read from a table at the tile's program id
// (tessel.load_element): in a persistent schedule the producer reads it once
// per tile it walks, before the tile's k-loop (readTileTables, Ring.cpp), and
// the B copy takes that group as its outermost coordinate.
// GROUPED: scf.for %{{.*}} : i32 {
// GROUPED: %[[G:.*]] = llvm.inline_asm has_side_effects {{.*}}ld.global.b32
// GROUPED-NEXT: %[[GI:.*]] = llvm.bitcast %[[G]] : i32 to i32
// GROUPED: scf.for %{{.*}} : i32 {
// GROUPED-NOT: ld.global.b32
// GROUPED: hopper.tma.load %arg21[%{{.*}}, %{{.*}}, %[[GI]]]

// A trip count per tile in a persistent schedule (a triangular GEMM, pingpong):
// each role's tile loop carries the ring position of its unit's first k-step,
// the running sum of the earlier units' counts. The producer adds its unit's;
// consumer 1 starts after unit 0's, and each consumer adds its own unit's and
// the next one's, which the other consumer takes.
// TRIPS: scf.for %{{.*}} step %c1_i32{{.*}} iter_args(%[[PB:.*]] = %c0_i32{{.*}}) -> (i32)
// TRIPS: hopper.tma.load
// TRIPS: hopper.tma.load
// TRIPS-NEXT: }
// TRIPS-NEXT: %[[PN:.*]] = arith.addi %[[PB]], %{{.*}} : i32
// TRIPS-NEXT: scf.yield %[[PN]] : i32
// TRIPS: %[[B0:.*]] = scf.if %{{.*}} -> (i32)
// TRIPS: scf.for %{{.*}} step %c2_i32 iter_args(%{{.*}} = %[[B0]]) -> (i32)
// TRIPS: %[[NEXT:.*]] = scf.if %{{.*}} -> (i32)
// TRIPS: %[[OTHER:.*]] = arith.maxsi %{{.*}}, %{{.*}} : i32
// TRIPS-NEXT: %[[BOTH:.*]] = arith.addi %[[OWN:.*]], %[[OTHER]] : i32
// TRIPS-NEXT: scf.yield %[[BOTH]] : i32
// TRIPS-NEXT: } else {
// TRIPS-NEXT: scf.yield %[[OWN]] : i32
// TRIPS: scf.yield %[[NEXT]] : i32

// The tma schedule (inline producer) pins its zeroed accumulator before the
// mainloop with an empty asm that rewrites every register, as the consumers of
// the warp-specialized schedules do: otherwise LLVM may sink the zeroing
// between the first k-step's wgmmas (ptxas C7515/C7519: wgmma serialized).
// The same walk is rotated: unit i of CTA c is tile i*S + (c + i) mod S (S
// CTAs), so that tiles of uneven work with a period dividing S spread over all
// CTAs; the unit count is the full passes plus the last, partial pass's tile
// if this CTA's slot in it is below the remainder.
// ROTATED: %[[NT:.*]] = nvvm.read.ptx.sreg.nctaid.x : i32
// ROTATED-NEXT: %[[S:.*]] = arith.divui %[[NT]], %{{.*}} : i32
// ROTATED: arith.divui %{{.*}}, %[[S]] : i32
// ROTATED-NEXT: %[[FULL:.*]] = arith.divui %[[T:.*]], %[[S]] : i32
// ROTATED-NEXT: %[[REM:.*]] = arith.remui %[[T]], %[[S]] : i32
// ROTATED-NEXT: %[[L:.*]] = arith.addi %[[C:.*]], %[[FULL]] : i32
// ROTATED-NEXT: %[[SLOT:.*]] = arith.remui %[[L]], %[[S]] : i32
// ROTATED-NEXT: %[[IN:.*]] = arith.cmpi ult, %[[SLOT]], %[[REM]] : i32
// ROTATED-NEXT: %[[X:.*]] = arith.extui %[[IN]] : i1 to i32
// ROTATED-NEXT: %[[UNITS:.*]] = arith.addi %[[FULL]], %[[X]] : i32
// ROTATED: scf.for %[[I:.*]] = %{{.*}} to %[[UNITS]] step %{{.*}} iter_args
// ROTATED-NEXT: %[[CI:.*]] = arith.addi %[[C]], %[[I]] : i32
// ROTATED-NEXT: %[[SL:.*]] = arith.remui %[[CI]], %[[S]] : i32
// ROTATED-NEXT: %[[P:.*]] = arith.muli %[[I]], %[[S]] : i32
// ROTATED-NEXT: arith.addi %[[P]], %[[SL]] : i32

// INLINE: %[[Z:.*]] = llvm.inline_asm has_side_effects "", "=f,=f,
// INLINE: scf.for %{{.*}} iter_args(%{{.*}} = %[[Z]])
