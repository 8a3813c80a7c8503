//===- HopperOps.td - Hopper-level operations --------------*- tablegen -*-===//

#ifndef TESSEL_HOPPER_OPS
#define TESSEL_HOPPER_OPS

include "tessel/Dialect/Hopper/HopperDialect.td"
include "mlir/Dialect/LLVMIR/LLVMOpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

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

    ```mlir
    hopper.mbarrier.init %full, %c1
    ```
    PTX: `mbarrier.init.shared::cta.b64 [bar], count;`
  }];
  let arguments = (ins I32:$bar, I32:$count);
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
    hopper.mbarrier.arrive %empty
    ```
    PTX: `mbarrier.arrive.shared::cta.b64 _, [bar];`
  }];
  let arguments = (ins I32:$bar);
  let assemblyFormat = "$bar attr-dict";
}

def Hopper_MBarrierArriveExpectTxOp : Hopper_Op<"mbarrier.arrive_expect_tx"> {
  let summary = "arrive and expect `bytes` of TMA transactions on the barrier";
  let description = [{
    The producer's arrival on a stage's full barrier: the phase completes when
    this arrival and `bytes` bytes of TMA writes (`complete_tx`) have both
    happened. `bytes` must equal the bytes of every TMA box that completes on
    this barrier (all operands of the stage, the whole stage in a cluster).

    ```mlir
    hopper.mbarrier.arrive_expect_tx %full, %c32768
    ```
    PTX: `mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes;`
  }];
  let arguments = (ins I32:$bar, I32:$bytes);
  let assemblyFormat = "$bar `,` $bytes attr-dict";
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
    barrier at the same offset.

    ```mlir
    hopper.tma.load %desc[%k, %m] -> %dst, %full : !llvm.ptr
    hopper.tma.load %desc[%k, %m] -> %dst, %full multicast %mask : !llvm.ptr
    ```
    PTX (2-d; 3-d with a third coordinate; `.multicast::cluster` and a last
    operand `mask` with `multicast`):
    `cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [desc, {x, y} ], [bar];`
  }];
  let arguments = (ins LLVM_AnyPointer:$desc, Variadic<I32>:$coords, I32:$dst, I32:$bar,
                       Optional<I16>:$mask);
  let assemblyFormat = [{
    $desc `[` $coords `]` `->` $dst `,` $bar (`multicast` $mask^)? attr-dict `:` type($desc)
  }];
  let hasVerifier = 1;
}

#endif // TESSEL_HOPPER_OPS
