// trace_support.hpp - what the tracer's unit tests share: trace a functor into a module without
// compiling it, and collect the ops of one kind.
#pragma once

#include <tessel/tessel.hpp>

#include "tessel/Frontend/Tracer.h"

#include "mlir/IR/Operation.h"

#include <memory>
#include <vector>

namespace tessel_test {

/// The traced module of `f` (nothing compiled).
template <class F>
std::unique_ptr<tessel::frontend::TracedModule> traceKernel(const F &f) {
  tessel::detail::trace_only(f);
  return tessel::frontend::finishTrace();
}

/// Every op of type Op under `root`, in walk order.
template <class Op>
std::vector<Op> collect(mlir::Operation *root) {
  std::vector<Op> ops;
  root->walk([&](Op op) { ops.push_back(op); });
  return ops;
}

}  // namespace tessel_test
