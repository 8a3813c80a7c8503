// expect-compiles
// The control case of candidate_grid_function.cpp: a grid function of the launch's arguments (a
// lambda, ts::tile_grid), a labelled candidate, a tuner, its launch.
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f32, 1> X, ts::tensor<ts::f32, 1> Y) const {
    auto o = ts::program_id(0) * 1024_c;
    Y.store({o}, X.load({o}, 1024_c));
  }
};
void build(const float* x, float* y, long n) {
  ts::autotuner t = ts::autotune(
      "copy", {ts::candidate(k{}, {}, [](ts::launch_args a) { return ts::grid{unsigned(ts::cdiv(a[0].sizes[0], 1024))}; }),
               ts::candidate(k{}, {.schedule = ts::schedule::multistage}, ts::tile_grid(0, 1, 1024)).named("ms")});
  t.launch(nullptr, ts::view<ts::f32>(x, {n}), ts::view<ts::f32>(y, {n}));
  (void)t.last_decision();
}
