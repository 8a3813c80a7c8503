//===- CliTest.cpp - the command-line parser of tessel-bench and the examples ===//
//
// cli.h's integers: a value out of range is a usage error naming the flag,
// never a wrapped or saturated number that runs something else
// (--stages 4294967298 used to become 2 through int(args.i64(...)), --m
// 99999999999999999999 INT64_MAX).
//
//===----------------------------------------------------------------------===//

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

#include "cli.h"

namespace tb = tessel_bench;
using ::testing::HasSubstr;

namespace {

/// The parser over `words` (after the program name), with valued options m, stages, iters.
tb::cli parse(std::vector<std::string> words) {
  std::vector<char*> argv = {const_cast<char*>("prog")};
  for (auto& w : words) argv.push_back(w.data());
  return tb::cli(int(argv.size()), argv.data(), {"m", "stages", "iters"}, {"no-run"});
}

/// The usage_error's text of `f()`, "" when it throws none.
template <class F>
std::string usage_error_of(F f) {
  try {
    f();
  } catch (const tb::usage_error& e) {
    return e.what();
  }
  return "";
}

TEST(BenchCli, IntegersInRangeParse) {
  EXPECT_EQ(tb::cli::parse_i64("-9223372036854775808", "--m"), LLONG_MIN);
  EXPECT_EQ(tb::cli::parse_i64("9223372036854775807", "--m"), LLONG_MAX);
  EXPECT_EQ(tb::cli::parse_i32("2147483647", "--stages"), INT_MAX);
  EXPECT_EQ(tb::cli::parse_i32("-2147483648", "--stages"), INT_MIN);
  EXPECT_EQ(tb::cli::parse_i32("-1", "--stages"), -1);
  const tb::cli args = parse({"--m", "8192", "--stages=4"});
  EXPECT_EQ(args.i64("m", 0), 8192);
  EXPECT_EQ(args.i32("stages", 0), 4);
  EXPECT_EQ(args.i32("iters", 20), 20);  // absent: the default
}

TEST(BenchCli, OutOfRangeIsAUsageErrorNamingTheFlag) {
  EXPECT_THAT(usage_error_of([] { tb::cli::parse_i64("99999999999999999999", "--m"); }),
              HasSubstr("--m: 99999999999999999999 is out of range (expected -9223372036854775808 .. "
                        "9223372036854775807)"));
  EXPECT_THAT(usage_error_of([] { tb::cli::parse_i64("-99999999999999999999", "--m"); }), HasSubstr("out of range"));
  EXPECT_THAT(usage_error_of([] { parse({"--m", "99999999999999999999"}).i64("m", 0); }),
              HasSubstr("--m: 99999999999999999999 is out of range"));
  // int-valued options: a value that int() would wrap (4294967298 -> 2) is refused.
  EXPECT_THAT(usage_error_of([] { parse({"--stages", "4294967298"}).i32("stages", 0); }),
              HasSubstr("--stages: 4294967298 is out of range (expected -2147483648 .. 2147483647)"));
  EXPECT_THAT(usage_error_of([] { parse({"--iters=2147483648"}).i32("iters", 20); }),
              HasSubstr("--iters: 2147483648 is out of range"));
  EXPECT_THAT(usage_error_of([] { tb::cli::parse_i32("-2147483649", "--stages"); }), HasSubstr("out of range"));
  EXPECT_THAT(usage_error_of([] { tb::cli::parse_i32("99999999999999999999", "--stages"); }),
              HasSubstr("--stages: 99999999999999999999 is out of range"));
}

TEST(BenchCli, NotAnIntegerIsAUsageErrorNamingTheFlag) {
  for (const char* bad : {"", "abc", "4x", " 4", "4 ", "0x10", "1e3"})
    EXPECT_THAT(usage_error_of([&] { tb::cli::parse_i32(bad, "--stages"); }),
                HasSubstr(std::string("--stages: not an integer: '") + bad + "'"))
        << "'" << bad << "'";
}

}  // namespace
