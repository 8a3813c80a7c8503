//===- VerifyRings.cpp - tessel-verify-rings ------------------------------===//
//
// A hang caught before the GPU. A kernel whose mbarrier ring breaks its
// protocol waits forever on the H200 (and holds the GPU until the device call
// times out); this pass checks, on the hopper ops of each kernel, the rules
// whose violation is a hang, and names the ring and the rule:
//
//  R1. A ring that is waited on is initialised (`mbarrier.init` with its
//      `ring` name).
//  R2. A ring that is waited on is arrived on: `arrive`, `arrive_cluster`
//      or `arrive_expect_tx` with its name. Without one, the first wait never
//      completes ("a missing arrive").
//  R3. A ring that is waited on has at least 2 stages: a stage is released one
//      k-step late (after the next stage's wgmma is issued), so with one stage
//      the producer waits for a release that comes after the data it has not
//      loaded yet. (Not the epilogue operands' ring "operand": one barrier
//      per consumer warpgroup, each loaded and waited on by its own consumer,
//      released by nobody; its chunk loads, tessel-lower-epilogue rule 7,
//      wait with `mbarrier.wait_state` on their own arrival's state.)
//  R4. A full ring (one that `arrive_expect_tx` arrives on) is initialised
//      with an arrival count of 1: one expecting arrival per phase.
//  R5. The bytes an `arrive_expect_tx` expects are the bytes the TMA loads
//      that complete on the same barrier value deliver to this CTA: each
//      load's box `bytes`, times the CTAs of its multicast mask, times the
//      constant trip counts of the loops around it (below the expect_tx).
//      Fewer bytes would complete the phase early (wgmma reads a stage still
//      being written), more would never complete it. Where the bytes are
//      computed at launch (boxes clipped to the tensor's rows), their
//      `max_bytes`, the unclipped boxes, is what is checked.
//  R6. A ring's barriers are initialised with the arrivals its phases get:
//      the kernel's `tessel.ring_arrivals` (written by tessel-lower-to-nvvm
//      from the roles of hopper.warp_specialize and the cluster, not from
//      hopper.resources) says how many per ring; more would never complete a
//      phase, fewer would complete it before every reader released the stage.
//
// Before (R5 broken: two 16 KiB boxes, 24 KiB expected):
//   hopper.mbarrier.arrive_expect_tx %full, %c24576 {ring = "full"}
//   hopper.tma.load %a[%k, %m] -> %dA, %full bytes 16384 : !llvm.ptr
//   hopper.tma.load %b[%k, %n] -> %dB, %full bytes 16384 : !llvm.ptr
// the pass fails with:
//   error: ring 'full': arrive_expect_tx expects 24576 bytes but the TMA loads completing on
//   this barrier deliver 32768 (rule R5: the phase would never complete or would complete early)
//
// Trip counts or byte counts that are not constants are not checked (R5 then
// proves nothing rather than guessing).
//
//===----------------------------------------------------------------------===//

#include "tessel/Dialect/Hopper/Hopper.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringMap.h"

#include <optional>

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELVERIFYRINGS
#include "tessel/Transforms/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// The epilogue operands' barriers (Lowering/Epilogue.cpp): one per consumer,
/// not a k-step ring (R3 does not apply).
constexpr StringLiteral kOperandRing = "operand";

std::optional<int64_t> constantInt(Value v) {
  APInt c;
  if (v && matchPattern(v, m_ConstantInt(&c)))
    return c.getSExtValue();
  return std::nullopt;
}

/// What one kernel does with one ring.
struct RingUse {
  SmallVector<hopper::MBarrierInitOp> inits;
  SmallVector<Operation *> waits; ///< mbarrier.wait and mbarrier.wait_state
  int64_t arrivals = 0; ///< arrive / arrive_cluster / arrive_expect_tx ops
  bool expectsTx = false;
};

/// The bytes `load` delivers to this CTA's barrier per execution of `from`:
/// its box, times its multicast CTAs, times the trip counts of the loops
/// between it and `from`'s block. None when something is not constant.
std::optional<int64_t> deliveredBytes(hopper::TmaLoadOp load, Operation *from) {
  int64_t bytes = load.getBytes();
  if (Value mask = load.getMask()) {
    std::optional<int64_t> m = constantInt(mask);
    if (!m)
      return std::nullopt;
    bytes *= llvm::popcount(static_cast<uint64_t>(*m) & 0xffff);
  }
  for (Operation *p = load->getParentOp(); p && !p->isAncestor(from); p = p->getParentOp()) {
    auto loop = dyn_cast<scf::ForOp>(p);
    if (!loop)
      continue;
    std::optional<int64_t> lb = constantInt(loop.getLowerBound()), ub = constantInt(loop.getUpperBound()),
                           st = constantInt(loop.getStep());
    if (!lb || !ub || !st || *st <= 0)
      return std::nullopt;
    bytes *= *ub > *lb ? (*ub - *lb + *st - 1) / *st : 0;
  }
  return bytes;
}

LogicalResult verifyKernel(Operation *kernel) {
  llvm::StringMap<RingUse> rings;
  SmallVector<hopper::MBarrierArriveExpectTxOp> expects;
  kernel->walk([&](Operation *op) {
    if (auto i = dyn_cast<hopper::MBarrierInitOp>(op))
      rings[i.getRing()].inits.push_back(i);
    else if (auto w = dyn_cast<hopper::MBarrierWaitOp>(op))
      rings[w.getRing()].waits.push_back(w);
    else if (auto w = dyn_cast<hopper::MBarrierWaitStateOp>(op))
      rings[w.getRing()].waits.push_back(w);
    else if (auto a = dyn_cast<hopper::MBarrierArriveOp>(op))
      ++rings[a.getRing()].arrivals;
    else if (auto a = dyn_cast<hopper::MBarrierArriveClusterOp>(op))
      ++rings[a.getRing()].arrivals;
    else if (auto e = dyn_cast<hopper::MBarrierArriveExpectTxOp>(op)) {
      ++rings[e.getRing()].arrivals;
      rings[e.getRing()].expectsTx = true;
      expects.push_back(e);
    }
  });
  for (auto &[name, use] : rings) {
    if (use.waits.empty())
      continue;
    Operation *wait = use.waits.front();
    if (use.inits.empty())
      return wait->emitError() << "ring '" << name
                               << "' is waited on but never initialised (rule R1: mbarrier.init "
                                  "before any wait)";
    if (use.arrivals == 0)
      return wait->emitError() << "ring '" << name
                               << "' is waited on but nothing arrives on it (rule R2: a missing arrive; "
                                  "the wait would never complete)";
    if (use.inits.size() < 2 && name != kOperandRing)
      return use.inits.front()->emitError()
             << "ring '" << name << "' has 1 stage (rule R3: a stage is released one k-step late, "
             << "so a one-stage ring would wait forever for K > BK)";
    if (use.expectsTx)
      for (hopper::MBarrierInitOp init : use.inits)
        if (std::optional<int64_t> count = constantInt(init.getCount()); count && *count != 1)
          return init->emitError() << "ring '" << name << "' is initialised with " << *count
                                   << " arrivals per phase but its phases take one arrive_expect_tx "
                                      "(rule R4)";
  }
  // R6.
  if (auto expected = kernel->getAttrOfType<DictionaryAttr>("tessel.ring_arrivals"))
    for (auto &[name, use] : rings)
      if (auto want = expected.getAs<IntegerAttr>(name))
        for (hopper::MBarrierInitOp init : use.inits)
          if (std::optional<int64_t> count = constantInt(init.getCount());
              count && *count != want.getInt())
            return init->emitError()
                   << "ring '" << name << "' is initialised with " << *count
                   << " arrivals per phase but its roles arrive " << want.getInt()
                   << " times per phase (rule R6: the phase would "
                   << (*count > want.getInt() ? "never complete" : "complete before every reader released the stage")
                   << ")";
  for (hopper::MBarrierArriveExpectTxOp e : expects) {
    // Bytes computed at launch (boxes clipped to the tensor's rows): their
    // upper bound, what the unclipped boxes deliver.
    std::optional<int64_t> expected = constantInt(e.getBytes());
    if (!expected)
      expected = e.getMaxBytes();
    if (!expected)
      continue;
    int64_t delivered = 0;
    bool known = true, any = false;
    for (Operation *user : e.getBar().getUsers()) {
      auto load = dyn_cast<hopper::TmaLoadOp>(user);
      if (!load || load.getBar() != e.getBar())
        continue;
      any = true;
      std::optional<int64_t> d = deliveredBytes(load, e);
      if (!d) {
        known = false;
        break;
      }
      delivered += *d;
    }
    if (!known)
      continue;
    if (!any)
      return e->emitError() << "ring '" << e.getRing() << "': arrive_expect_tx expects " << *expected
                            << " bytes but no TMA load completes on this barrier (rule R5: the phase "
                               "would never complete)";
    if (delivered != *expected)
      return e->emitError() << "ring '" << e.getRing() << "': arrive_expect_tx expects " << *expected
                            << " bytes but the TMA loads completing on this barrier deliver "
                            << delivered
                            << " (rule R5: the phase would never complete or would complete early)";
  }
  return success();
}

struct TesselVerifyRings : tessel::impl::TesselVerifyRingsBase<TesselVerifyRings> {
  void runOnOperation() override {
    for (Operation &op : getOperation().getBody()->getOperations())
      if (isa<LLVM::LLVMFuncOp>(op) && failed(verifyKernel(&op)))
        return signalPassFailure();
  }
};

} // namespace
