//===- BenchSummaryTest.cpp - tessel-bench's best-per-shape summary -------===//

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "bench_summary.h"

namespace tb = tessel_bench;

TEST(BenchSummary, BestPerShapeAndGeomean) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto s = tb::summarize({{"8192x8192x8192", "cooperative 128x256 s4", 1.054},
                          {"8192x8192x8192", "pingpong 128x128 s4", 1.098},
                          {"4096x4096x4096", "cooperative 128x256 s4", 1.012},
                          {"4096x4096x4096", "pingpong 128x128 s4", nan},     // failed row
                          {"16384x8192x1024", "cooperative 128x256 s4", 0.0},  // untimed row
                          {"16384x8192x1024", "pingpong:dp 128x128 s4", 1.175},
                          {"4096x4096x4096", "pingpong:dp 128x128 s4", 1.001}});
  ASSERT_EQ(s.best.size(), 3u);
  EXPECT_EQ(s.best[0].shape, "8192x8192x8192");  // first-appearance order
  EXPECT_EQ(s.best[0].config, "pingpong 128x128 s4");
  EXPECT_EQ(s.best[1].config, "cooperative 128x256 s4");
  EXPECT_EQ(s.best[2].config, "pingpong:dp 128x128 s4");
  EXPECT_NEAR(s.geomean, std::cbrt(1.098 * 1.012 * 1.175), 1e-12);
  EXPECT_DOUBLE_EQ(s.lowest, 1.012);
}

TEST(BenchSummary, NothingUsableGivesNoSummary) {
  auto s = tb::summarize({{"1x1x1", "tma 128x128 s4", std::numeric_limits<double>::quiet_NaN()}});
  EXPECT_TRUE(s.best.empty());
  EXPECT_TRUE(std::isnan(s.geomean));
  EXPECT_TRUE(std::isnan(s.lowest));
}
