//===- HopperOps.td - Hopper-level operations --------------*- tablegen -*-===//

#ifndef TESSEL_HOPPER_OPS
#define TESSEL_HOPPER_OPS

include "tessel/Dialect/Hopper/HopperDialect.td"
include "mlir/Dialect/LLVMIR/LLVMOpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "tessel/Dialect/Hopper/HopperScheduleOps.td"

//===----------------------------------------------------------------------===//
// mbarriers (the rings' full / empty barriers)
//===----------------------------------------------------------------------===//

def Hopper_MBarrierInitOp : Hopper_Op<"mbarrier.init"> {
  let summary = "initialise a shared-memory mbarrier with its arrival count";
  let description = [{
    One thread initialises every barrier, before a CTA (or cluster) barrier
    and before any thread arrives or waits on it (DESIGN.md §6). `count` is
    the number of arrivals that complete a phase: 1 for a full barrier (the
    producer's `arrive_expect_tx`), the consumer warpgroups (times the
    cluster's CTAs) for an empty barrier.

    `ring` names the barrier's ring ("full", "empty") for the protocol
    verifier (`tessel-verify-rings`) and for messages.

    ```mlir
    hopper.mbarrier.init %full, %c1 {ring = "full"}
    ```
    PTX: `mbarrier.init.shared::cta.b64 [bar], count;`
  }];
  let arguments = (ins I32:$bar, I32:$count, StrAttr:$ring);
  let assemblyFormat = "$bar `,` $count attr-dict";
}

def Hopper_FenceMBarrierInitOp : Hopper_Op<"fence.mbarrier_init"> {
  let summary = "make barrier initialisation visible to the cluster";
  let description = [{
    After the `mbarrier.init`s of barriers that other CTAs of the cluster
    arrive on (remote releases) or TMA multicast completes on.

    ```mlir
    hopper.fence.mbarrier_init
    ```
    PTX: `fence.mbarrier_init.release.cluster;`
  }];
  let assemblyFormat = "attr-dict";
}

def Hopper_MBarrierArriveOp : Hopper_Op<"mbarrier.arrive"> {
  let summary = "arrive on a shared-memory mbarrier of this CTA";
  let description = [{
    A consumer's release of a ring stage (its empty barrier), or any plain
    arrival. Release semantics at CTA scope (the PTX default): the consumer's
    reads of the stage happen before the producer's refill.

    ```mlir
    hopper.mbarrier.arrive %empty {ring = "empty"}
    ```
    PTX: `mbarrier.arrive.shared::cta.b64 _, [bar];`
  }];
  let arguments = (ins I32:$bar, StrAttr:$ring);
  let assemblyFormat = "$bar attr-dict";
}

def Hopper_MBarrierArriveExpectTxOp : Hopper_Op<"mbarrier.arrive_expect_tx"> {
  let summary = "arrive and expect `bytes` of TMA transactions on the barrier";
  let description = [{
    The producer's arrival on a stage's full barrier: the phase completes when
    this arrival and `bytes` bytes of TMA writes (`complete_tx`) have both
    happened. `bytes` must equal the bytes of every TMA box that completes on
    this barrier (all operands of the stage, the whole stage in a cluster).

    Where a box's rows are clipped to the tensor at launch (a tile taller
    than the tensor: M < BM), `bytes` is computed from the tensor's rows and
    `max_bytes` says what the unclipped boxes deliver, which is what
    tessel-verify-rings checks (rule R5).

    With a result, the op returns the arrival's state, which names the phase
    it arrived on; `hopper.mbarrier.wait_state` waits for that phase without
    a phase count (the epilogue operand chunks of tessel-lower-epilogue rule
    7, whose number per tile varies).

    ```mlir
    hopper.mbarrier.arrive_expect_tx %full, %c32768 {ring = "full"}
    hopper.mbarrier.arrive_expect_tx %full, %bytes {max_bytes = 24576 : i64, ring = "full"}
    %st = hopper.mbarrier.arrive_expect_tx %opbar, %c8192 {ring = "operand"} -> i64
    ```
    PTX: `mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes;` (with a
    result: `mbarrier.arrive.expect_tx.shared::cta.b64 st, [bar], bytes;`, a
    constant `bytes` as an immediate)
  }];
  let arguments = (ins I32:$bar, I32:$bytes, StrAttr:$ring, OptionalAttr<I64Attr>:$max_bytes);
  let results = (outs Optional<I64>:$state);
  let assemblyFormat = "$bar `,` $bytes attr-dict (`->` type($state)^)?";
  let builders = [
    // Without a result (the rings' full barriers).
    OpBuilder<(ins "Value":$bar, "Value":$bytes, "StringAttr":$ring, "IntegerAttr":$max_bytes), [{
      build($_builder, $_state, Type(), bar, bytes, ring, max_bytes);
    }]>
  ];
}

def Hopper_MBarrierWaitStateOp : Hopper_Op<"mbarrier.wait_state"> {
  let summary = "wait until the phase an arrival's `state` names has completed";
  let description = [{
    Spins on `mbarrier.try_wait` with the state an arrival returned
    (`hopper.mbarrier.arrive_expect_tx ... -> i64`): no parity to keep, so a
    thread can wait for its own arrival's phase however many phases came
    before. `ring` names the barrier's ring and `stage` is a number for
    messages (the consumer warpgroup). `bounded` as for `hopper.mbarrier.wait`.

    ```mlir
    hopper.mbarrier.wait_state %opbar, %st stage %c {ring = "operand"}
    ```
    PTX:
    ```
    WAIT: mbarrier.try_wait.shared::cta.b64 p, [bar], st;
          @!p bra WAIT;
    ```
  }];
  let arguments = (ins I32:$bar, I64:$state, I32:$stage, StrAttr:$ring, UnitAttr:$bounded);
  let assemblyFormat = "$bar `,` $state `stage` $stage attr-dict";
}

def Hopper_MBarrierWaitOp : Hopper_Op<"mbarrier.wait"> {
  let summary = "wait until the barrier's phase with `parity` has completed";
  let description = [{
    Spins on `mbarrier.try_wait.parity` (which itself suspends the thread for
    a while in hardware). `ring` names the barrier's ring and `stage` its
    stage, for messages. With `bounded` (TESSEL_DEBUG), the wait gives up
    after 4 s of `%globaltimer`, prints the kernel, thread, block, ring, stage
    and parity with `vprintf`, and traps: a hang becomes an error.

    ```mlir
    hopper.mbarrier.wait %full, %parity stage %s {ring = "full"}
    ```
    PTX:
    ```
    WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, [bar], parity;
          @!p bra WAIT;
    ```
  }];
  let arguments = (ins I32:$bar, I32:$parity, I32:$stage, StrAttr:$ring, UnitAttr:$bounded);
  let assemblyFormat = "$bar `,` $parity `stage` $stage attr-dict";
}

//===----------------------------------------------------------------------===//
// TMA
//===----------------------------------------------------------------------===//

def Hopper_TmaLoadOp : Hopper_Op<"tma.load", [AttrSizedOperandSegments]> {
  let summary = "TMA copy of one box of a global tensor into shared memory";
  let description = [{
    Copies the box of the tensor map `desc` at `coords` (innermost first, 2 or
    3 of them) to shared address `dst`, completing `bytes` on the mbarrier
    `bar`. With `mask` (a 16-bit CTA mask), the box is multicast to the same
    offset of every CTA of the cluster in the mask, completing on each one's
    barrier at the same offset. `bytes` is the box's size, what the copy
    completes on each receiving CTA's barrier (the ring verifier sums them).

    ```mlir
    hopper.tma.load %desc[%k, %m] -> %dst, %full bytes 16384 : !llvm.ptr
    hopper.tma.load %desc[%k, %m] -> %dst, %full multicast %mask bytes 8192 : !llvm.ptr
    ```
    PTX (2-d; 3-d with a third coordinate; `.multicast::cluster` and a last
    operand `mask` with `multicast`):
    `cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [desc, {x, y} ], [bar];`
  }];
  let arguments = (ins LLVM_AnyPointer:$desc, Variadic<I32>:$coords, I32:$dst, I32:$bar,
                       Optional<I16>:$mask, ConfinedAttr<I64Attr, [IntPositive]>:$bytes);
  let assemblyFormat = [{
    $desc `[` $coords `]` `->` $dst `,` $bar (`multicast` $mask^)? `bytes` $bytes attr-dict `:` type($desc)
  }];
  let hasVerifier = 1;
}

def Hopper_TmaPrefetchOp : Hopper_Op<"tma.prefetch"> {
  let summary = "TMA prefetch of one box of a global tensor into L2";
  let description = [{
    Asks the TMA unit to bring the box of the tensor map `desc` at (`x`, `y`)
    or, for a batched (rank-3) tensor, (`x`, `y`, `z`), innermost first, into
    L2, and returns at once: no shared memory, no barrier, no completion to
    wait for. The producer warp of the warp-specialized schedules uses it for
    an epilogue operand (C0 of `alpha * A B + beta * C0`, a residual) while
    the mainloop runs, so that the epilogue's loads of it hit L2.

    ```mlir
    hopper.tma.prefetch %desc[%n, %m] : !llvm.ptr
    hopper.tma.prefetch %desc[%n, %m, %batch] : !llvm.ptr
    ```
    PTX: `cp.async.bulk.prefetch.tensor.2d.L2.global.tile [desc, {x, y} ];`
    (`.3d` and `{x, y, z}` with `z`)
  }];
  let arguments = (ins LLVM_AnyPointer:$desc, I32:$x, I32:$y, Optional<I32>:$z);
  let assemblyFormat = [{ $desc `[` $x `,` $y (`,` $z^)? `]` attr-dict `:` type($desc) }];
}

//===----------------------------------------------------------------------===//
// Warp-specialized roles and their synchronisation
//===----------------------------------------------------------------------===//

def Hopper_SetMaxNRegOp : Hopper_Op<"setmaxnreg"> {
  let summary = "move this warpgroup's register budget to `regs` per thread";
  let description = [{
    The producer warpgroup gives registers back (`decrease`, e.g. 40) and the
    consumers take them (`increase`, e.g. 232), so that the CTA's register
    file holds the consumers' accumulators. ptxas ignores it (C7508) unless
    the kernel has `.maxnreg` or `.minnctapersm 1` (DESIGN.md §6).

    ```mlir
    hopper.setmaxnreg decrease to 40
    hopper.setmaxnreg increase to 232
    ```
    PTX: `setmaxnreg.{inc,dec}.sync.aligned.u32 regs;`
  }];
  let arguments = (ins UnitAttr:$increase, ConfinedAttr<I32Attr, [IntMinValue<24>, IntMaxValue<256>]>:$regs);
  let assemblyFormat = "(`increase` $increase^) : (`decrease`)? `to` $regs attr-dict";
  let hasVerifier = 1;
}

def Hopper_NamedBarrierOp : Hopper_Op<"named_barrier"> {
  let summary = "synchronise (or only arrive) on hardware barrier `id` with `threads` threads";
  let description = [{
    The CTA's 16 hardware barriers beyond barrier 0: one per consumer
    warpgroup (its epilogue's staging buffers), and the pingpong schedule's
    turn barriers (each consumer arrives on the other's turn and syncs on its
    own). `arrive` does not wait.

    ```mlir
    hopper.named_barrier sync %id, 128
    hopper.named_barrier arrive %turn, 256
    ```
    PTX: `bar.sync id, threads;` / `bar.arrive id, threads;`
  }];
  let arguments = (ins UnitAttr:$arrive, I32:$id, I32Attr:$threads);
  let assemblyFormat = "(`arrive` $arrive^) : (`sync`)? $id `,` $threads attr-dict";
}

def Hopper_ClusterSyncOp : Hopper_Op<"cluster.sync"> {
  let summary = "barrier of all threads of the CTA cluster";
  let description = [{
    Release / acquire at cluster scope: before it, barrier initialisation
    (rule C1); after the last k-step, so that no CTA leaves while a peer may
    still multicast into its shared memory or arrive on its barriers (rule
    C4). Not `.aligned`: warps reach it diverged.

    ```mlir
    hopper.cluster.sync
    ```
    PTX: `barrier.cluster.arrive.release; barrier.cluster.wait.acquire;`
  }];
  let assemblyFormat = "attr-dict";
}

def Hopper_MBarrierArriveClusterOp : Hopper_Op<"mbarrier.arrive_cluster"> {
  let summary = "arrive on the barrier at the same offset in CTA `peer` of the cluster";
  let description = [{
    A consumer's release of a stage that its cluster's peers multicast into:
    each peer's empty barrier needs this CTA's arrival. Release at CTA scope
    (the PTX default; `.release.cluster` costs a MEMBAR.ALL.GPU per arrive).

    ```mlir
    hopper.mbarrier.arrive_cluster %empty, %peer {ring = "empty"}
    ```
    PTX: `mapa.shared::cluster.u32 remote, bar, peer; mbarrier.arrive.shared::cluster.b64 _, [remote];`
  }];
  let arguments = (ins I32:$bar, I32:$peer, StrAttr:$ring);
  let assemblyFormat = "$bar `,` $peer attr-dict";
}

//===----------------------------------------------------------------------===//
// TMA-store epilogue
//===----------------------------------------------------------------------===//

def Hopper_PrefetchTensorMapOp : Hopper_Op<"prefetch_tensormap"> {
  let summary = "prefetch a TMA descriptor into the descriptor cache";
  let description = [{
    ```mlir
    hopper.prefetch_tensormap %desc : !llvm.ptr
    ```
    PTX: `prefetch.tensormap [desc];`
  }];
  let arguments = (ins LLVM_AnyPointer:$desc);
  let assemblyFormat = "$desc attr-dict `:` type($desc)";
}

def Hopper_StMatrixOp : Hopper_Op<"stmatrix"> {
  let summary = "store four 8x8 b16 matrices of a warp's fragments to shared memory";
  let description = [{
    The bf16 / f16 epilogue's register-to-shared copy: each lane gives the
    shared address of one matrix row and four 32-bit registers (two b16
    each) of the accumulator fragments.

    ```mlir
    hopper.stmatrix %addr, %r0, %r1, %r2, %r3
    ```
    PTX: `stmatrix.sync.aligned.m8n8.x4.shared.b16 [addr], {r0, r1, r2, r3};`
  }];
  let arguments = (ins I32:$addr, I32:$r0, I32:$r1, I32:$r2, I32:$r3);
  let assemblyFormat = "$addr `,` $r0 `,` $r1 `,` $r2 `,` $r3 attr-dict";
}

def Hopper_FenceProxyAsyncOp : Hopper_Op<"fence.proxy_async"> {
  let summary = "order generic-proxy shared-memory writes before async-proxy reads";
  let description = [{
    After the epilogue's `stmatrix` / `st.shared` into a staging buffer and
    before the TMA store that reads it (rule E2).

    ```mlir
    hopper.fence.proxy_async
    ```
    PTX: `fence.proxy.async.shared::cta;`
  }];
  let assemblyFormat = "attr-dict";
}

def Hopper_TmaStoreOp : Hopper_Op<"tma.store"> {
  let summary = "TMA copy of a shared-memory box to a global tensor (bulk group)";
  let description = [{
    Writes the box at shared address `src` to the tensor map `desc` at
    (`x`, `y`) or, for a batched (rank-3) output, (`x`, `y`, `z`), innermost
    first; elements outside the tensor are not written (TMA clips rows to 16
    bytes only: the runtime stores through pointers when C's rows do not end
    on 16 bytes). Part of the current bulk group.

    ```mlir
    hopper.tma.store %src -> %desc[%x, %y] : !llvm.ptr
    hopper.tma.store %src -> %desc[%x, %y, %batch] : !llvm.ptr
    ```
    PTX: `cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [desc, {x, y} ], [src];`
    (`.3d` and `{x, y, z}` with `z`)
  }];
  let arguments = (ins LLVM_AnyPointer:$desc, I32:$x, I32:$y, Optional<I32>:$z, I32:$src);
  let assemblyFormat = "$src `->` $desc `[` $x `,` $y (`,` $z^)? `]` attr-dict `:` type($desc)";
}

def Hopper_TmaStoreCommitOp : Hopper_Op<"tma.store.commit"> {
  let summary = "close the current bulk group of TMA stores";
  let description = [{
    ```mlir
    hopper.tma.store.commit
    ```
    PTX: `cp.async.bulk.commit_group;`
  }];
  let assemblyFormat = "attr-dict";
}

def Hopper_TmaStoreWaitOp : Hopper_Op<"tma.store.wait"> {
  let summary = "wait until at most `pending` bulk groups of TMA stores are in flight";
  let description = [{
    With `read`, only until their shared-memory reads are done (a staging
    buffer may be rewritten); without, until their writes are complete (the
    buffers may be released, rule E3).

    ```mlir
    hopper.tma.store.wait 1 read
    hopper.tma.store.wait 0
    ```
    PTX: `cp.async.bulk.wait_group[.read] pending;`
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>]>:$pending, UnitAttr:$read);
  let assemblyFormat = "$pending (`read` $read^)? attr-dict";
}


//===----------------------------------------------------------------------===//
// wgmma (warpgroup MMA on the accumulator registers)
//===----------------------------------------------------------------------===//

def Hopper_WgmmaFenceOp : Hopper_Op<"wgmma.fence"> {
  let summary = "order register and shared-memory accesses before the next wgmmas";
  let description = [{
    Before the first wgmma of a group that reads accumulators written by
    other instructions (zeroing, a previous wait) or shared memory written
    since the last fence.

    ```mlir
    hopper.wgmma.fence
    ```
    PTX: `wgmma.fence.sync.aligned;` (becomes `nvvm.wgmma.fence.aligned`)
  }];
  let assemblyFormat = "attr-dict";
}

def Hopper_WgmmaOp : Hopper_Op<"wgmma", [AllTypesMatch<["acc", "result"]>]> {
  let summary = "one asynchronous warpgroup MMA into accumulator registers";
  let description = [{
    `acc += A x B` for a 64 x `n` x k step of the warpgroup: A and B are
    read from shared memory through the 64-bit matrix descriptors `desc_a`,
    `desc_b` (start address, leading / stride byte offsets, swizzle);
    `type` is their element type, f32 accumulation: bf16 or f16 (k = 16), or
    e4m3 / e5m2 (k = 32), with `type_b` naming B's fp8 type where it differs
    from A's. `a_mn_major` / `b_mn_major` set the transpose immediates (an
    M-major A, an N-major B; 16-bit types only: wgmma reads fp8 K-major).
    The result is the accumulator after the MMA, readable only after a
    `hopper.wgmma.wait` that retires its group. With `zero_acc` the MMA
    ignores `acc` and writes A x B (scale-d = 0): the first k step of a
    block-scaled stage, whose partial product starts from zero
    (Lowering/Mma.cpp, issuePartial).

    ```mlir
    %d = hopper.wgmma %da, %db, %acc shape [64, 128, 16] "bf16" : !llvm.struct<(f32, ...)>
    %e = hopper.wgmma %da, %db, %acc shape [64, 128, 32] "e4m3", "e5m2" : !llvm.struct<(f32, ...)>
    ```
    PTX: `wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {...}, da, db, p, 1, 1, 0, 1;`
    and `wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2 {...}, da, db, p, 1, 1;`
    (no transpose immediates for fp8; p is true, or false with `zero_acc`;
    becomes `nvvm.wgmma.mma_async`)
  }];
  let arguments = (ins I64:$desc_a, I64:$desc_b, LLVM_AnyStruct:$acc, DenseI64ArrayAttr:$shape,
                       StrAttr:$type, OptionalAttr<StrAttr>:$type_b, UnitAttr:$a_mn_major,
                       UnitAttr:$b_mn_major, UnitAttr:$zero_acc);
  let results = (outs LLVM_AnyStruct:$result);
  let assemblyFormat = [{
    $desc_a `,` $desc_b `,` $acc `shape` $shape $type (`,` $type_b^)? (`a_mn_major` $a_mn_major^)?
    (`b_mn_major` $b_mn_major^)? (`zero_acc` $zero_acc^)? attr-dict `:` type($acc)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$descA, "::mlir::Value":$descB, "::mlir::Value":$acc,
                   "::llvm::ArrayRef<int64_t>":$shape, "::llvm::StringRef":$type,
                   "::llvm::StringRef":$typeB, "bool":$aMnMajor, "bool":$bMnMajor,
                   CArg<"bool", "false">:$zeroAcc), [{
      build($_builder, $_state, acc.getType(), descA, descB, acc, $_builder.getDenseI64ArrayAttr(shape),
            $_builder.getStringAttr(type),
            typeB.empty() || typeB == type ? ::mlir::StringAttr() : $_builder.getStringAttr(typeB),
            aMnMajor ? $_builder.getUnitAttr() : ::mlir::UnitAttr(),
            bMnMajor ? $_builder.getUnitAttr() : ::mlir::UnitAttr(),
            zeroAcc ? $_builder.getUnitAttr() : ::mlir::UnitAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def Hopper_WgmmaCommitOp : Hopper_Op<"wgmma.commit"> {
  let summary = "close the current wgmma group";
  let description = [{
    The wgmmas issued since the last commit form one group, which a
    `hopper.wgmma.wait` retires as a whole.

    ```mlir
    hopper.wgmma.commit
    ```
    PTX: `wgmma.commit_group.sync.aligned;` (becomes `nvvm.wgmma.commit.group.sync.aligned`)
  }];
  let assemblyFormat = "attr-dict";
}

def Hopper_WgmmaWaitOp : Hopper_Op<"wgmma.wait"> {
  let summary = "wait until at most `pending` wgmma groups are in flight";
  let description = [{
    After it, the accumulators of every retired group can be read and the
    shared memory their wgmmas read can be released. The mma schedule's
    `wait_depth` (1: the previous k-step's group retired) in the mainloop,
    0 before the epilogue.

    ```mlir
    hopper.wgmma.wait 1
    ```
    PTX: `wgmma.wait_group.sync.aligned 1;` (becomes `nvvm.wgmma.wait.group.sync.aligned`)
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<0>]>:$pending);
  let assemblyFormat = "$pending attr-dict";
}


//===----------------------------------------------------------------------===//
// cp.async, ldmatrix, mma.sync (schedule multistage)
//===----------------------------------------------------------------------===//

def Hopper_CpAsyncOp : Hopper_Op<"cp_async"> {
  let summary = "asynchronous 16-byte copy from global into shared memory";
  let description = [{
    Copies 16 bytes from the global address `src` to the shared address
    `dst + offset`; with `src_bytes`, only that many bytes are read and the
    rest of the 16 are zero-filled (a tile's edge). Completes in the commit
    group it belongs to (`hopper.cp_async.commit`, `hopper.cp_async.wait`).

    ```mlir
    hopper.cp_async %src -> %dst + 2048 : !llvm.ptr<1>
    hopper.cp_async %src -> %dst + 0 src_bytes %n : !llvm.ptr<1>
    ```
    PTX: `cp.async.cg.shared.global [dst+offset], [src], 16[, src_bytes];`
  }];
  let arguments = (ins I32:$dst, LLVM_AnyPointer:$src, Optional<I32>:$src_bytes, I64Attr:$offset);
  let assemblyFormat = [{
    $src `->` $dst `+` $offset (`src_bytes` $src_bytes^)? attr-dict `:` qualified(type($src))
  }];
}

def Hopper_CpAsyncCommitOp : Hopper_Op<"cp_async.commit"> {
  let summary = "close the current group of cp.async copies";
  let description = [{
    ```mlir
    hopper.cp_async.commit
    ```
    PTX: `cp.async.commit_group;`
  }];
  let assemblyFormat = "attr-dict";
}

def Hopper_CpAsyncWaitOp : Hopper_Op<"cp_async.wait"> {
  let summary = "wait until at most `pending` cp.async groups are in flight";
  let description = [{
    Multistage waits with `stages - 2` pending in the mainloop (the next
    stages keep loading while one is computed), 0 at the end.

    ```mlir
    hopper.cp_async.wait 2
    ```
    PTX: `cp.async.wait_group 2;`
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<0>]>:$pending);
  let assemblyFormat = "$pending attr-dict";
}

def Hopper_LdMatrixOp : Hopper_Op<"ldmatrix"> {
  let summary = "load four 8x8 b16 matrices from shared memory into fragments";
  let description = [{
    Each lane gives the shared address (`addr + offset`) of one row of one of
    the four matrices; each thread receives one 32-bit register of each
    matrix (two b16 elements), in the layout mma.sync reads. `trans` loads the
    transposed matrices (MN-major operands).

    ```mlir
    %r = hopper.ldmatrix %addr + 512 trans : !llvm.struct<(i32, i32, i32, i32)>
    ```
    PTX: `ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16 {r0, r1, r2, r3}, [addr+offset];`
  }];
  let arguments = (ins I32:$addr, I64Attr:$offset, UnitAttr:$trans);
  let results = (outs LLVM_AnyStruct:$result);
  let assemblyFormat = "$addr `+` $offset (`trans` $trans^)? attr-dict `:` type($result)";
}

def Hopper_MmaSyncOp : Hopper_Op<"mma_sync", [Pure]> {
  let summary = "one warp-wide m16n8k16 MMA on register fragments";
  let description = [{
    `c + a x b` for a 16 x 8 x 16 step of one warp: `a` is four 32-bit
    registers (eight `type` elements of the 16 x 16 A fragment), `b` two (the
    16 x 8 B fragment, column-major), `c` four f32 accumulators. Pure: LLVM
    may schedule it freely.

    ```mlir
    %d = hopper.mma_sync %a0, %a1, %a2, %a3, %b0, %b1, %c0, %c1, %c2, %c3 "bf16"
           : !llvm.struct<(f32, f32, f32, f32)>
    ```
    PTX: `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {d}, {a}, {b}, {c};`
  }];
  let arguments = (ins I32:$a0, I32:$a1, I32:$a2, I32:$a3, I32:$b0, I32:$b1, F32:$c0, F32:$c1,
                       F32:$c2, F32:$c3, StrAttr:$type);
  let results = (outs LLVM_AnyStruct:$result);
  let assemblyFormat = [{
    $a0 `,` $a1 `,` $a2 `,` $a3 `,` $b0 `,` $b1 `,` $c0 `,` $c1 `,` $c2 `,` $c3 $type attr-dict
    `:` type($result)
  }];
}

#endif // TESSEL_HOPPER_OPS
