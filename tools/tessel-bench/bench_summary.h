// bench_summary.h - the best tessel configuration per shape and the geometric mean of those
// ratios, the measure of issue 3 ("best schedule per shape >= 1.05x cuBLAS in geomean"), so that
// tessel-bench prints it instead of leaving it to be computed by hand. Plain C++ (no CUDA): unit
// tested in tests/unit/bench.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace tessel_bench {

/// One timed row: its shape (with the layout when not the default), configuration label and
/// tessel / cuBLAS ratio.
struct ratio_entry {
  std::string shape;
  std::string config;
  double ratio = 0;
};

struct shape_best {
  std::string shape;
  std::string config;
  double ratio = 0;
};

struct bench_summary {
  std::vector<shape_best> best;  ///< one per shape with a usable ratio, in first-appearance order
  double geomean = std::numeric_limits<double>::quiet_NaN();
  double lowest = std::numeric_limits<double>::quiet_NaN();
};

/// Rows whose ratio is not finite and positive (failed, untimed) are ignored; the first of equal
/// ratios wins.
inline bench_summary summarize(const std::vector<ratio_entry>& entries) {
  bench_summary s;
  for (const auto& e : entries) {
    if (!(std::isfinite(e.ratio) && e.ratio > 0)) continue;
    shape_best* b = nullptr;
    for (auto& x : s.best)
      if (x.shape == e.shape) b = &x;
    if (!b)
      s.best.push_back({e.shape, e.config, e.ratio});
    else if (e.ratio > b->ratio)
      *b = {e.shape, e.config, e.ratio};
  }
  if (s.best.empty()) return s;
  double logs = 0;
  s.lowest = s.best.front().ratio;
  for (const auto& b : s.best) {
    logs += std::log(b.ratio);
    s.lowest = std::fmin(s.lowest, b.ratio);
  }
  s.geomean = std::exp(logs / double(s.best.size()));
  return s;
}

}  // namespace tessel_bench
