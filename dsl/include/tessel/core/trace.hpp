// tessel/core/trace.hpp - the small, opaque interface between the DSL headers and the tracer.
//
// The DSL (header-only, no MLIR or CUDA headers) describes a tile program by calling these
// functions while the user's functor runs once under `tessel::jit`. They are implemented in
// frontend/ (libtessel.so), which turns each call into a `tessel`/`arith`/`math`/`scf` op.
//
// Values are opaque handles (`trace::value`) into the current trace. Every call takes the
// user's source location, which becomes the op's FileLineColLoc. Errors in a call (which the
// DSL's static_asserts should already have excluded) throw tessel::error.
#pragma once

#include <cstdint>
#include <span>

#include "tessel/core/export.hpp"

namespace tessel {

/// Element types of tiles and tensors.
// (Appended in order: the values are part of the on-disk kernel cache's keys.)
enum class dtype : std::uint8_t { f16, bf16, f32, i32, i1, index, f8e4m3, f8e5m2 };

namespace trace {

/// Handle of an SSA value in the current trace (scalar index, scalar, or tile).
using value = std::int32_t;
inline constexpr value no_value = -1;

/// Source position of the user's code (from std::source_location).
struct loc {
  const char* file = "";
  unsigned line = 0;
  unsigned column = 0;
};

enum class unary_op : std::uint8_t { neg, exp, exp2, log, sqrt, rsqrt, abs, tanh, sigmoid, relu, silu, gelu_tanh,
                                      erf, gelu_erf };
enum class binary_op : std::uint8_t { add, sub, mul, div, rem, min, max };
enum class compare_op : std::uint8_t { eq, ne, lt, le, gt, ge };
enum class reduce_op : std::uint8_t { sum, max, amax };

// ---- session ----------------------------------------------------------------------------
/// Starts tracing kernel `name`; one session per thread at a time.
TESSEL_API void begin(const char* name);
/// Declares the next kernel argument: a global tensor of `rank` dims with element type `t`.
TESSEL_API value arg_tensor(dtype t, int rank, loc l);
/// Declares the next kernel argument: a runtime scalar of type `t` (f32 or i32), given at launch.
TESSEL_API value arg_scalar(dtype t, loc l);
/// Records a user error that the DSL found while tracing (e.g. a `break` out of a traced loop);
/// the trace goes on, and ending it throws tessel::error with the first such message at `l`.
TESSEL_API void fail(const char* message, loc l);
/// Drops the current thread's trace, if any (after an exception in the user's functor).
TESSEL_API void abandon() noexcept;

// ---- scalars (index arithmetic for offsets and loop bounds) ------------------------------
TESSEL_API value program_id(int axis, loc l);
TESSEL_API value num_programs(int axis, loc l);
TESSEL_API value dim(value tensor, int axis, loc l);
TESSEL_API value const_index(std::int64_t v, loc l);
/// A scalar constant of type `t` (f16/bf16/f32/i32).
TESSEL_API value const_scalar(dtype t, double v, loc l);
/// Binary op on two scalars or two tiles of equal shape and dtype (after DSL broadcasting).
TESSEL_API value binary(binary_op op, value a, value b, loc l);
TESSEL_API value unary(unary_op op, value a, loc l);
/// Elementwise compare; the result is i1 (scalar or tile).
TESSEL_API value compare(compare_op op, value a, value b, loc l);
/// Elementwise select: cond ? a : b (cond is i1 with the shape of a and b).
TESSEL_API value select(value cond, value a, value b, loc l);

// ---- tiles ----------------------------------------------------------------------------
/// A tile of `shape` filled with `v`.
TESSEL_API value full(dtype t, std::span<const std::int64_t> shape, double v, loc l);
/// A tile of `shape` filled with the scalar value `s`.
TESSEL_API value splat(value s, std::span<const std::int64_t> shape, loc l);
/// Loads the tile of `shape` at `offsets` (index scalars) of global tensor `tensor`.
TESSEL_API value load(value tensor, std::span<const value> offsets,
                      std::span<const std::int64_t> shape, loc l);
/// The element at `offsets` of `tensor` as a scalar of its dtype (0 outside the tensor).
TESSEL_API value load_element(value tensor, std::span<const value> offsets, loc l);
/// Stores `tile` at `offsets` of `tensor` (out-of-bounds elements are dropped).
TESSEL_API void store(value tensor, std::span<const value> offsets, value tile, loc l);
/// a (MxK) x b (KxN) + acc (MxN f32). `acc` may be no_value (then zero).
TESSEL_API value dot(value a, value b, value acc, loc l);
TESSEL_API value trans(value tile, loc l);
/// Broadcast: source dim i becomes result dim dims[i]; result has `shape`.
TESSEL_API value broadcast(value tile, std::span<const std::int64_t> dims,
                           std::span<const std::int64_t> shape, loc l);
TESSEL_API value cast(value v, dtype to, loc l);
/// Reduces a 2-d floating-point tile along `axis` (0 or 1) to a 1-d f32 tile (tessel.reduce).
TESSEL_API value reduce(reduce_op op, value tile, int axis, loc l);
/// Stores the partial `reduced` (a `reduce` result) at `offsets` of `tensor`, combining it with
/// the tensor's elements (tessel.store {combine}).
TESSEL_API void store_combine(value tensor, std::span<const value> offsets, value reduced, loc l);

// ---- traced loops with automatic loop-carried values -----------------------------------
/// A mutable variable slot (a DSL tile or scalar variable). Loops carry the slots that their
/// body reassigns: the tracer turns them into scf.for iter_args.
using var = std::int32_t;
TESSEL_API var var_new(value v);
TESSEL_API value var_get(var x);
TESSEL_API void var_set(var x, value v);
/// Opens `for i in [lb, ub) step s`; returns the induction variable (index).
TESSEL_API value for_begin(value lb, value ub, value step, loc l);
/// Closes the innermost loop.
TESSEL_API void for_end(loc l);

}  // namespace trace
}  // namespace tessel
