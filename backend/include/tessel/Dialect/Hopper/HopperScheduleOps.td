//===- HopperScheduleOps.td - the schedule's decisions as ops -*- tablegen -*-===//
//
// The ops the schedule passes write into a scheduled `tessel.kernel` function,
// one pass per decision (Passes.td, docs/pipeline.md):
//
//   tessel-materialize-tile-scheduler   hopper.tile_scheduler
//   tessel-insert-async-copies          hopper.ring, hopper.async_load
//   tessel-warp-specialize              hopper.warp_specialize, produce, consume
//   tessel-schedule-mma                 hopper.mma_schedule
//   tessel-lower-epilogue               hopper.epilogue, `hopper.store` on tessel.store
//   tessel-allocate-resources           hopper.resources
//
// They say *what* the kernel does at the Hopper level (which ring, which
// roles, which wait depth, where shared memory goes); `tessel-lower-to-nvvm`
// reads them and writes the instructions. Nothing downstream decides again:
// a hand-edited plan (say, `stages 3` on the ring and the matching
// resources) builds that kernel.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_HOPPER_SCHEDULE_OPS
#define TESSEL_HOPPER_SCHEDULE_OPS

include "tessel/Dialect/Hopper/HopperDialect.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/CommonAttrConstraints.td"

def Hopper_TileSchedulerOp : Hopper_Op<"tile_scheduler"> {
  let summary = "which output tile this CTA computes (replaces tessel.program_id)";
  let description = [{
    The three program ids of the tile being computed. `kind`:

    - `grid`: one CTA per tile of the user's grid. With `raster_group` g > 0
      the launch order is remapped so that groups of g tiles along program
      id 0 are walked column by column (co-resident CTAs share A and B tiles
      in L2); g = 0 keeps `%ctaid` as is.
    - `persistent`: about one CTA (one cluster) per SM; each walks the tiles
      `c, c + #clusters, ...` of the user's grid, in grouped raster order of
      `raster_group` rows, `cluster` CTAs side by side (2x1: along program
      id 0, they share B; 1x2: along program id 1, they share A). With
      `stream_k`, the last wave's k-iterations are split among all CTAs and
      partial tiles are summed through a workspace (StreamK.cpp).

    ```mlir
    %pid:3 = hopper.tile_scheduler "persistent" raster_group 8 cluster [2, 1]
    %m = arith.muli %pid#0, %c128 : index
    ```
    Becomes `%ctaid` / `%nctaid` arithmetic (grid), or the persistent loop
    over tiles that each role of the warp-specialized kernel runs.
  }];
  let arguments = (ins StrAttr:$kind, I64Attr:$raster_group, DenseI64ArrayAttr:$cluster,
                       UnitAttr:$stream_k);
  let results = (outs Index:$x, Index:$y, Index:$z);
  let assemblyFormat = [{
    $kind `raster_group` $raster_group `cluster` $cluster (`stream_k` $stream_k^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Hopper_RingOp : Hopper_Op<"ring"> {
  let summary = "a shared-memory ring of operand tiles";
  let description = [{
    `stages` buffers, each holding one k-step's tiles of every operand loaded
    `into` it (`hopper.async_load`), `stage_bytes` bytes per stage. With
    `copy = "tma"` each stage has a full mbarrier (one `arrive_expect_tx` of
    `stage_bytes` plus the TMA writes complete a phase) and an empty one (one
    arrival per consumer that read it, in every CTA of the cluster); with
    `copy = "cp.async"` (multistage) every thread copies its share and
    `cp.async.wait_group` + `bar.sync` order the stages.

    ```mlir
    hopper.ring "ab" stages 4 copy "tma" stage_bytes 49152
    ```
  }];
  let arguments = (ins StrAttr:$ring, I64Attr:$stages, StrAttr:$copy, I64Attr:$stage_bytes);
  let assemblyFormat = [{
    $ring `stages` $stages `copy` $copy `stage_bytes` $stage_bytes attr-dict
  }];
  let hasVerifier = 1;
}

def Hopper_AsyncLoadOp : Hopper_Op<"async_load"> {
  let summary = "a mainloop operand tile, copied asynchronously through a ring";
  let description = [{
    Replaces the mainloop's `tessel.load` of a dot operand: the tile at
    `ref[offsets]` arrives in slot `slot` (0: A, 1: B, 2: the second B of a
    dual GEMM, side by side with the first) of every stage of the ring named
    `into`, ahead of its use. The attributes say how:

    - `copy "tma"`: `boxes` TMA boxes of `box` elements (innermost first),
      `swizzle` bytes (0: none), `mn_major` when the tensor's unit stride is
      along M (N) rather than K (wgmma's transpose bit); in a cluster each
      CTA loads `1/multicast` of the box rows and multicasts them.
    - `copy "cp.async"`: 16-byte chunks, `box` = the tile's rows x bytes per
      row as laid out in shared memory, multistage's XOR swizzle.

    ```mlir
    %a = hopper.async_load %A[%m, %k] into "ab"[0] {box = array<i64: 64, 128>, boxes = 1 : i64,
           copy = "tma", multicast = 1 : i64, swizzle = 128 : i64}
           : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    ```
    PTX (tma): `cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes`
    per box, issued by the ring's producer; (cp.async): `cp.async.cg.shared.global` per chunk.
  }];
  let arguments = (ins AnyType:$ref, Variadic<Index>:$offsets, StrAttr:$into, I64Attr:$slot,
                       StrAttr:$copy, DenseI64ArrayAttr:$box, I64Attr:$boxes, I64Attr:$swizzle,
                       UnitAttr:$mn_major, I64Attr:$multicast);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $ref `[` $offsets `]` `into` $into `[` $slot `]` attr-dict `:` type($ref) `->` type($result)
  }];
}

def Hopper_WarpSpecializeOp : Hopper_Op<"warp_specialize", [NoTerminator, SingleBlock]> {
  let summary = "the CTA's roles: who produces the ring and who consumes it";
  let description = [{
    `producer`:
    - `"warpgroup"`: warpgroup 0 is the producer (one elected thread issues
      every copy; `setmaxnreg.dec` to `producer_regs`); warpgroups 1..
      `consumers` consume (`setmaxnreg.inc` to `consumer_regs`). `order
      "cooperative"`: every consumer takes every tile, 64 rows each;
      `"pingpong"`: consumers take alternate tiles whole and run their
      mainloops in turns (named barriers), so one's epilogue overlaps the
      other's mainloop.
    - `"inline"`: no producer warpgroup; thread 0 of the `consumers`
      warpgroups refills each stage between its wgmmas (schedule `tma`);
      register budgets are 0 (no setmaxnreg).

    The regions hold what each role does per k-step (`hopper.produce`,
    `hopper.consume`, and after later passes the mma schedule and the
    epilogue).

    ```mlir
    hopper.warp_specialize producer "warpgroup" regs 40 {
      hopper.produce "ab"
    } consumers 2 regs 232 order "pingpong" {
      hopper.consume "ab"
    }
    ```
  }];
  let arguments = (ins StrAttr:$producer, I64Attr:$producer_regs, I64Attr:$consumers,
                       I64Attr:$consumer_regs, StrAttr:$order);
  let regions = (region SizedRegion<1>:$producer_region, SizedRegion<1>:$consumer_region);
  let assemblyFormat = [{
    `producer` $producer `regs` $producer_regs $producer_region
    `consumers` $consumers `regs` $consumer_regs `order` $order $consumer_region attr-dict
  }];
  let hasVerifier = 1;
}

def Hopper_ProduceOp : Hopper_Op<"produce"> {
  let summary = "the producer's step: fill the next stage of a ring";
  let description = [{
    Per k-step of every tile of the CTA: wait until the stage is empty (from
    its second use on), `arrive_expect_tx` the stage's bytes on its full
    barrier, issue the ring's `hopper.async_load` copies for that k-step.

    ```mlir
    hopper.produce "ab"
    ```
  }];
  let arguments = (ins StrAttr:$ring);
  let assemblyFormat = "$ring attr-dict";
}

def Hopper_ConsumeOp : Hopper_Op<"consume"> {
  let summary = "the consumers' step: wait for a stage, compute on it, release it";
  let description = [{
    Per k-step: wait for the stage's full barrier (its fill's parity), run
    the mma schedule on it, and once the mma that read it retired, arrive
    on its empty barrier (in every CTA of the cluster).

    ```mlir
    hopper.consume "ab"
    ```
  }];
  let arguments = (ins StrAttr:$ring);
  let assemblyFormat = "$ring attr-dict";
}

def Hopper_MmaScheduleOp : Hopper_Op<"mma_schedule"> {
  let summary = "how the mainloop's dot runs on the tensor cores";
  let description = [{
    `instr "wgmma"`: per stage, `k_steps` x `wgmma.mma_async` of `shape`
    (m64nNk16) for each of the `row_blocks` 64-row blocks a consumer
    warpgroup holds, one commit group; then `wgmma.wait_group wait_depth`:
    the group of the previous k-step retired, so its stage is released one
    k-step late (which is why a ring needs >= 2 stages).
    `instr "mma.sync"`: warps of `warp_tile` in a `warps` grid, `mma.sync`
    of `shape` (m16n8k16) from `ldmatrix` fragments, `k_steps` per stage.

    `accumulators = 2` (a dual GEMM): the wgmma's N columns are two
    accumulators side by side, columns [0, N/2) the first dot's and
    [N/2, N) the second's (absent: one).

    ```mlir
    hopper.mma_schedule "wgmma" shape [64, 256, 16] k_steps 4 row_blocks 1 wait_depth 1
    hopper.mma_schedule "wgmma" shape [64, 256, 16] k_steps 4 row_blocks 1 wait_depth 1
        {accumulators = 2 : i64}    // dual GEMM, BN = 128
    ```
    PTX: `wgmma.fence.sync.aligned; wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 ...;
    wgmma.commit_group.sync.aligned; wgmma.wait_group.sync.aligned 1;`
  }];
  let arguments = (ins StrAttr:$instr, DenseI64ArrayAttr:$shape, I64Attr:$k_steps,
                       I64Attr:$row_blocks, I64Attr:$wait_depth,
                       OptionalAttr<DenseI64ArrayAttr>:$warps,
                       OptionalAttr<DenseI64ArrayAttr>:$warp_tile,
                       OptionalAttr<I64Attr>:$accumulators);
  let assemblyFormat = [{
    $instr `shape` $shape `k_steps` $k_steps `row_blocks` $row_blocks `wait_depth` $wait_depth
    attr-dict
  }];
  let hasVerifier = 1;
}

def Hopper_EpilogueOp : Hopper_Op<"epilogue"> {
  let summary = "how the traced epilogue leaves the accumulators";
  let description = [{
    Each `tessel.store` after the mainloop carries its path in `hopper.store`:
    `"tma_store"` (fragments -> `stmatrix` / `st.shared` into a 128B-swizzled
    staging buffer of 64 rows x 128 bytes -> TMA store; `staging_buffers`
    per consumer, alternating), `"registers"` (bounds-checked stores from
    the fragments), `"register_pairs"` (two adjacent columns per store) or
    `"fragments"` (multistage's mma.sync fragments). `fixup "stream_k"`: a
    tile split across CTAs is summed through the workspace first (the
    finishing CTA adds the others' partial accumulators). A tile-shaped
    `tessel.load` after the mainloop (C0, a residual) marked
    `hopper.prefetch = "tma_l2"` is prefetched into L2 by the producer warp
    (`hopper.tma.prefetch`) once it issued the tile's k-stages.

    ```mlir
    hopper.epilogue staging_buffers 2 fixup "stream_k"
    %c0 = tessel.load %C0[%m, %n] {hopper.prefetch = "tma_l2"} : ...
    tessel.store %out, %C[%m, %n] {hopper.store = "tma_store"} : ...
    ```
  }];
  let arguments = (ins I64Attr:$staging_buffers, StrAttr:$fixup);
  let assemblyFormat = "`staging_buffers` $staging_buffers `fixup` $fixup attr-dict";
}

def Hopper_ResourcesOp : Hopper_Op<"resources"> {
  let summary = "the kernel's threads, shared memory map and barrier ids";
  let description = [{
    Written by `tessel-allocate-resources` from the one shared-memory budget
    function that `tessel-select-schedule` also uses (SharedMemory.h):
    `threads` per CTA, `smem_bytes` of dynamic shared memory, the byte offset
    of each region (`ring` slots, `staging` buffers, `full` / `empty` barrier
    arrays), how many arrivals complete an empty barrier, and the named
    barrier ids (0 is `bar.sync 0`): one per consumer for the epilogue,
    the pingpong turn barriers, the stream-K barrier.

    ```mlir
    hopper.resources threads 384 smem_bytes 229440 {arrivals = {empty = 1 : i64},
      barriers = {consumer = array<i64: 1, 2>, turn = array<i64: 3, 4>},
      offsets = {a = 0 : i64, b = 65536 : i64, empty = 229408 : i64, full = 229376 : i64,
                 staging = 196608 : i64}}
    ```
  }];
  let arguments = (ins I64Attr:$threads, I64Attr:$smem_bytes, DictionaryAttr:$offsets,
                       DictionaryAttr:$barriers, DictionaryAttr:$arrivals);
  let assemblyFormat = "`threads` $threads `smem_bytes` $smem_bytes attr-dict";
}

#endif // TESSEL_HOPPER_SCHEDULE_OPS
