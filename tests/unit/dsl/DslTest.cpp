// DslTest.cpp - the DSL's static types (dtypes, shapes, expression types, promotion) and the
// host-side helpers (kernel names, views, cdiv). Needs no tracer: expression types are checked
// with decltype, and expression trees are built from leaves, which trace nothing.
#include <tessel/tessel.hpp>

#include <gtest/gtest.h>

#include <string>
#include <type_traits>
#include <utility>

namespace ts = tessel;
namespace hana = boost::hana;
using namespace ts::literals;

namespace {

// ---- dtypes and promotion ---------------------------------------------------------------------

static_assert(ts::f16::value == ts::dtype::f16 && ts::bf16::value == ts::dtype::bf16 &&
              ts::f32::value == ts::dtype::f32 && ts::i32::value == ts::dtype::i32);
static_assert(std::is_empty_v<ts::bf16>);
static_assert(ts::is_floating_v<ts::bf16> && !ts::is_floating_v<ts::i32>);
static_assert(ts::is_half_v<ts::f16> && ts::is_half_v<ts::bf16> && !ts::is_half_v<ts::f32>);
static_assert(!ts::is_storage_dtype_v<ts::i1> && ts::is_dtype_v<ts::i1>);

using ts::detail::promote_t;
static_assert(std::is_same_v<promote_t<ts::f32, ts::f32>, ts::f32>);
static_assert(std::is_same_v<promote_t<ts::bf16, ts::f32>, ts::f32>);
static_assert(std::is_same_v<promote_t<ts::f16, ts::bf16>, ts::f32>);
static_assert(std::is_same_v<promote_t<ts::i32, ts::bf16>, ts::bf16>);
static_assert(std::is_same_v<promote_t<ts::bf16, ts::detail::untyped_float>, ts::bf16>);
static_assert(std::is_same_v<promote_t<ts::i32, ts::detail::untyped_float>, ts::f32>);
static_assert(std::is_same_v<promote_t<ts::i32, ts::detail::untyped_int>, ts::i32>);
static_assert(std::is_same_v<promote_t<ts::i1, ts::f32>, ts::detail::no_dtype>);

// ---- compile-time integers and shapes ---------------------------------------------------------

static_assert(std::is_same_v<decltype(128_c), hana::llong<128>>);
static_assert(std::is_same_v<std::remove_cv_t<decltype(ts::c<64>)>, hana::llong<64>>);
static_assert(ts::c<64> * 2_c == 128_c);

using acc_t = ts::tile<ts::f32, 128, 256>;
using a_t = ts::tile<ts::bf16, 128, 64>;
using b_t = ts::tile<ts::bf16, 256, 64>;
using bias_t = ts::tile<ts::bf16, 256>;
using col_t = ts::tile<ts::f32, 128>;
using i_t = ts::tile<ts::i32, 128, 256>;

static_assert(acc_t::rank == 2 && bias_t::rank == 1);
static_assert(std::is_same_v<acc_t::shape_type, ts::shape<128, 256>>);
static_assert(hana::size(acc_t::shape) == hana::size_c<2>);
static_assert(hana::at_c<1>(acc_t::shape) == 256_c);
static_assert(std::is_same_v<ts::shape_of<acc_t>, ts::shape<128, 256>>);
static_assert(std::is_same_v<ts::dtype_of<a_t>, ts::bf16>);

// ---- expression types -------------------------------------------------------------------------

template <class T>
const T& val();  // declval for lvalues, usable in decltype only

using dot_t = decltype(ts::dot(val<a_t>(), val<b_t>().T()));
static_assert(std::is_same_v<ts::dtype_of<dot_t>, ts::f32>);
static_assert(std::is_same_v<ts::shape_of<dot_t>, ts::shape<128, 256>>);
static_assert(std::is_same_v<ts::tile_of<dot_t>, acc_t>);
static_assert(std::is_same_v<ts::shape_of<decltype(val<b_t>().T())>, ts::shape<64, 256>>);
static_assert(std::is_same_v<ts::shape_of<decltype(val<b_t>().T().T())>, ts::shape<256, 64>>);

using epilogue_t = decltype(ts::relu(val<acc_t>() + val<bias_t>().row()));
static_assert(std::is_same_v<ts::tile_of<epilogue_t>, acc_t>);  // bf16 row promotes to f32
static_assert(std::is_same_v<ts::dtype_of<decltype(ts::cast<ts::bf16>(val<acc_t>()))>, ts::bf16>);
static_assert(std::is_same_v<ts::dtype_of<decltype(val<acc_t>() + val<col_t>().col())>, ts::f32>);

static_assert(std::is_same_v<ts::dtype_of<decltype(val<a_t>() * 2.0f)>, ts::bf16>);
static_assert(std::is_same_v<ts::dtype_of<decltype(1 + val<a_t>())>, ts::bf16>);
static_assert(std::is_same_v<ts::dtype_of<decltype(val<i_t>() * 2)>, ts::i32>);
static_assert(std::is_same_v<ts::dtype_of<decltype(val<i_t>() * 0.5f)>, ts::f32>);
static_assert(std::is_same_v<ts::dtype_of<decltype(val<i_t>() + val<acc_t>())>, ts::f32>);
static_assert(std::is_same_v<ts::dtype_of<decltype(val<acc_t>() * 2_c)>, ts::f32>);
static_assert(std::is_same_v<ts::dtype_of<decltype(-val<acc_t>())>, ts::f32>);

using mask_t = decltype(val<acc_t>() > 0.0f);
static_assert(std::is_same_v<ts::dtype_of<mask_t>, ts::i1>);
static_assert(std::is_same_v<ts::shape_of<mask_t>, ts::shape<128, 256>>);
static_assert(std::is_same_v<ts::dtype_of<decltype(ts::where(val<mask_t>(), val<acc_t>(), 0))>,
                             ts::f32>);
static_assert(std::is_same_v<ts::dtype_of<decltype(ts::where(val<mask_t>(), 1.0f, 0))>, ts::f32>);
static_assert(std::is_same_v<ts::dtype_of<decltype(ts::max(val<acc_t>(), 0.0f))>, ts::f32>);
static_assert(std::is_same_v<ts::dtype_of<decltype(ts::exp(val<a_t>()))>, ts::bf16>);

// Operations that are not offered at all (constraints, not static_asserts).
template <class A, class B>
concept addable = requires(const A& a, const B& b) { a + b; };
static_assert(addable<acc_t, float> && addable<int, acc_t> && addable<acc_t, ts::index>);
static_assert(!addable<acc_t, std::string>);
static_assert(!addable<ts::f32, acc_t>);
template <class E>
concept exp_able = requires(const E& e) { ts::exp(e); };
static_assert(exp_able<acc_t> && !exp_able<float>);
template <class A, class B>
concept dot_able = requires(const A& a, const B& b) { ts::dot(a, b); };
static_assert(!dot_able<a_t, float>);

// Tile variables need a trace to exist, but their type is an ordinary class.
static_assert(std::is_copy_constructible_v<acc_t> && std::is_copy_assignable_v<acc_t>);
static_assert(!std::is_default_constructible_v<acc_t>);
static_assert(std::is_constructible_v<acc_t, dot_t>);
static_assert(std::is_assignable_v<acc_t&, epilogue_t>);

// ---- expression trees without a trace ----------------------------------------------------------

TEST(Dsl, ExpressionTreesDescribeThemselves) {
  ts::expr::leaf<ts::f32, ts::shape<128, 256>> acc(0);
  ts::expr::leaf<ts::bf16, ts::shape<256>> bias(1);
  auto e = ts::relu(acc + bias.row());
  EXPECT_EQ(ts::describe(e), "relu(add(tile<f32,128x256>, row(tile<bf16,256>)))");
  ts::expr::leaf<ts::bf16, ts::shape<128, 64>> a(2);
  ts::expr::leaf<ts::bf16, ts::shape<256, 64>> b(3);
  EXPECT_EQ(ts::describe(ts::cast<ts::bf16>(ts::dot(a, b.T()) * 0.5f)),
            "cast<bf16>(mul(dot(tile<bf16,128x64>, trans(tile<bf16,256x64>)), float))");
  EXPECT_EQ(ts::describe(ts::where(acc > 0, acc, 1.0f)),
            "where(gt(tile<f32,128x256>, int), tile<f32,128x256>, float)");
  // Nodes hold their operands by value: the expression outlives the leaves it was built from.
  auto make = [] {
    ts::expr::leaf<ts::f32, ts::shape<4>> x(7);
    return ts::exp(x) + x;
  };
  auto kept = make();
  EXPECT_EQ(hana::at_c<1>(kept.operands).v, 7);
}

// ---- host-side helpers -----------------------------------------------------------------------

template <int BM, int BN, int BK = 64>
struct gemm {
  void operator()(ts::tensor<ts::bf16, 2>, ts::tensor<ts::bf16, 2>, ts::tensor<ts::bf16, 2>) const {}
};

TEST(Dsl, KernelNamesAreSanitisedTypeNames) {
  EXPECT_EQ((ts::detail::kernel_name<gemm<128, 256>>()), "gemm_128_256_64");
  EXPECT_EQ(ts::detail::sanitize_kernel_name("ns::gemm<128, 256, 64>"), "ns_gemm_128_256_64");
  EXPECT_EQ(ts::detail::sanitize_kernel_name("(anonymous namespace)::k"), "k");
  EXPECT_EQ(ts::detail::sanitize_kernel_name("3x"), "k_3x");
  EXPECT_EQ(ts::detail::sanitize_kernel_name("::"), "kernel");
  std::string longName(200, 'a');
  std::string s = ts::detail::sanitize_kernel_name(longName);
  EXPECT_EQ(s.size(), 64u);
  EXPECT_EQ(s, ts::detail::sanitize_kernel_name(longName));  // stable
  EXPECT_NE(s, ts::detail::sanitize_kernel_name(longName + "b"));
}

TEST(Dsl, ViewsDefaultToRowMajor) {
  int dummy = 0;
  ts::tensor_arg a = ts::view<ts::bf16>(&dummy, {100, 64});
  EXPECT_EQ(a.data, &dummy);
  EXPECT_EQ(a.type, ts::dtype::bf16);
  EXPECT_EQ(a.rank, 2);
  EXPECT_EQ(a.sizes[0], 100);
  EXPECT_EQ(a.sizes[1], 64);
  EXPECT_EQ(a.strides[0], 64);
  EXPECT_EQ(a.strides[1], 1);
  ts::tensor_arg c = ts::view<ts::f32>(nullptr, {4, 5, 6});
  EXPECT_EQ(c.strides[0], 30);
  EXPECT_EQ(c.strides[1], 6);
  EXPECT_EQ(c.strides[2], 1);
  ts::tensor_arg t = ts::view<ts::f16>(nullptr, {64, 100}, {1, 64});  // column-major
  EXPECT_EQ(t.strides[0], 1);
  EXPECT_EQ(t.strides[1], 64);
  EXPECT_THROW(ts::view<ts::f32>(nullptr, {1, 2, 3, 4}), ts::error);
  EXPECT_THROW(ts::view<ts::f32>(nullptr, {}), ts::error);
  EXPECT_THROW(ts::view<ts::f32>(nullptr, {4, 4}, {1}), ts::error);
  EXPECT_THROW(ts::view<ts::f32>(nullptr, {-1}), ts::error);
}

TEST(Dsl, HostCdiv) {
  static_assert(ts::cdiv(1000, 128) == 8);
  static_assert(ts::cdiv(1024, 128) == 8);
  static_assert(ts::cdiv(1025, 128_c) == 9);
  unsigned long long big = 1ull << 40;
  EXPECT_EQ(ts::cdiv(big + 1, 2), (1ull << 39) + 1);
  ts::grid g{static_cast<unsigned>(ts::cdiv(1000, 128)), static_cast<unsigned>(ts::cdiv(300, 256))};
  EXPECT_EQ(g.x, 8u);
  EXPECT_EQ(g.y, 2u);
  EXPECT_EQ(g.z, 1u);
}

TEST(Dsl, OptionsUseDesignatedInitialisers) {
  ts::options o{.schedule = ts::schedule::tma, .stages = 4, .dump_dir = "d"};
  EXPECT_EQ(o.schedule, ts::schedule::tma);
  EXPECT_EQ(o.stages, 4);
  EXPECT_EQ(o.dump_dir, "d");
  EXPECT_EQ(o.cluster[0], 1);
}

}  // namespace
