// autotune_helper - the second process of TunerTest's cross-process tests: under the fake driver
// of FakeGpu.h, makes a tuner over the fake kernels "slow" and "fast" and launches it once on a
// 1000-element problem, with the disk cache as the environment configures it (TESSEL_CACHE_DIR,
// TESSEL_AUTOTUNE). Prints
//
//   helper: source <timed|cached|disabled> winner <label> timed-batches <n> compiled <n>
//           launches <n> result <ok|bad>
//
// (one line): where the decision came from, how many batches were timed (events read), how many
// candidates were compiled, how many kernel launches were made, and whether the output is the
// winner's result. Exits 0, or 1 after "helper: error: ..." when the launch throws.
#include <cstdio>
#include <limits>
#include <vector>

#include "FakeGpu.h"
#include "tessel/Runtime/Autotune.h"

namespace fake = tessel::testing::fakegpu;

int main() {
  fake::Scope gpu;
  fake::state().kernels = {{"slow", {2.0, 2.0f}}, {"fast", {1.0, 2.0f}}};
  int compiled = 0;
  tessel::tune_options opts;
  opts.timing.warmup_ms = 5;
  opts.timing.min_total_ms = 0;
  opts.progress = tessel::tune_progress::never;
  std::vector<float> x(1000), y(1000, std::numeric_limits<float>::quiet_NaN());
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = float(i % 13) - 6.0f;
  try {
    auto tuner = tessel::detail::make_tuner(
        "helper", {fake::candidate("slow", &compiled), fake::candidate("fast", &compiled)}, opts);
    std::vector<tessel::kernel_arg> args = {fake::view(x.data(), 1000), fake::view(y.data(), 1000)};
    tessel::detail::tuner_launch(*tuner, nullptr, args);
    const tessel::tune_decision d = tessel::detail::tuner_last_decision(*tuner);
    bool ok = true;
    for (std::size_t i = 0; i < x.size(); ++i)
      ok = ok && y[i] == 2.0f * x[i];
    int launches = 0;
    for (const auto& [name, n] : fake::state().launches)
      launches += n;
    std::printf("helper: source %s winner %s timed-batches %d compiled %d launches %d result %s\n",
                tessel::to_string(d.source), d.label.c_str(), fake::state().elapsedQueries, compiled, launches,
                ok ? "ok" : "bad");
  } catch (const std::exception& e) {
    std::printf("helper: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
