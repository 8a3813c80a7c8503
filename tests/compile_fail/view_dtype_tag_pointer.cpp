// expect: view: the pointer points to a dtype tag
// ts::bf16 is a dtype tag (sizeof 1), not bf16 storage: `p + 1` would move one byte, so a view
// of a ts::bf16* does not compile.
#include <tessel/tessel.hpp>
namespace ts = tessel;

ts::tensor_arg one_in(const ts::bf16* p, long n) { return ts::view<ts::bf16>(p + 1, {n}); }
