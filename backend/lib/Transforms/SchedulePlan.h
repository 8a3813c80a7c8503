//===- SchedulePlan.h - helpers of the schedule passes -------------*- C++ -*-===//
//
// Private to TesselTransforms: what the passes between tessel-select-schedule
// and tessel-lower-to-nvvm share. Each of them writes one decision as hopper
// ops (HopperScheduleOps.td) into a scheduled GEMM kernel; the plan ops sit at
// the top of the function, in pass order, before the traced program:
//
//   func.func @gemm(...) attributes {tessel.kernel, tessel.schedule = ...} {
//     %pid:3 = hopper.tile_scheduler ...          tessel-materialize-tile-scheduler
//     hopper.ring "ab" ...                        tessel-insert-async-copies
//     hopper.warp_specialize ... { ... }          tessel-warp-specialize (+ mma, epilogue)
//     hopper.resources ...                        tessel-allocate-resources
//     ... the traced program ...
//   }
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_LIB_TRANSFORMS_SCHEDULEPLAN_H
#define TESSEL_LIB_TRANSFORMS_SCHEDULEPLAN_H

#include "tessel/Dialect/Hopper/Hopper.h"
#include "tessel/Transforms/GemmMatch.h"

namespace mlir::tessel::plan {

/// A GEMM kernel that tessel-select-schedule scheduled.
struct ScheduledGemm {
  func::FuncOp fn;
  ScheduleAttr sched;
  GemmMatch match;
  Type elementType() const {
    DotOp dot = match.dot;
    return cast<RankedTensorType>(dot.getA().getType()).getElementType();
  }
  int64_t eltBytes() const { return elementType().getIntOrFloatBitWidth() / 8; }
  ScheduleKind kind() const { return sched.getKind(); }
  bool warpSpecialized() const {
    return kind() == ScheduleKind::warp_specialized || kind() == ScheduleKind::cooperative ||
           kind() == ScheduleKind::pingpong;
  }
};

/// Calls `f` on every scheduled GEMM kernel of `module` (kernels without a
/// dot, which have no schedule, are skipped).
inline LogicalResult forEachScheduledGemm(ModuleOp module,
                                          function_ref<LogicalResult(ScheduledGemm &)> f) {
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!fn->hasAttr(TesselDialect::getKernelAttrName()))
      continue;
    auto sched = fn->getAttrOfType<ScheduleAttr>(TesselDialect::getScheduleAttrName());
    if (!sched)
      continue;
    auto m = matchGemm(fn);
    if (failed(m))
      return failure();
    if (!*m)
      return fn.emitError("a scheduled kernel must have a GEMM mainloop");
    ScheduledGemm g{fn, sched, **m};
    if (failed(f(g)))
      return failure();
  }
  return success();
}

/// The op of type OpT in `fn` (the plan has at most one of each), or null.
template <typename OpT>
OpT find(func::FuncOp fn) {
  OpT found;
  fn.walk([&](OpT op) {
    found = op;
    return WalkResult::interrupt();
  });
  return found;
}

/// The plan op that pass `pass` writes, or an error saying to run it.
template <typename OpT>
FailureOr<OpT> require(func::FuncOp fn, StringRef pass) {
  if (OpT op = find<OpT>(fn))
    return op;
  return fn.emitError() << "GEMM kernel '" << fn.getSymName() << "' has no "
                        << OpT::getOperationName() << ": run " << pass
                        << " first (tessel-kernel-pipeline runs every step)",
         failure();
}

/// A builder after the plan ops at the top of `fn`'s body.
inline OpBuilder atPlanEnd(func::FuncOp fn) {
  Block &entry = fn.getBody().front();
  auto it = entry.begin();
  while (it != entry.end() && isa_and_nonnull<hopper::HopperDialect>(it->getDialect()))
    ++it;
  return OpBuilder(&entry, it);
}

} // namespace mlir::tessel::plan

#endif // TESSEL_LIB_TRANSFORMS_SCHEDULEPLAN_H
