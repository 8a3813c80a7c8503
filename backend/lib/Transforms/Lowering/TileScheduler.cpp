//===- Lowering/TileScheduler.cpp - the tile scheduler ----------------------===//
//
// Part of tessel-lower-to-nvvm: `hopper.tile_scheduler`, the program ids of
// the tile being computed:
//
//   %pid:3 = hopper.tile_scheduler "grid" raster_group 0 cluster [1, 1]
//     ==> %ctaid.x, %ctaid.y, %ctaid.z (warp_specialized: each role builds its
//         CTA's one tile in place, no loop around it; forEachUnit)
//   %pid:3 = hopper.tile_scheduler "grid" raster_group 8 cluster [1, 1]
//     ==> %ctaid remapped into raster groups (multistage, msRasterProgramIds)
//   %pid:3 = hopper.tile_scheduler "persistent" raster_group 8 cluster [2, 1] [stream_k]
//     ==> each role's loop over this CTA's units (forEachUnit): unit i is
//         tile firstTile + i * tileStride of the cluster-tile grid in grouped
//         raster order (setProgramIds), or with stream_k a stream-K part or
//         a whole tile (StreamK.cpp).
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/OperandLayout.h"
#include "tessel/Transforms/Passes.h"

#include "KernelBuilder.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace mlir::tessel;

namespace mlir::tessel::lowering {

/// The user's grid in cluster tiles: ceil(grid / cluster) along axes 0, 1.
std::array<Value, 2> clusterGrid(OpBuilder &b, Location loc, ArrayRef<Value> grid, int64_t cx,
                                 int64_t cy) {
  auto ceilDiv = [&](Value v, int64_t d) -> Value {
    if (d == 1)
      return v;
    Value dv = b.create<arith::ConstantIntOp>(loc, b.getI32Type(), d);
    Value dm1 = b.create<arith::ConstantIntOp>(loc, b.getI32Type(), d - 1);
    return b.create<arith::DivUIOp>(loc, b.create<arith::AddIOp>(loc, v, dm1), dv);
  };
  return {ceilDiv(grid[0], cx), ceilDiv(grid[1], cy)};
}

/// Grouped raster order: tile `r` (i32, in [0, gx * gy)) of a gx x gy grid ->
/// (x, y). Groups of `raster` (ScheduleAttr::getRasterGroup) rows along axis 0
/// are walked column by column, so that CTAs running at the same time share A
/// and B tiles in L2:
///
///   raster 2, gx = 5, gy = 3:   x\y  0  1  2
///                                0    0  2  4
///                                1    1  3  5
///                                2    6  8 10
///                                3    7  9 11
///                                4   12 13 14   (a last, narrower group)
std::pair<Value, Value> KernelBuilder::groupedRaster(Value r, Value gx, Value gy) {
  int64_t g = schedulerOp.getRasterGroup();
  Value width = b.create<arith::MulIOp>(loc, i32(g), gy);
  Value group = b.create<arith::DivUIOp>(loc, r, width);
  Value firstX = b.create<arith::MulIOp>(loc, group, i32(g));
  Value size = b.create<arith::MinUIOp>(loc, b.create<arith::SubIOp>(loc, gx, firstX), i32(g));
  Value inGroup = b.create<arith::RemUIOp>(loc, r, width);
  return {b.create<arith::AddIOp>(loc, firstX, b.create<arith::RemUIOp>(loc, inGroup, size)),
          b.create<arith::DivUIOp>(loc, inGroup, size)};
}

/// Cluster tile `t` (i32) -> program ids in grouped raster order
/// (groupedRaster over the grid of cluster tiles). The CTA of rank r in a 2x1
/// (1x2) cluster takes row (column) 2X + r.
void KernelBuilder::setProgramIds(Value t) {
  auto [gx, gy] = clusterGrid(b, loc, gridParams, clusterX, clusterY);
  Value perSlice = b.create<arith::MulIOp>(loc, gx, gy);
  Value z = b.create<arith::DivUIOp>(loc, t, perSlice);
  Value r = b.create<arith::RemUIOp>(loc, t, perSlice);
  auto [x, y] = groupedRaster(r, gx, gy);
  if (clusterX > 1)
    x = b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, x, i32(clusterX)), clusterRank);
  if (clusterY > 1)
    y = b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, y, i32(clusterY)), clusterRank);
  programIds = {x, y, z};
  tileValid = b.create<arith::AndIOp>(
      loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, x, gridParams[0]),
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, y, gridParams[1]));
  scalars.clear(); // everything derived from program ids is per tile
}

KernelBuilder::TileWalk KernelBuilder::walkTiles() {
  TileWalk w;
  // Tiles this CTA computes: its own (non-persistent), or tiles
  // blockIdx.x, blockIdx.x + gridDim.x, ... of the user's grid (persistent).
  if (persistent) {
    // Clusters walk cluster tiles: cluster c = blockIdx.x / clusterSize takes
    // c, c + gridDim.x / clusterSize, ...
    auto [gx, gy] = clusterGrid(b, loc, gridParams, clusterX, clusterY);
    w.numTiles = b.create<arith::MulIOp>(loc, b.create<arith::MulIOp>(loc, gx, gy), gridParams[2]);
    w.firstTile = b.create<arith::DivUIOp>(loc, b.create<NVVM::BlockIdXOp>(loc, b.getI32Type()),
                                           i32(clusterSize));
    w.tileStride = b.create<arith::DivUIOp>(loc, b.create<NVVM::GridDimXOp>(loc, b.getI32Type()),
                                            i32(clusterSize));
  } else {
    w.numTiles = i32(1);
    w.firstTile = i32(0);
    w.tileStride = i32(1);
  }
  // tileIter counts this CTA's tiles: the ring position is tileIter * nk + j.
  Value tileCount = b.create<arith::DivUIOp>(
      loc, b.create<arith::AddIOp>(loc, b.create<arith::SubIOp>(loc, w.numTiles, w.firstTile),
                                   b.create<arith::SubIOp>(loc, w.tileStride, i32(1))),
      w.tileStride);
  // Stream-K (StreamK.cpp): this CTA's work is sk.count units, stream-K
  // parts of tiles first; otherwise whole tiles, unit i = tile firstTile +
  // i * tileStride with ring positions i * nk + j.
  w.streamK = bool(workspace);
  if (w.streamK)
    planStreamK(w.numTiles);
  w.unitCount = w.streamK ? sk.count : tileCount;
  if (tileTrips && persistent && !w.streamK) {
    // The rotated walk of forEachUnitWithTrips: pass p (tiles p*S .. p*S +
    // S - 1, S CTAs) gives this CTA tile p*S + (first + p) mod S, so it has
    // a unit in the last, partial pass of R = numTiles mod S tiles iff
    // (first + numTiles / S) mod S < R.
    Value full = b.create<arith::DivUIOp>(loc, w.numTiles, w.tileStride);
    Value rem = b.create<arith::RemUIOp>(loc, w.numTiles, w.tileStride);
    Value lastSlot = b.create<arith::RemUIOp>(loc, b.create<arith::AddIOp>(loc, w.firstTile, full), w.tileStride);
    Value inLast = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, lastSlot, rem);
    w.unitCount = b.create<arith::AddIOp>(loc, full, b.create<arith::ExtUIOp>(loc, b.getI32Type(), inLast));
  }
  return w;
}

// A trip count per tile (tileTrips; whole tiles of a persistent walk, 1x1
// cluster). The walk is rotated: unit i of CTA c is tile i*S + (c + i) mod S
// (S CTAs), the same S tiles per pass as the plain walk (c + i*S) in another
// assignment. With the plain walk, tiles of uneven work whose pattern has a
// period dividing S (a masked grouped GEMM's live row tile of every 4, on 132
// CTAs) all land on the same CTAs; rotated, each CTA's slot moves by one per
// pass (docs/benchmarks.md runs 100-102). Unit i's k-steps start at ring
// position base_i = nk_0 + ... + nk_(i-1), not i * nk. Every role walks
// units start, start + step, ... and carries base through its tile loop; a
// role that skips units (pingpong's consumers, step 2) computes the skipped
// unit's nk too, from that unit's program ids, so that producer and
// consumers agree on every position:
//
//   base = start > 0 && unitCount > 0 ? nk(unit 0) : 0      (start is 0 or 1)
//   for i = start; i < unitCount; i += step:                  iter_args(base)
//     ids(unit i); nk_i = trip count;  body(i, {kBegin 0, kEnd nk_i, base})
//     next = base + nk_i (+ nk(unit i + 1) if step = 2 and i + 1 < unitCount)
//     yield next
LogicalResult KernelBuilder::forEachUnitWithTrips(const TileWalk &w, Value start, int64_t step,
                                                  function_ref<LogicalResult(Value, WorkUnit)> body) {
  if (w.streamK || step > 2)
    return fn.emitError("a trip count per tile needs whole tiles and at most two roles per unit");
  auto tileOf = [&](Value i) {
    Value slot = b.create<arith::RemUIOp>(loc, b.create<arith::AddIOp>(loc, w.firstTile, i), w.tileStride);
    return b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, i, w.tileStride), slot).getResult();
  };
  // The trip count of unit i (sets the program ids of its tile).
  auto tripsOf = [&](Value i) -> FailureOr<Value> {
    setProgramIds(tileOf(i));
    if (failed(computeTripCount()))
      return failure();
    return nk;
  };
  Value base0 = i32(0);
  if (step == 2) {
    Value skipsFirst = b.create<arith::AndIOp>(
        loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ugt, start, i32(0)),
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ugt, w.unitCount, i32(0)));
    auto ifOp = b.create<scf::IfOp>(loc, TypeRange{b.getI32Type()}, skipsFirst, /*withElse=*/true);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    FailureOr<Value> n0 = tripsOf(i32(0));
    if (failed(n0))
      return failure();
    b.create<scf::YieldOp>(loc, *n0);
    b.setInsertionPointToStart(ifOp.elseBlock());
    b.create<scf::YieldOp>(loc, i32(0));
    base0 = ifOp.getResult(0);
  }
  auto tiles = b.create<scf::ForOp>(loc, start, w.unitCount, i32(step), ValueRange{base0});
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(tiles.getBody());
  Value i = tiles.getInductionVar(), base = tiles.getRegionIterArgs()[0];
  FailureOr<Value> trips = tripsOf(i);
  if (failed(trips))
    return failure();
  Value own = *trips;
  if (failed(body(i, WorkUnit{Value(), i32(0), own, base})))
    return failure();
  Value next = b.create<arith::AddIOp>(loc, base, own);
  if (step == 2) {
    Value i1 = b.create<arith::AddIOp>(loc, i, i32(1));
    Value hasNext = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, i1, w.unitCount);
    auto ifOp = b.create<scf::IfOp>(loc, TypeRange{b.getI32Type()}, hasNext, /*withElse=*/true);
    OpBuilder::InsertionGuard g2(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    FailureOr<Value> other = tripsOf(i1);
    if (failed(other))
      return failure();
    b.create<scf::YieldOp>(loc, b.create<arith::AddIOp>(loc, next, *other).getResult());
    b.setInsertionPointToStart(ifOp.elseBlock());
    b.create<scf::YieldOp>(loc, next);
    next = ifOp.getResult(0);
  }
  b.create<scf::YieldOp>(loc, next);
  return success();
}

LogicalResult KernelBuilder::forEachUnit(const TileWalk &w, Value start, int64_t step,
                                         function_ref<LogicalResult(Value, WorkUnit)> body) {
  if (tileTrips && persistent)
    return forEachUnitWithTrips(w, start, step, body);
  // A CTA of a non-persistent schedule has one unit, its own tile: no loop.
  // (As a one-trip scf.for, LLVM's LICM hoisted everything the epilogue
  // computes from the program ids - a global address and a bounds predicate
  // per fragment element and operand - above the mainloop, where it stayed
  // live and spilled: 528 bytes for a 128 x 128 warp_specialized epilogue
  // reading two M x N tiles, against 0 in cooperative.)
  if (!persistent && !w.streamK && step == 1 && isConstantIntValue(start, 0))
    return body(i32(0), WorkUnit{Value(), i32(0), nk, b.create<arith::MulIOp>(loc, i32(0), nk)});
  auto tiles = b.create<scf::ForOp>(loc, start, w.unitCount, i32(step));
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(tiles.getBody());
  Value i = tiles.getInductionVar();
  WorkUnit u;
  if (w.streamK) {
    u = streamKUnit(i);
    setProgramIds(u.tile);
  } else {
    if (persistent)
      setProgramIds(b.create<arith::AddIOp>(loc, w.firstTile, b.create<arith::MulIOp>(loc, i, w.tileStride)));
    u = {Value(), i32(0), nk, b.create<arith::MulIOp>(loc, i, nk)};
  }
  return body(i, u);
}

Value KernelBuilder::ringPos(const WorkUnit &u, Value j) {
  return b.create<arith::AddIOp>(loc, u.base, b.create<arith::SubIOp>(loc, j, u.kBegin));
}

void KernelBuilder::msRasterProgramIds() {
  // Launch order is x-fastest: t = x + y * gx. Groups of getRasterGroup()
  // consecutive x (program_id 0, along M) are walked column by column, the
  // same bijection of the grid as the persistent schedules' setProgramIds.
  Value gx = b.create<NVVM::GridDimXOp>(loc, b.getI32Type());
  Value gy = b.create<NVVM::GridDimYOp>(loc, b.getI32Type());
  Value x = b.create<NVVM::BlockIdXOp>(loc, b.getI32Type());
  Value y = b.create<NVVM::BlockIdYOp>(loc, b.getI32Type());
  Value z = b.create<NVVM::BlockIdZOp>(loc, b.getI32Type());
  Value t = b.create<arith::AddIOp>(loc, x, b.create<arith::MulIOp>(loc, y, gx));
  auto [px, py] = groupedRaster(t, gx, gy);
  programIds = {px, py, z};
  // The prologue's scalars were computed from %ctaid: recompute them here, at
  // the top level, so that they dominate every later use (as build() does).
  scalars.clear();
  for (Operation &op : fn.getBody().front())
    if (op.getNumResults() == 1 && !isa<ShapedType>(op.getResult(0).getType()) &&
        op.getNumRegions() == 0)
      (void)scalar(op.getResult(0));
}

} // namespace mlir::tessel::lowering
