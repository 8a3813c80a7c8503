// tessel/tessel.hpp - the tessel DSL: tile-level GEMM kernels in C++, JIT-compiled for Hopper.
//
//     #include <tessel/tessel.hpp>
//     namespace ts = tessel;
//     using namespace ts::literals;                                  // 128_c
//
//     struct gemm {
//       static constexpr auto BM = 128_c, BN = 256_c, BK = 64_c;
//       void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B,
//                       ts::tensor<ts::bf16, 2> C) const {
//         auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
//         auto acc = ts::zeros<ts::f32>(BM, BN);
//         for (auto k : ts::range(0, A.size(1), BK))
//           acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
//         C.store({m, n}, ts::cast<ts::bf16>(acc));
//       }
//     };
//     ts::kernel k = ts::jit(gemm{}, {.schedule = ts::schedule::tma, .stages = 4});
//
// Layout of the headers: core/ (dtypes, static shapes, index scalars, runtime scalar parameters,
// the tracer interface),
// expr/ (expression nodes, operators, tile variables), ops/ (tensors, dot, math, loops,
// program ids), kernel/ (jit, launch, runtime interface). No MLIR or CUDA header is included.
#pragma once

#include "tessel/core/dtype.hpp"
#include "tessel/core/index.hpp"
#include "tessel/core/location.hpp"
#include "tessel/core/scalar.hpp"
#include "tessel/core/shape.hpp"
#include "tessel/core/trace.hpp"
#include "tessel/expr/node.hpp"
#include "tessel/expr/operators.hpp"
#include "tessel/expr/tile.hpp"
#include "tessel/kernel/autotune.hpp"
#include "tessel/kernel/jit.hpp"
#include "tessel/kernel/runtime_api.hpp"
#include "tessel/ops/creation.hpp"
#include "tessel/ops/dot.hpp"
#include "tessel/ops/math.hpp"
#include "tessel/ops/program.hpp"
#include "tessel/ops/range.hpp"
#include "tessel/ops/reduce.hpp"
#include "tessel/ops/tensor.hpp"
