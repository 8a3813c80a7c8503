// expect: load: the number of offsets must equal the tensor rank
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::bf16, 2> A) const {
    auto m = ts::program_id(0) * 128_c;
    auto a = A.load({m}, 128_c, 64_c);   // one offset for a 2-d tensor
    A.store({m, 0}, a);
  }
};
