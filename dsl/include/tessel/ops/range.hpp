// tessel/ops/range.hpp - traced loops.
//
//     for (auto k : ts::range(0, A.size(1), BK))
//       acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
//
// The body runs once, at trace time, between trace::for_begin and trace::for_end, and becomes
// the region of one scf.for; `k` is its induction variable. Tile and index variables declared
// before the loop that the body reassigns become loop-carried values (iter_args) automatically.
// The body must run to its end: `break`, `return` or `goto` out of it is an error (a plain
// `continue` just ends the traced body early).
#pragma once

#include <exception>
#include <source_location>

#include "tessel/core/index.hpp"
#include "tessel/core/location.hpp"
#include "tessel/expr/tile.hpp"

namespace tessel {

/// The iteration space of a traced loop: [lb, ub) with a positive step.
class range_t {
public:
  class iterator;
  struct sentinel {};

  range_t(trace::value lb, trace::value ub, trace::value step, trace::loc l)
      : lb_(lb), ub_(ub), step_(step), loc_(l) {}

  /// Opens the loop (trace::for_begin).
  iterator begin() const;
  sentinel end() const { return {}; }

private:
  trace::value lb_, ub_, step_;
  trace::loc loc_;
};

class range_t::iterator {
public:
  iterator(trace::value iv, trace::loc l)
      : iv_(iv), loc_(l), exceptions_(std::uncaught_exceptions()) {}
  iterator(const iterator&) = delete;
  iterator& operator=(const iterator&) = delete;
  ~iterator() {
    if (open_ && std::uncaught_exceptions() == exceptions_)
      trace::fail("ts::range: the traced loop body was left early ('break', 'return' or 'goto'); "
                  "a traced body must run to its end",
                  loc_);
  }

  /// The induction variable.
  index operator*() const { return detail::access::make_index(iv_, loc_); }
  /// The body has been traced: close the loop (trace::for_end).
  iterator& operator++() {
    open_ = false;
    trace::for_end(loc_);
    return *this;
  }
  friend bool operator==(const iterator& it, sentinel) { return !it.open_; }

private:
  trace::value iv_;
  trace::loc loc_;
  int exceptions_;
  bool open_ = true;
};

inline range_t::iterator range_t::begin() const {
  return iterator(trace::for_begin(lb_, ub_, step_, loc_), loc_);
}

namespace detail {
template <class S>
constexpr void check_step() {
  if constexpr (static_int<S>)
    static_assert(static_value_v<S> > 0, "range: the step must be positive");
}
}  // namespace detail

/// `for (auto i : ts::range(lb, ub, step))`: lb, ub and step are ts::index values, host integers
/// or compile-time integers.
template <detail::index_like L, detail::index_like U, detail::index_like S>
range_t range(const L& lb, const U& ub, const S& step,
              std::source_location loc = std::source_location::current()) {
  detail::check_step<S>();
  trace::loc l = detail::to_loc(loc);
  if constexpr (detail::host_int<S>)
    if (step <= 0) trace::fail("ts::range: the step must be positive", l);
  return range_t(index::value_of(lb, l), index::value_of(ub, l), index::value_of(step, l), l);
}
template <detail::index_like L, detail::index_like U>
range_t range(const L& lb, const U& ub, std::source_location loc = std::source_location::current()) {
  return range(lb, ub, 1, loc);
}
template <detail::index_like U>
range_t range(const U& ub, std::source_location loc = std::source_location::current()) {
  return range(0, ub, 1, loc);
}

}  // namespace tessel
