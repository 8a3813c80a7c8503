// expect: candidate: the grid function must take the launch's arguments (ts::launch_args) and return a ts::grid
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f32, 1> X, ts::tensor<ts::f32, 1> Y) const {
    auto o = ts::program_id(0) * 1024_c;
    Y.store({o}, X.load({o}, 1024_c));
  }
};
// A grid function of the problem size instead of the launch's arguments.
void build() { ts::candidate(k{}, {}, [](long n) { return ts::grid{unsigned(n / 1024)}; }); }
