// tessel/ops/program.hpp - which program instance is running.
#pragma once

#include <source_location>

#include "tessel/core/index.hpp"
#include "tessel/core/location.hpp"
#include "tessel/expr/tile.hpp"

namespace tessel {

/// Index of this program instance along grid axis 0, 1 or 2 (tessel.program_id).
inline index program_id(int axis, std::source_location loc = std::source_location::current()) {
  return detail::access::make_index(trace::program_id(axis, detail::to_loc(loc)),
                                    detail::to_loc(loc));
}

/// Number of program instances along grid axis 0, 1 or 2 (tessel.num_programs).
inline index num_programs(int axis, std::source_location loc = std::source_location::current()) {
  return detail::access::make_index(trace::num_programs(axis, detail::to_loc(loc)),
                                    detail::to_loc(loc));
}

}  // namespace tessel
