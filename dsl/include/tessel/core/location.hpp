// tessel/core/location.hpp - the user's source position, carried into every traced op.
//
// Every DSL call takes `std::source_location loc = std::source_location::current()` as its last
// parameter; the tracer turns it into the op's FileLineColLoc, so verifier and compiler errors
// quote the user's file:line. Operators cannot take that parameter: ops built by `a + b` carry
// the position of the call that materialises them (the store, the assignment, the `dot`, ...).
#pragma once

#include <source_location>

#include "tessel/core/trace.hpp"

namespace tessel::detail {

inline constexpr trace::loc to_loc(const std::source_location& s) noexcept {
  return {s.file_name(), static_cast<unsigned>(s.line()), static_cast<unsigned>(s.column())};
}

/// `l` when it is known (line != 0), else `fallback`.
inline constexpr trace::loc or_else(trace::loc l, trace::loc fallback) noexcept {
  return l.line != 0 ? l : fallback;
}

/// Grants the DSL's internals access to the private handle constructors of tile, index and
/// tensor (users never see a trace::value).
struct access;

}  // namespace tessel::detail
