//===- TracerTest.cpp - DSL functors traced into tessel IR ---------------===//
//
// Traces DSL kernels with ts::detail::trace_only (what ts::jit does, without
// compiling) and checks the IR structurally: the mainloop's scf.for and its
// loop-carried accumulator, the accumulator form of tessel.dot, broadcasts of
// fused epilogues, nested loops, source locations, and that invalid programs
// surface as tessel::error quoting the user's file:line.
//
//===----------------------------------------------------------------------===//

#include <tessel/tessel.hpp>

#include "tessel/Dialect/Tessel/Tessel.h"
#include "tessel/Frontend/Tracer.h"
#include "trace_support.hpp"

#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace ts = tessel;
namespace tir = mlir::tessel;
using namespace ts::literals;
using ::testing::HasSubstr;

namespace {

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

int gemmDotLine = 0;

template <int BM_, int BN_, int BK_ = 64>
struct gemm {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B,
                  ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK)) {
      gemmDotLine = __LINE__ + 1;
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    }
    C.store({m, n}, ts::cast<ts::bf16>(acc));
  }
};

struct axpy {
  void operator()(ts::tensor<ts::f32, 1> X, ts::tensor<ts::f32, 1> Y) const {
    auto o = ts::program_id(0) * 1024_c;
    Y.store({o}, X.load({o}, 1024_c) * 2.0f + Y.load({o}, 1024_c));
  }
};

struct gemm_bias_relu {
  static constexpr auto BM = 128_c, BN = 256_c, BK = 64_c;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B,
                  ts::tensor<ts::bf16, 1> bias, ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(ts::relu(acc + bias.load({n}, BN).row())));
  }
};

/// One matrix of a batch per program_id(2): rank-3 tensors, rank-2 tiles.
struct batched_gemm {
  static constexpr auto BM = 128_c, BN = 128_c, BK = 64_c;
  void operator()(ts::tensor<ts::bf16, 3> A, ts::tensor<ts::bf16, 3> B,
                  ts::tensor<ts::bf16, 3> C) const {
    auto b = ts::program_id(2), m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(2), BK))
      acc += ts::dot(A.load({b, m, k}, BM, BK), B.load({b, n, k}, BN, BK).T());
    C.store({b, m, n}, ts::cast<ts::bf16>(acc));
  }
};

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

using tessel_test::traceKernel;

std::string print(mlir::ModuleOp module, bool debugInfo = true) {
  std::string s;
  llvm::raw_string_ostream os(s);
  mlir::OpPrintingFlags flags;
  if (debugInfo)
    flags.enableDebugInfo();
  module->print(os, flags);
  return s;
}

template <class Op>
std::vector<Op> collect(mlir::Operation *root) {
  std::vector<Op> ops;
  root->walk([&](Op op) { ops.push_back(op); });
  return ops;
}

mlir::func::FuncOp kernelOf(mlir::ModuleOp module) {
  auto funcs = collect<mlir::func::FuncOp>(module);
  EXPECT_EQ(funcs.size(), 1u);
  return funcs.empty() ? mlir::func::FuncOp() : funcs.front();
}

bool inThisFile(mlir::Location loc) {
  auto f = mlir::dyn_cast<mlir::FileLineColLoc>(loc);
  return f && llvm::StringRef(f.getFilename().str()).ends_with("TracerTest.cpp");
}

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1))
    ++n;
  return n;
}

//===----------------------------------------------------------------------===//
// GEMM mainloop
//===----------------------------------------------------------------------===//

TEST(Tracer, GemmHasOneLoopCarryingTheAccumulator) {
  auto traced = traceKernel(gemm<128, 256>{});
  mlir::ModuleOp module = *traced->module;
  ASSERT_TRUE(mlir::succeeded(mlir::verify(module)));
  EXPECT_EQ(traced->kernelName, "gemm_128_256_64");

  mlir::func::FuncOp fn = kernelOf(module);
  EXPECT_EQ(fn.getSymName(), "gemm_128_256_64");
  EXPECT_TRUE(fn->hasAttr("tessel.kernel"));
  ASSERT_EQ(fn.getNumArguments(), 3u);
  auto refType = mlir::dyn_cast<tir::RefType>(fn.getArgument(0).getType());
  ASSERT_TRUE(refType);
  EXPECT_EQ(refType.getRank(), 2u);
  EXPECT_TRUE(refType.getElementType().isBF16());

  auto loops = collect<mlir::scf::ForOp>(module);
  ASSERT_EQ(loops.size(), 1u);
  mlir::scf::ForOp loop = loops.front();
  ASSERT_EQ(loop.getNumRegionIterArgs(), 1u);
  // The init is the zeros constant, the bound is tessel.dim of A along 1.
  auto init = loop.getInitArgs()[0].getDefiningOp<mlir::arith::ConstantOp>();
  ASSERT_TRUE(init);
  EXPECT_EQ(mlir::cast<mlir::RankedTensorType>(init.getType()).getShape(),
            llvm::ArrayRef<int64_t>({128, 256}));
  auto dim = loop.getUpperBound().getDefiningOp<tir::DimOp>();
  ASSERT_TRUE(dim);
  EXPECT_EQ(dim.getAxis(), 1);

  // One dot, in the loop, accumulating into the block argument, yielded.
  auto dots = collect<tir::DotOp>(module);
  ASSERT_EQ(dots.size(), 1u);
  tir::DotOp dot = dots.front();
  EXPECT_EQ(dot->getParentOp(), loop.getOperation());
  EXPECT_EQ(dot.getAcc(), loop.getRegionIterArgs()[0]);
  auto yield = mlir::cast<mlir::scf::YieldOp>(loop.getBody()->getTerminator());
  ASSERT_EQ(yield.getNumOperands(), 1u);
  EXPECT_EQ(yield.getOperand(0), dot.getResult());

  // B is loaded 256x64 and transposed.
  auto trans = dot.getB().getDefiningOp<tir::TransOp>();
  ASSERT_TRUE(trans);
  auto loadB = trans.getSrc().getDefiningOp<tir::LoadOp>();
  ASSERT_TRUE(loadB);
  EXPECT_EQ(mlir::cast<mlir::RankedTensorType>(loadB.getType()).getShape(),
            llvm::ArrayRef<int64_t>({256, 64}));
  EXPECT_EQ(loadB.getOffsets()[1], loop.getInductionVar());
  EXPECT_TRUE(dot.getA().getDefiningOp<tir::LoadOp>());

  // After the loop: store(cast(loop result)).
  auto stores = collect<tir::StoreOp>(module);
  ASSERT_EQ(stores.size(), 1u);
  auto castOp = stores.front().getValue().getDefiningOp<tir::CastOp>();
  ASSERT_TRUE(castOp);
  EXPECT_EQ(castOp.getSrc(), loop.getResult(0));
  EXPECT_FALSE(collect<mlir::UnrealizedConversionCastOp>(module).size());

  // Locations: the dot points at its line in this file.
  auto dotLoc = mlir::dyn_cast<mlir::FileLineColLoc>(dot.getLoc());
  ASSERT_TRUE(dotLoc);
  EXPECT_TRUE(inThisFile(dotLoc));
  EXPECT_EQ(static_cast<int>(dotLoc.getLine()), gemmDotLine);

  std::string text = print(module);
  EXPECT_EQ(count(text, "scf.for"), 1u) << text;
  EXPECT_EQ(count(text, "iter_args("), 1u) << text;
  EXPECT_THAT(text, HasSubstr("tessel.dot"));
  EXPECT_THAT(text, HasSubstr("tessel.trans"));
  EXPECT_THAT(text, HasSubstr("TracerTest.cpp"));
}

TEST(Tracer, EveryOpCarriesAUserLocation) {
  auto traced = traceKernel(gemm_bias_relu{});
  mlir::func::FuncOp fn = kernelOf(*traced->module);
  int ops = 0;
  fn.walk([&](mlir::Operation *op) {
    if (mlir::isa<mlir::func::FuncOp, mlir::func::ReturnOp>(op))
      return;
    ++ops;
    EXPECT_TRUE(inThisFile(op->getLoc())) << op->getName().getStringRef().str();
  });
  EXPECT_GT(ops, 10);
}

TEST(Tracer, AccPlusDotIsOneDot) {
  struct k {
    void operator()(ts::tensor<ts::f16, 2> A, ts::tensor<ts::f16, 2> B,
                    ts::tensor<ts::f32, 2> C) const {
      auto acc = ts::zeros<ts::f32>(64_c, 64_c);
      for (auto i : ts::range(0, A.size(1), 32_c))
        acc = acc + ts::dot(A.load({0, i}, 64_c, 32_c), B.load({i, 0}, 32_c, 64_c));
      C.store({0, 0}, acc);
    }
  };
  auto traced = traceKernel(k{});
  auto loops = collect<mlir::scf::ForOp>(*traced->module);
  ASSERT_EQ(loops.size(), 1u);
  auto dots = collect<tir::DotOp>(*traced->module);
  ASSERT_EQ(dots.size(), 1u);
  EXPECT_EQ(dots.front().getAcc(), loops.front().getRegionIterArgs()[0]);
  EXPECT_TRUE(collect<mlir::arith::AddFOp>(*traced->module).empty());
  EXPECT_TRUE(collect<tir::TransOp>(*traced->module).empty());
}

//===----------------------------------------------------------------------===//
// Elementwise kernels and epilogues
//===----------------------------------------------------------------------===//

TEST(Tracer, BatchedGemmLoadsMatricesOfRank3Tensors) {
  auto traced = traceKernel(batched_gemm{});
  mlir::ModuleOp module = *traced->module;
  ASSERT_TRUE(mlir::succeeded(mlir::verify(module)));
  auto loads = collect<tir::LoadOp>(module);
  ASSERT_EQ(loads.size(), 2u);
  for (tir::LoadOp load : loads) {
    EXPECT_EQ(load.getRef().getType().getRank(), 3u);
    EXPECT_EQ(load.getOffsets().size(), 3u);
    EXPECT_EQ(mlir::cast<mlir::RankedTensorType>(load.getType()).getRank(), 2);
    // The batch offset is program_id(2), outside the loop.
    auto pid = load.getOffsets()[0].getDefiningOp<tir::ProgramIdOp>();
    ASSERT_TRUE(pid);
    EXPECT_EQ(pid.getAxis(), 2u);
  }
  auto stores = collect<tir::StoreOp>(module);
  ASSERT_EQ(stores.size(), 1u);
  EXPECT_EQ(stores.front().getOffsets().size(), 3u);
  EXPECT_EQ(mlir::cast<mlir::RankedTensorType>(stores.front().getValue().getType()).getShape(),
            llvm::ArrayRef<int64_t>({128, 128}));
}

TEST(Tracer, Axpy) {
  auto traced = traceKernel(axpy{});
  mlir::ModuleOp module = *traced->module;
  EXPECT_EQ(traced->kernelName, "axpy");
  EXPECT_TRUE(collect<mlir::scf::ForOp>(module).empty());
  EXPECT_EQ(collect<tir::LoadOp>(module).size(), 2u);
  auto muls = collect<mlir::arith::MulFOp>(module);
  ASSERT_EQ(muls.size(), 1u);
  // The scalar 2.0f is a dense splat constant of the tile's type.
  auto two = muls.front().getRhs().getDefiningOp<mlir::arith::ConstantOp>();
  ASSERT_TRUE(two);
  auto dense = mlir::dyn_cast<mlir::DenseElementsAttr>(two.getValue());
  ASSERT_TRUE(dense && dense.isSplat());
  EXPECT_EQ(dense.getSplatValue<float>(), 2.0f);
  auto adds = collect<mlir::arith::AddFOp>(module);
  ASSERT_EQ(adds.size(), 1u);
  auto stores = collect<tir::StoreOp>(module);
  ASSERT_EQ(stores.size(), 1u);
  EXPECT_EQ(stores.front().getValue(), adds.front().getResult());
  EXPECT_EQ(mlir::cast<mlir::RankedTensorType>(adds.front().getType()).getShape(),
            llvm::ArrayRef<int64_t>({1024}));
}

TEST(Tracer, BiasReluEpilogueBroadcastsAlongRows) {
  auto traced = traceKernel(gemm_bias_relu{});
  mlir::ModuleOp module = *traced->module;
  auto broadcasts = collect<tir::BroadcastOp>(module);
  ASSERT_EQ(broadcasts.size(), 1u);
  tir::BroadcastOp b = broadcasts.front();
  EXPECT_EQ(b.getDims(), llvm::ArrayRef<int64_t>({1}));
  auto resultType = mlir::cast<mlir::RankedTensorType>(b.getType());
  EXPECT_EQ(resultType.getShape(), llvm::ArrayRef<int64_t>({128, 256}));
  EXPECT_TRUE(resultType.getElementType().isF32());
  // The bf16 bias is widened to f32 before the broadcast (256 conversions, not 128x256).
  auto widen = b.getSrc().getDefiningOp<tir::CastOp>();
  ASSERT_TRUE(widen);
  EXPECT_TRUE(widen.getSrc().getDefiningOp<tir::LoadOp>());

  auto relus = collect<mlir::arith::MaxNumFOp>(module);
  ASSERT_EQ(relus.size(), 1u);
  auto add = relus.front().getLhs().getDefiningOp<mlir::arith::AddFOp>();
  ASSERT_TRUE(add);
  EXPECT_EQ(add.getLhs(), collect<mlir::scf::ForOp>(module).front().getResult(0));
  EXPECT_EQ(add.getRhs(), b.getResult());
  auto stores = collect<tir::StoreOp>(module);
  ASSERT_EQ(stores.size(), 1u);
  auto narrow = stores.front().getValue().getDefiningOp<tir::CastOp>();
  ASSERT_TRUE(narrow);
  EXPECT_EQ(narrow.getSrc(), relus.front().getResult());

  std::string text = print(module, /*debugInfo=*/false);
  EXPECT_THAT(text, HasSubstr("tessel.broadcast"));
  EXPECT_THAT(text, HasSubstr("[1] : tensor<256xf32> -> tensor<128x256xf32>"));
}

TEST(Tracer, MathWhereMaxAndCasts) {
  struct k2 {
    void operator()(ts::tensor<ts::f32, 2> X, ts::tensor<ts::i32, 2> Y,
                    ts::tensor<ts::f16, 2> Z) const {
      auto o = ts::program_id(0) * 64_c;
      auto x = X.load({o, 0}, 64_c, 32_c);
      auto y = Y.load({o, 0_c}, 64_c, 32_c);
      auto e = ts::where(x > 0.0f, ts::exp(x) * 2_c, -x / 3) + ts::cast<ts::f32>(y) * o;
      ts::tile<ts::f32, 64, 32> t = e;
      t = t * 0.5f;
      t -= 1;
      t *= x;
      auto z = ts::eval(ts::max(t, 0.0f) + ts::gelu(x) + ts::silu(x) - ts::sigmoid(x) +
                        ts::rsqrt(ts::abs(x)) + ts::log(ts::exp2(x)) + ts::tanh(x) +
                        ts::sqrt(x) + ts::min(x, t));
      X.store({o, 0}, z);
      Y.store({o, 0}, ts::cast<ts::i32>(ts::relu(y - 1) + ts::abs(y) * 2 % 7));
      Z.store({o, 0}, ts::cast<ts::f16>(ts::where(y != 0, z, 1.0f)));
    }
  };
  auto traced = traceKernel(k2{});
  mlir::ModuleOp module = *traced->module;
  ASSERT_TRUE(mlir::succeeded(mlir::verify(module)));
  EXPECT_EQ(collect<mlir::arith::SelectOp>(module).size(), 2u);
  EXPECT_EQ(collect<mlir::arith::CmpFOp>(module).size(), 1u);
  EXPECT_EQ(collect<mlir::arith::CmpIOp>(module).size(), 1u);
  EXPECT_EQ(collect<tir::SplatOp>(module).size(), 1u);  // the index `o` in a tile expression
  EXPECT_FALSE(collect<mlir::arith::MaximumFOp>(module).empty());
  EXPECT_FALSE(collect<mlir::arith::MinimumFOp>(module).empty());
  EXPECT_FALSE(collect<mlir::math::TanhOp>(module).empty());
  EXPECT_FALSE(collect<mlir::arith::RemSIOp>(module).empty());
  EXPECT_FALSE(collect<mlir::arith::MaxSIOp>(module).empty());
  EXPECT_FALSE(collect<mlir::math::AbsIOp>(module).empty());
}

//===----------------------------------------------------------------------===//
// Loops
//===----------------------------------------------------------------------===//

TEST(Tracer, NestedLoopsCarryThroughBothLevels) {
  struct k {
    void operator()(ts::tensor<ts::f32, 2> X, ts::tensor<ts::f32, 2> Y) const {
      auto acc = ts::zeros<ts::f32>(16_c, 16_c);
      for (auto i : ts::range(0, X.size(0), 16_c))
        for (auto j : ts::range(0, X.size(1), 16_c))
          acc += X.load({i, j}, 16_c, 16_c);
      Y.store({0, 0}, acc);
    }
  };
  auto traced = traceKernel(k{});
  auto loops = collect<mlir::scf::ForOp>(*traced->module);
  ASSERT_EQ(loops.size(), 2u);
  // walk() is post-order: the inner loop comes first.
  mlir::scf::ForOp inner = loops[0], outer = loops[1];
  ASSERT_EQ(inner->getParentOp(), outer.getOperation());
  ASSERT_EQ(outer.getNumRegionIterArgs(), 1u);
  ASSERT_EQ(inner.getNumRegionIterArgs(), 1u);
  EXPECT_EQ(inner.getInitArgs()[0], outer.getRegionIterArgs()[0]);
  auto outerYield = mlir::cast<mlir::scf::YieldOp>(outer.getBody()->getTerminator());
  EXPECT_EQ(outerYield.getOperand(0), inner.getResult(0));
  auto add = collect<mlir::arith::AddFOp>(*traced->module);
  ASSERT_EQ(add.size(), 1u);
  EXPECT_EQ(add.front().getLhs(), inner.getRegionIterArgs()[0]);
  auto store = collect<tir::StoreOp>(*traced->module);
  EXPECT_EQ(store.front().getValue(), outer.getResult(0));
}

TEST(Tracer, NestedLoopsWithLocalsAndIndexVariables) {
  struct k {
    void operator()(ts::tensor<ts::f32, 2> X, ts::tensor<ts::f32, 2> Y) const {
      auto acc = ts::zeros<ts::f32>(16_c, 16_c);
      auto scale = ts::full<ts::f32>(0.5, 16_c, 16_c);   // read in the loop, never written
      ts::index row = ts::program_id(0) * 16_c;
      for (auto i : ts::range(0, 4)) {
        auto part = ts::zeros<ts::f32>(16_c, 16_c);       // made in the body: not carried out
        for (auto j : ts::range(0, X.size(1), 16_c))
          part += X.load({row, j}, 16_c, 16_c) * scale;
        acc = acc + part;
        row = row + 16;
        (void)i;
      }
      Y.store({row, 0}, acc);
    }
  };
  auto traced = traceKernel(k{});
  auto loops = collect<mlir::scf::ForOp>(*traced->module);
  ASSERT_EQ(loops.size(), 2u);
  mlir::scf::ForOp inner = loops[0], outer = loops[1];
  // Outer carries acc and row (index); scale is read but not carried.
  ASSERT_EQ(outer.getNumRegionIterArgs(), 2u);
  EXPECT_TRUE(mlir::isa<mlir::RankedTensorType>(outer.getRegionIterArgs()[0].getType()) ||
              mlir::isa<mlir::RankedTensorType>(outer.getRegionIterArgs()[1].getType()));
  int indexArgs = 0;
  for (mlir::Value v : outer.getRegionIterArgs())
    indexArgs += v.getType().isIndex();
  EXPECT_EQ(indexArgs, 1);
  // Inner carries only `part`, initialised in the outer body.
  ASSERT_EQ(inner.getNumRegionIterArgs(), 1u);
  mlir::Operation *partInit = inner.getInitArgs()[0].getDefiningOp();
  ASSERT_TRUE(partInit);
  EXPECT_EQ(partInit->getParentOp(), outer.getOperation());
  // The store uses the outer loop's results.
  auto store = collect<tir::StoreOp>(*traced->module).front();
  for (mlir::Value v : store.getOffsets().take_front(1))
    EXPECT_EQ(v.getDefiningOp(), outer.getOperation());
  EXPECT_EQ(store.getValue().getDefiningOp(), outer.getOperation());
  EXPECT_TRUE(collect<mlir::UnrealizedConversionCastOp>(*traced->module).empty());
  EXPECT_TRUE(mlir::succeeded(mlir::verify(*traced->module)));
}

TEST(Tracer, LoopThatChangesNothingHasNoIterArgs) {
  struct k {
    void operator()(ts::tensor<ts::f32, 1> X) const {
      auto t = ts::full<ts::f32>(1.0, 128_c);
      for (auto i : ts::range(0, X.size(0), 128_c))
        X.store({i}, t + X.load({i}, 128_c));
    }
  };
  auto traced = traceKernel(k{});
  auto loops = collect<mlir::scf::ForOp>(*traced->module);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops.front().getNumRegionIterArgs(), 0u);
  EXPECT_TRUE(collect<mlir::UnrealizedConversionCastOp>(*traced->module).empty());
}

TEST(Tracer, SwapInALoopUsesTheIterationValues) {
  // a, b = b, a each iteration: the yields must be the block arguments, swapped.
  struct k {
    void operator()(ts::tensor<ts::f32, 1> X) const {
      auto a = ts::full<ts::f32>(1.0, 32_c);
      auto b = ts::full<ts::f32>(2.0, 32_c);
      for (auto i : ts::range(0, 3)) {
        auto t = a;
        a = b;
        b = t;
        (void)i;
      }
      X.store({0}, a - b);
    }
  };
  auto traced = traceKernel(k{});
  auto loop = collect<mlir::scf::ForOp>(*traced->module).front();
  ASSERT_EQ(loop.getNumRegionIterArgs(), 2u);
  auto yield = mlir::cast<mlir::scf::YieldOp>(loop.getBody()->getTerminator());
  EXPECT_EQ(yield.getOperand(0), loop.getRegionIterArgs()[1]);
  EXPECT_EQ(yield.getOperand(1), loop.getRegionIterArgs()[0]);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(Tracer, VerifierErrorsQuoteTheUsersLine) {
  // Through the raw tracer API: a dot whose inner dimensions differ.
  namespace tr = ts::trace;
  const int line = __LINE__;
  tr::loc here{__FILE__, static_cast<unsigned>(line), 7};
  tr::begin("bad_dot");
  tr::value A = tr::arg_tensor(ts::dtype::bf16, 2, here);
  tr::value zero = tr::const_index(0, here);
  std::int64_t sa[] = {64, 32}, sb[] = {64, 32};
  tr::value offs[] = {zero, zero};
  tr::value a = tr::load(A, offs, sa, here);
  tr::value b = tr::load(A, offs, sb, here);
  tr::dot(a, b, tr::no_value, here);
  try {
    ts::frontend::finishTrace();
    FAIL() << "expected tessel::error";
  } catch (const ts::error &e) {
    std::string msg = e.what();
    EXPECT_THAT(msg, HasSubstr("inner dimensions differ"));
    EXPECT_THAT(msg, HasSubstr("TracerTest.cpp:" + std::to_string(line) + ":7: error:"));
    EXPECT_THAT(msg, HasSubstr("bad_dot"));
  }
  EXPECT_FALSE(ts::frontend::isTracing());
}

TEST(Tracer, ValueEscapingItsLoopIsAnError) {
  // Through the raw tracer API: a tile loaded in the body, stored after the loop.
  namespace tr = ts::trace;
  tr::loc here{__FILE__, static_cast<unsigned>(__LINE__), 1};
  tr::begin("escape");
  tr::value X = tr::arg_tensor(ts::dtype::f32, 1, here);
  tr::value lo = tr::const_index(0, here), hi = tr::const_index(8, here);
  tr::value iv = tr::for_begin(lo, hi, hi, here);
  std::int64_t shape[] = {8};
  tr::value offs[] = {iv};
  tr::value t = tr::load(X, offs, shape, here);
  tr::for_end(here);
  tr::value zoffs[] = {lo};
  tr::loc storeLoc{__FILE__, static_cast<unsigned>(__LINE__), 3};
  EXPECT_THAT([&] { tr::store(X, zoffs, t, storeLoc); },
              ::testing::ThrowsMessage<ts::error>(::testing::AllOf(
                  HasSubstr("TracerTest.cpp:" + std::to_string(storeLoc.line) + ":3"),
                  HasSubstr("after the loop"))));
  ts::frontend::abandonTrace();
}

TEST(Tracer, ExpressionEscapingItsLoopIsAnError) {
  // An expression (not a tile variable) reassigned in the body and stored after the loop.
  static int storeLine;
  struct k {
    void operator()(ts::tensor<ts::f32, 1> X) const {
      auto e = ts::zeros<ts::f32>(8_c) * 1.0f;
      for (auto i : ts::range(0, 8))
        e = X.load({i}, 8_c) * 1.0f;
      storeLine = __LINE__ + 1;
      X.store({0}, e);
    }
  };
  try {
    ts::detail::trace_only(k{});
    FAIL() << "expected tessel::error";
  } catch (const ts::error &err) {
    EXPECT_THAT(err.what(), HasSubstr("TracerTest.cpp:" + std::to_string(storeLine)));
    EXPECT_THAT(err.what(), HasSubstr("declared before the loop"));
  }
  EXPECT_FALSE(ts::frontend::isTracing());
}

TEST(Tracer, BreakOutOfATracedLoopIsAnError) {
  struct k {
    void operator()(ts::tensor<ts::f32, 1> X) const {
      auto t = ts::zeros<ts::f32>(8_c);
      for (auto i : ts::range(0, 8)) {
        t += X.load({i}, 8_c);
        break;
      }
      X.store({0}, t);
    }
  };
  ts::detail::trace_only(k{});
  EXPECT_THAT([] { ts::frontend::finishTrace(); },
              ::testing::ThrowsMessage<ts::error>(HasSubstr("left early")));
}

TEST(Tracer, ExceptionInTheFunctorAbandonsTheTrace) {
  struct k {
    void operator()(ts::tensor<ts::f32, 1> X) const {
      auto t = X.load({0}, 8_c);
      for (auto i : ts::range(0, 8)) {
        (void)i;
        throw std::runtime_error("user error");
      }
      X.store({0}, t);
    }
  };
  EXPECT_THROW(ts::detail::trace_only(k{}), std::runtime_error);
  EXPECT_FALSE(ts::frontend::isTracing());
  // The thread can trace again.
  auto traced = traceKernel(axpy{});
  EXPECT_TRUE(mlir::succeeded(mlir::verify(*traced->module)));
}

TEST(Tracer, NestedBeginAndCallsOutsideATraceThrow) {
  EXPECT_THROW(ts::frontend::finishTrace(), ts::error);
  EXPECT_THROW(ts::trace::program_id(0, {}), ts::error);
  ts::trace::begin("outer");
  EXPECT_THAT([] { ts::trace::begin("inner"); },
              ::testing::ThrowsMessage<ts::error>(HasSubstr("still being traced")));
  EXPECT_THROW(ts::trace::program_id(3, {}), ts::error);
  ts::frontend::abandonTrace();
  EXPECT_FALSE(ts::frontend::isTracing());
}

TEST(Tracer, ContextHasTheDialectsLoaded) {
  auto traced = traceKernel(axpy{});
  for (const char *name : {"tessel", "arith", "math", "scf", "func"})
    EXPECT_TRUE(traced->context->getLoadedDialect(name)) << name;
  // The module round-trips through its printed form.
  std::string text = print(*traced->module, /*debugInfo=*/false);
  EXPECT_THAT(text, HasSubstr("func.func @axpy(%arg0: !tessel.ref<1 x f32>"));
  EXPECT_THAT(text, HasSubstr("attributes {tessel.kernel}"));
}

} // namespace
