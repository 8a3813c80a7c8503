//===- Validate.cpp - host-side checks and parameter planning --------------===//
//
// Everything in this file runs without a GPU, so the unit tests (and CI)
// exercise every rule. The TMA rules are those of cuTensorMapEncodeTiled's
// documentation; checking them here turns the driver's bare
// CUDA_ERROR_INVALID_VALUE into a message naming the argument and the rule.
//
//===----------------------------------------------------------------------===//

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <array>
#include <limits>
#include <optional>
#include <sstream>

#include "tessel/Runtime/Kernel.h"

namespace tessel::runtime {

std::size_t elementSize(dtype t) {
  switch (t) {
  case dtype::f16:
  case dtype::bf16:
    return 2;
  case dtype::f32:
  case dtype::i32:
    return 4;
  case dtype::i1:
  case dtype::f8e4m3:
  case dtype::f8e5m2:
    return 1;
  case dtype::index:
    return 8;
  }
  return 1;
}

const char* dtypeName(dtype t) {
  switch (t) {
  case dtype::f16:
    return "f16";
  case dtype::bf16:
    return "bf16";
  case dtype::f32:
    return "f32";
  case dtype::i32:
    return "i32";
  case dtype::i1:
    return "i1";
  case dtype::index:
    return "index";
  case dtype::f8e4m3:
    return "f8e4m3";
  case dtype::f8e5m2:
    return "f8e5m2";
  }
  return "?";
}

namespace {

/// Tile offsets and TMA coordinates are signed 32-bit integers in the kernels
/// (PTX tensor coordinates are .s32), so no dimension may exceed 2^31 - 1
/// elements; byte offsets are 64-bit, so a tensor may hold more elements in all.
constexpr std::int64_t kMaxDim = (std::int64_t(1) << 31) - 1;
constexpr std::int64_t kTmaMaxStrideBytes = std::int64_t(1) << 40;

bool tmaCapable(dtype t) {
  return t == dtype::f16 || t == dtype::bf16 || t == dtype::f32 || t == dtype::i32 ||
         t == dtype::f8e4m3 || t == dtype::f8e5m2;
}

std::string hexAddress(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%" PRIxPTR, reinterpret_cast<std::uintptr_t>(p));
  return buf;
}

const char* kindName(ParamSpec::Kind k) {
  switch (k) {
  case ParamSpec::Kind::Pointer:
    return "pointer";
  case ParamSpec::Kind::Size:
    return "size";
  case ParamSpec::Kind::Stride:
    return "stride";
  case ParamSpec::Kind::TmaDescriptor:
    return "TMA descriptor";
  case ParamSpec::Kind::GridDim:
    return "grid extent";
  case ParamSpec::Kind::TmaUsable:
    return "TMA-usable flag";
  case ParamSpec::Kind::Workspace:
    return "stream-K workspace";
  case ParamSpec::Kind::Scalar:
    return "scalar";
  }
  return "?";
}

bool hasStrideParam(const CompiledKernel& k, int arg, int dim) {
  for (const ParamSpec& p : k.params)
    if (p.kind == ParamSpec::Kind::Stride && p.arg == arg && p.dim == dim)
      return true;
  return false;
}

/// The argument's dimensions innermost first, as the tensor map lists them:
/// `inner` first, then the others from the last to the first.
std::array<int, 3> tmaOrder(int rank, int inner) {
  std::array<int, 3> order{0, 0, 0};
  int j = 0;
  order[j++] = inner;
  for (int d = rank - 1; d >= 0; --d)
    if (d != inner)
      order[j++] = d;
  return order;
}

/// The byte stride TMA is given for the j-th dimension (innermost first,
/// j >= 1) of `a` in `order`. A dimension of size 1 is never stepped along,
/// so its stride is free; the user's value (PyTorch puts anything there) is
/// replaced by the smallest legal one that cannot overlap the inner dimensions.
std::uint64_t tmaStrideBytes(const tensor_arg& a, const std::array<int, 3>& order, int j) {
  const std::int64_t elem = static_cast<std::int64_t>(elementSize(a.type));
  const int d = order[j];
  if (a.sizes[d] != 1)
    return static_cast<std::uint64_t>(a.strides[d] * elem);
  std::int64_t span = elem;
  for (int i = 0; i < j; ++i) {
    const int e = order[i];
    if (a.sizes[e] > 1)
      span += (a.sizes[e] - 1) * a.strides[e] * elem;
  }
  return static_cast<std::uint64_t>((span + 15) / 16 * 16);
}

/// The first TMA rule `a` breaks when TMA addresses it with dimension `inner`
/// contiguous, as {rule, message}; {"", ""} when it meets them all.
std::pair<std::string, std::string> tmaRuleBroken(const tensor_arg& a, int inner) {
  const std::int64_t elem = static_cast<std::int64_t>(elementSize(a.type));
  auto dimName = [](int d) { return "dimension " + std::to_string(d); };
  if (!tmaCapable(a.type))
    return {"dtype", std::string("TMA cannot address ") + dtypeName(a.type) + " tensors"};
  for (int d = 0; d < a.rank; ++d)
    if (a.sizes[d] > kMaxDim)
      return {"size-limit", "size of " + dimName(d) + " is " + std::to_string(a.sizes[d]) +
                                "; TMA allows at most 2^31 - 1 elements per dimension"};
  if (a.data && reinterpret_cast<std::uintptr_t>(a.data) % 16 != 0)
    return {"base-alignment", "data address " + hexAddress(a.data) +
                                  " is not 16-byte aligned (TMA requires a 16-byte aligned base address)"};
  if (a.sizes[inner] != 1 && a.strides[inner] != 1) {
    if (inner == a.rank - 1)
      return {"unit-stride", "innermost stride (" + dimName(inner) + ") must be 1, got " +
                                 std::to_string(a.strides[inner]) +
                                 ": the innermost dimension must be contiguous for TMA"};
    return {"unit-stride", "stride of " + dimName(inner) + " must be 1, got " + std::to_string(a.strides[inner]) +
                               ": the kernel's TMA loads take " + dimName(inner) + " as the contiguous one"};
  }
  for (int d = 0; d < a.rank; ++d) {
    if (d == inner || a.sizes[d] == 1)
      continue;  // never stepped along; planParams substitutes a legal stride
    std::int64_t bytes = a.strides[d] * elem;
    if (bytes % 16 != 0)
      return {"stride-multiple",
              "stride of " + dimName(d) + " is " + std::to_string(a.strides[d]) + " elements = " +
                  std::to_string(bytes) + " bytes, not a multiple of 16 bytes (TMA requirement: pad it to a "
                  "multiple of " + std::to_string(16 / elem) + " elements)"};
    if (bytes >= kTmaMaxStrideBytes)
      return {"stride-limit", "stride of " + dimName(d) + " is " + std::to_string(bytes) +
                                  " bytes; TMA requires strides below 2^40 bytes"};
  }
  return {};
}

/// True when a TMA store may write `a` with dimension `inner` contiguous: the
/// rules validateArgs enforces for TMA-loaded arguments (16-byte aligned base,
/// contiguous `inner` dimension, other strides multiples of 16 bytes below
/// 2^40, sizes 1..2^31-1), and rows that end on a 16-byte boundary. A TMA
/// store clips the inner dimension only to 16 bytes: on the H200 a 17-element
/// bf16 row in rows of 24 got 24 elements written (7 past the row; issue 11).
/// Kernels whose output fails this store with bounds-checked pointer stores.
bool tmaUsable(const tensor_arg& a, int inner) {
  if (a.data == nullptr)
    return false;
  for (int d = 0; d < a.rank; ++d)
    if (a.sizes[d] < 1)
      return false;
  if (a.sizes[inner] * static_cast<std::int64_t>(elementSize(a.type)) % 16 != 0)
    return false;
  return tmaRuleBroken(a, inner).first.empty();
}

}  // namespace

void validateCompiledKernel(const CompiledKernel& k) {
  auto fail = [&](const std::string& what) {
    throw tessel::error("tessel: internal error: kernel '" + k.name + "' " + what);
  };
  if (k.name.empty())
    throw tessel::error("tessel: internal error: compiled kernel has no name");
  if (k.ptx.empty() && k.cubin.empty())
    fail("has neither PTX nor a cubin");
  if (k.arch.rfind("sm_", 0) != 0)
    fail("has architecture '" + k.arch + "'; expected sm_XY[a]");
  if (k.blockThreads < 1 || k.blockThreads > 1024)
    fail("has " + std::to_string(k.blockThreads) + " threads per block; expected 1..1024");
  for (int i = 0; i < 3; ++i)
    if (k.cluster[i] < 1)
      fail("has cluster extent 0 along axis " + std::to_string(i));
  if (std::uint64_t(k.cluster[0]) * k.cluster[1] * k.cluster[2] > 16)
    fail("has a cluster of more than 16 CTAs");
  for (std::size_t i = 0; i < k.args.size(); ++i) {
    if (k.args[i].isScalar()) {
      if (k.args[i].type != dtype::f32 && k.args[i].type != dtype::i32)
        fail("argument " + std::to_string(i) + " is a scalar of dtype " + dtypeName(k.args[i].type) +
             "; scalars are f32 or i32");
      continue;
    }
    if (k.args[i].rank < 1 || k.args[i].rank > 3)
      fail("argument " + std::to_string(i) + " has rank " + std::to_string(k.args[i].rank) +
           "; tensors have rank 1..3");
  }

  for (std::size_t pi = 0; pi < k.params.size(); ++pi) {
    const ParamSpec& p = k.params[pi];
    std::string where = "parameter " + std::to_string(pi) + " (" + kindName(p.kind) + " of argument " +
                        std::to_string(p.arg) + ")";
    if (p.arg < 0 || static_cast<std::size_t>(p.arg) >= k.args.size())
      fail(where + " refers to a missing argument (the kernel has " + std::to_string(k.args.size()) +
           ")");
    if (p.kind == ParamSpec::Kind::Workspace) {
      if (!k.persistent || k.workspaceSlotBytes == 0 || k.cluster[0] * k.cluster[1] * k.cluster[2] != 1)
        fail(where + ": a stream-K workspace is for persistent kernels without clusters, with a "
                     "nonzero slot size");
      continue;
    }
    if (p.kind == ParamSpec::Kind::GridDim) {
      if (!k.persistent || p.dim < 0 || p.dim > 2)
        fail(where + ": grid extents are for persistent kernels, axes 0..2 (got axis " +
             std::to_string(p.dim) + ")");
      continue;
    }
    const ArgSpec& a = k.args[p.arg];
    if ((p.kind == ParamSpec::Kind::Scalar) != a.isScalar())
      fail(where + (a.isScalar() ? ": the argument is a scalar" : ": the argument is a tensor"));
    if (p.kind == ParamSpec::Kind::Scalar)
      continue;
    if ((p.kind == ParamSpec::Kind::Size || p.kind == ParamSpec::Kind::Stride) &&
        (p.dim < 0 || p.dim >= a.rank))
      fail(where + " refers to dimension " + std::to_string(p.dim) + " of a rank-" +
           std::to_string(a.rank) + " tensor");
    if (p.kind != ParamSpec::Kind::TmaDescriptor)
      continue;
    if (!a.loadedByTma && !p.store)
      fail(where + ": the argument is not marked loadedByTma");
    if (!tmaCapable(a.type))
      fail(where + ": TMA cannot load " + dtypeName(a.type) + " tensors");
    if (p.contiguousDim >= a.rank)
      fail(where + ": contiguous dimension " + std::to_string(p.contiguousDim) + " of a rank-" +
           std::to_string(a.rank) + " tensor");
    if (p.swizzleBytes != 0 && p.swizzleBytes != 32 && p.swizzleBytes != 64 && p.swizzleBytes != 128)
      fail(where + ": swizzle of " + std::to_string(p.swizzleBytes) + " bytes; expected 0, 32, 64 or 128");
    for (int d = 0; d < a.rank; ++d)
      if (p.box[d] < 1 || p.box[d] > 256)
        fail(where + ": box extent " + std::to_string(p.box[d]) + " along dimension " + std::to_string(d) +
             " (innermost first) is outside 1..256");
    std::uint64_t innerBytes = p.box[0] * elementSize(a.type);
    if (innerBytes % 16 != 0)
      fail(where + ": inner box extent " + std::to_string(p.box[0]) + " x " +
           std::to_string(elementSize(a.type)) + " bytes is not a multiple of 16 bytes");
    if (p.swizzleBytes != 0 && innerBytes > static_cast<std::uint64_t>(p.swizzleBytes))
      fail(where + ": inner box extent of " + std::to_string(innerBytes) + " bytes exceeds the " +
           std::to_string(p.swizzleBytes) + "-byte swizzle span");
  }
}

namespace {

/// A double as %g prints it ("1.5", "1e+40", "nan").
std::string formatDouble(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

/// The rules of a ts::scalar parameter (docs/scalars.md): the launch argument is a value of the
/// parameter's kind (a floating-point number for f32, an integer for i32) that fits its dtype;
/// a tensor for a scalar parameter, or a value for a tensor parameter, is an error.
template <class Fail>
void validateScalarArg(const ArgSpec& spec, const kernel_arg& a, const Fail& fail) {
  const std::string want = std::string("ts::scalar<ts::") + dtypeName(spec.type) + ">";
  if (!spec.isScalar())
    fail(std::string("expected a tensor (rank ") + std::to_string(spec.rank) + ", " + dtypeName(spec.type) +
         "), got a scalar value; pass a ts::view");
  if (a.kind == arg_kind::tensor)
    fail("expected a scalar value for " + want + ", got a tensor; pass " +
         (spec.type == dtype::f32 ? "a float (1.5f) or ts::value(x)" : "an integer (3) or ts::value(n)"));
  if (spec.type == dtype::f32) {
    if (a.kind != arg_kind::floating)
      fail("expected a floating-point value for " + want + ", got the integer " + std::to_string(a.integer) +
           "; write it as a float (" + std::to_string(a.integer) + ".0f): integers are not converted");
    const double x = a.floating;
    if (std::isfinite(x) && std::fabs(x) > static_cast<double>(std::numeric_limits<float>::max()))
      fail("the value " + formatDouble(x) + " for " + want + " is outside the f32 range (|x| <= 3.40282e+38)");
    return;
  }
  if (a.kind != arg_kind::integer)
    fail("expected an integer value for " + want + ", got the floating-point value " + formatDouble(a.floating) +
         "; pass an integer (floating-point values are not converted)");
  if (a.integer < std::numeric_limits<std::int32_t>::min() || a.integer > std::numeric_limits<std::int32_t>::max())
    fail("the value " + std::to_string(a.integer) + " for " + want +
         " is outside the i32 range (-2147483648 .. 2147483647)");
}

}  // namespace

bool hasEmptyArg(std::span<const tensor_arg> args) {
  for (const tensor_arg& a : args)
    for (int d = 0; d < a.rank && d < 3; ++d)
      if (a.sizes[d] == 0)
        return true;
  return false;
}

bool nothingToDo(const CompiledKernel& k, std::span<const tensor_arg> args, grid g) {
  if (g.x == 0 || g.y == 0 || g.z == 0)
    return true;
  bool anyOutput = false;
  for (std::size_t i = 0; i < args.size() && i < k.args.size(); ++i) {
    if (!k.args[i].stored)
      continue;
    anyOutput = true;
    if (!hasEmptyArg(args.subspan(i, 1)))
      return false;
  }
  // Without outputs (a kernel description without `stored` flags), the old rule: any empty argument.
  return anyOutput || hasEmptyArg(args);
}

bool tmaLoadsAnEmptyArg(const CompiledKernel& k, std::span<const tensor_arg> args) {
  for (std::size_t i = 0; i < args.size() && i < k.args.size(); ++i)
    if (k.args[i].loadedByTma && hasEmptyArg(args.subspan(i, 1)))
      return true;
  return false;
}

void validateCommonArgs(const CompiledKernel& k, std::span<const tensor_arg> args, grid g) {
  // The messages' text is built only to throw: a launch that passes builds no string (this runs
  // twice per launch that is not a cached one).
  auto kernelText = [&] { return "tessel: kernel '" + k.name + "'"; };
  if (args.size() != k.args.size())
    throw tessel::error(kernelText() + ": expected " + std::to_string(k.args.size()) + " argument" +
                        (k.args.size() == 1 ? "" : "s") + ", got " + std::to_string(args.size()));

  for (std::size_t i = 0; i < args.size(); ++i) {
    const ArgSpec& spec = k.args[i];
    const tensor_arg& a = args[i];
    auto fail = [&](const std::string& rule) {
      throw tessel::error(kernelText() + " argument " + std::to_string(i) + ": " + rule);
    };
    auto dimName = [](int d) { return "dimension " + std::to_string(d); };

    if (spec.isScalar() || a.kind != arg_kind::tensor) {
      validateScalarArg(spec, a, fail);
      continue;
    }

    if (a.rank != spec.rank)
      fail("expected rank " + std::to_string(spec.rank) + ", got " + std::to_string(a.rank));
    if (a.rank < 1 || a.rank > 3)
      fail("rank " + std::to_string(a.rank) + " is outside 1..3");
    if (a.type != spec.type)
      fail(std::string("expected dtype ") + dtypeName(spec.type) + ", got " + dtypeName(a.type));

    const int rank = a.rank;
    const int inner = rank - 1;
    const bool tma = spec.loadedByTma;
    const std::int64_t elem = static_cast<std::int64_t>(elementSize(a.type));
    bool empty = false;
    for (int d = 0; d < rank; ++d) {
      if (a.sizes[d] < 0)
        fail("size of " + dimName(d) + " is " + std::to_string(a.sizes[d]) + "; sizes must be >= 0");
      if (a.sizes[d] > kMaxDim)
        fail("size of " + dimName(d) + " is " + std::to_string(a.sizes[d]) +
             "; tessel kernels index each dimension with 32-bit integers: at most 2^31 - 1 = " +
             std::to_string(kMaxDim) + " elements per dimension (the whole tensor may be larger)");
      empty |= a.sizes[d] == 0;
    }
    // An empty tensor is never addressed: its strides do not matter.
    for (int d = 0; d < rank && !empty; ++d)
      if (a.sizes[d] != 1 && a.strides[d] < 1)
        fail("stride of " + dimName(d) + " is " + std::to_string(a.strides[d]) +
             "; strides must be >= 1 (only dimensions of size 1 may have any stride)");
    // (TMA-loaded arguments: the TMA rules below say more.)
    if (!empty && !tma && !hasStrideParam(k, static_cast<int>(i), inner) && a.sizes[inner] != 1 &&
        a.strides[inner] != 1)
      fail("innermost stride (" + dimName(inner) + ") must be 1, got " + std::to_string(a.strides[inner]) +
           ": the kernel assumes a contiguous innermost dimension");
    if (!empty && a.data == nullptr)
      fail("data pointer is null (only an empty tensor, one with a dimension of size 0, may be null)");
    if (a.data && reinterpret_cast<std::uintptr_t>(a.data) % elem != 0)
      fail("data address " + hexAddress(a.data) + " is not aligned to its element size (" +
           std::to_string(elem) + " bytes)");

    // The furthest element must be addressable: sum of (size-1)*stride*elem.
    if (!empty) {
      std::int64_t span = 0;
      for (int d = 0; d < rank; ++d) {
        if (a.sizes[d] <= 1)
          continue;
        std::int64_t step = 0;
        if (__builtin_mul_overflow(a.sizes[d] - 1, a.strides[d], &step) ||
            __builtin_mul_overflow(step, elem, &step) || __builtin_add_overflow(span, step, &span))
          fail("the tensor spans more than 2^63 bytes (sizes x strides overflow)");
      }
    }
  }

  auto gridText = [&] {
    return "grid (" + std::to_string(g.x) + ", " + std::to_string(g.y) + ", " + std::to_string(g.z) + ")";
  };
  const unsigned ext[3] = {g.x, g.y, g.z};
  const unsigned limit[3] = {2147483647u, 65535u, 65535u};
  const char* axis[3] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    // A zero extent (a grid built from an empty size) is accepted: launch() then launches nothing.
    if (ext[i] > limit[i])
      throw tessel::error(kernelText() + ": " + gridText() + ": grid." + axis[i] + " is " +
                          std::to_string(ext[i]) + "; CUDA allows at most " + std::to_string(limit[i]));
    if (!k.persistent && ext[i] != 0 && ext[i] % k.cluster[i] != 0)
      throw tessel::error(kernelText() + ": " + gridText() + ": grid." + axis[i] + " = " + std::to_string(ext[i]) +
                          " is not a multiple of the cluster extent " + std::to_string(k.cluster[i]) +
                          " (the kernel was compiled for cluster (" + std::to_string(k.cluster[0]) + ", " +
                          std::to_string(k.cluster[1]) + ", " + std::to_string(k.cluster[2]) + "))");
  }
  // Persistent kernels number the tiles of the whole grid in 32 bits.
  if (k.persistent && std::uint64_t(g.x) * g.y * g.z > std::uint64_t(kMaxDim))
    throw tessel::error(kernelText() + ": " + gridText() + ": " + std::to_string(std::uint64_t(g.x) * g.y * g.z) +
                        " programs; a persistent kernel (schedule " + k.schedule +
                        ") walks at most 2^31 - 1 tiles");

  // The traced program's shape relations (SizeContract).
  for (const SizeContract& c : k.sizeContracts) {
    if (c.argA >= static_cast<int>(args.size()) || c.argB >= static_cast<int>(args.size()))
      continue;
    const std::int64_t sa = args[c.argA].sizes[c.dimA], sb = args[c.argB].sizes[c.dimB];
    if (sa == sb)
      continue;
    std::string where;
    if (!c.whereA.empty() && !c.whereB.empty())
      where = " (" + c.whereA + " and " + c.whereB + ")";
    throw tessel::error(kernelText() + ": argument " + std::to_string(c.argB) + " dimension " + std::to_string(c.dimB) +
                        " has size " + std::to_string(sb) + " but argument " + std::to_string(c.argA) +
                        " dimension " + std::to_string(c.dimA) + " has size " + std::to_string(sa) +
                        "; they must be equal: the program reads or writes both at the same offsets with the "
                        "same tile extent" + where);
  }
}

void validateArgs(const CompiledKernel& k, std::span<const tensor_arg> args, grid g) {
  validateCommonArgs(k, args, g);
  if (std::optional<TmaViolation> v = findTmaViolation(k, args))
    throw tessel::error("tessel: kernel '" + k.name + "' argument " + std::to_string(v->arg) + ": " + v->message);
}

int tmaInnerDim(const CompiledKernel& k, int arg, bool store) {
  const int rank = k.args[arg].rank;
  for (const ParamSpec& p : k.params)
    if (p.kind == ParamSpec::Kind::TmaDescriptor && p.store == store && p.arg == arg &&
        p.contiguousDim >= 0 && p.contiguousDim < rank)
      return p.contiguousDim;
  return rank - 1;
}

std::optional<TmaViolation> findTmaViolation(const CompiledKernel& k, std::span<const tensor_arg> args) {
  for (std::size_t i = 0; i < args.size() && i < k.args.size(); ++i) {
    const ArgSpec& spec = k.args[i];
    if (!spec.loadedByTma || args[i].rank != spec.rank || hasEmptyArg(args.subspan(i, 1)))
      continue;
    auto [rule, message] = tmaRuleBroken(args[i], tmaInnerDim(k, static_cast<int>(i), /*store=*/false));
    if (rule.empty())
      continue;
    if (rule == "unit-stride" && contiguousDimOf(args[i]) < 0)
      message += " (no dimension of size > 1 has stride 1: only pointer loads with the real strides, "
                 "as in schedule multistage, can read this tensor)";
    return TmaViolation{static_cast<int>(i), rule, message};
  }
  return std::nullopt;
}

int contiguousDimOf(const tensor_arg& a) {
  if (a.rank < 1 || a.rank > 3)
    return -1;
  const int last = a.rank - 1;
  // An empty tensor (a size 0: a GEMM's A and B with K == 0) is never read, and ts::view gives it
  // strides >= 1 ({M, 0}: {1, 1}), which would read as column-major and compile a layout variant
  // for nothing: it has the default layout.
  for (int d = 0; d < a.rank; ++d)
    if (a.sizes[d] == 0)
      return last;
  if (a.sizes[last] > 1 && a.strides[last] == 1)
    return last;
  // The unit-stride dimension of size > 1, if another: a column-major M x 1
  // operand (strides {1, M}) is contiguous along M, not along its one column
  // (taking the last dimension made its row stride of 2 bytes break TMA's
  // rules and fall back to multistage for the wrong reason; issue 11).
  for (int d = last - 1; d >= 0; --d)
    if (a.sizes[d] > 1 && a.strides[d] == 1)
      return d;
  return a.sizes[last] <= 1 ? last : -1;
}

std::vector<int> layoutKey(std::span<const tensor_arg> args) {
  std::vector<int> key;
  key.reserve(args.size());
  for (const tensor_arg& a : args) {
    int d = contiguousDimOf(a);
    key.push_back(d >= 0 && d != a.rank - 1 ? d : -1);
  }
  return key;
}

bool isDefaultLayout(const std::vector<int>& key) {
  for (int d : key)
    if (d >= 0)
      return false;
  return true;
}

std::string variantTag(const std::string& schedule, const std::vector<int>& key) {
  std::string tag = schedule.empty() ? std::string("kernel") : schedule;
  if (isDefaultLayout(key))
    return tag;
  tag += "-L";
  for (int d : key)
    tag += d >= 0 ? static_cast<char>('0' + d) : '_';
  return tag;
}

std::vector<ParamValue> planParams(const CompiledKernel& k, std::span<const tensor_arg> args, grid g) {
  // Filled in place, from copies of one default value: building each ParamValue (104 bytes) on the
  // stack and copying it in read back what its zeroing had just stored, stalling on every
  // parameter, and value-initialising each element compiles to a `rep stos` apiece; the two were
  // a third of a full-path launch's host time for the 23 parameters of a cooperative GEMM.
  static const ParamValue blank{};
  std::vector<ParamValue> plan(k.params.size(), blank);
  for (std::size_t i = 0; i < k.params.size(); ++i) {
    const ParamSpec& p = k.params[i];
    const tensor_arg& a = args[p.arg];
    ParamValue& v = plan[i];
    v.kind = p.kind;
    switch (p.kind) {
    case ParamSpec::Kind::Pointer:
      v.scalar = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(a.data));
      break;
    case ParamSpec::Kind::Size:
      v.scalar = static_cast<std::uint64_t>(a.sizes[p.dim]);
      break;
    case ParamSpec::Kind::Stride:
      v.scalar = static_cast<std::uint64_t>(a.strides[p.dim]);
      break;
    case ParamSpec::Kind::GridDim:
      v.scalar = p.dim == 0 ? g.x : p.dim == 1 ? g.y : g.z;
      break;
    case ParamSpec::Kind::TmaUsable:
      v.scalar = tmaUsable(a, tmaInnerDim(k, p.arg, /*store=*/true)) ? 1 : 0;
      break;
    case ParamSpec::Kind::Workspace:
      v.scalar = 0;  // the stream's workspace, filled in by launch()
      break;
    case ParamSpec::Kind::Scalar:
      // The 4-byte parameter's bits in the low half (launch passes the slot's address: little
      // endian, so the kernel reads exactly these 4 bytes).
      if (k.args[p.arg].type == dtype::f32) {
        const float f = static_cast<float>(a.floating);
        std::uint32_t bits = 0;
        std::memcpy(&bits, &f, sizeof bits);
        v.scalar = bits;
      } else {
        v.scalar = static_cast<std::uint32_t>(static_cast<std::int32_t>(a.integer));
      }
      break;
    case ParamSpec::Kind::TmaDescriptor: {
      TmaEncoding& e = v.tma;
      e.type = a.type;
      e.rank = static_cast<std::uint32_t>(a.rank);
      e.globalAddress = a.data;
      e.swizzleBytes = p.swizzleBytes;
      const int inner = p.contiguousDim >= 0 && p.contiguousDim < a.rank ? p.contiguousDim : a.rank - 1;
      e.zeroed = p.store && !tmaUsable(a, inner);
      // tensor_arg is outermost first; the tensor map is innermost first
      // (the contiguous dimension, then the others from the last one).
      const std::array<int, 3> order = tmaOrder(a.rank, inner);
      for (int j = 0; j < a.rank; ++j) {
        e.globalDim[j] = static_cast<std::uint64_t>(a.sizes[order[j]]);
        e.boxDim[j] = p.box[j];
        e.elementStrides[j] = 1;
      }
      for (int j = 1; j < a.rank; ++j)
        e.globalStrides[j - 1] = tmaStrideBytes(a, order, j);
      // Rows past the tensor are not loaded (the kernel expects the same bytes: Ring.cpp).
      if (p.clipRows && a.rank >= 2)
        e.boxDim[1] = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(e.boxDim[1], (e.globalDim[1] + 7) / 8 * 8));
      break;
    }
    }
  }
  return plan;
}

std::string describeTma(const TmaEncoding& e) {
  std::ostringstream os;
  auto list = [&](const auto* v, std::uint32_t n) {
    os << '[';
    for (std::uint32_t i = 0; i < n; ++i)
      os << (i ? ", " : "") << v[i];
    os << ']';
  };
  os << dtypeName(e.type) << ", rank " << e.rank << ", address " << hexAddress(e.globalAddress)
     << ", globalDim ";
  list(e.globalDim, e.rank);
  os << " (innermost first), globalStrides ";
  list(e.globalStrides, e.rank > 0 ? e.rank - 1 : 0);
  os << " bytes, box ";
  list(e.boxDim, e.rank);
  os << ", swizzle " << e.swizzleBytes << "B";
  return os.str();
}

}  // namespace tessel::runtime
