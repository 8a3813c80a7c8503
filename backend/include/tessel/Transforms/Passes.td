//===- Passes.td - tessel transformation passes ------------*- tablegen -*-===//

#ifndef TESSEL_PASSES
#define TESSEL_PASSES

include "mlir/Pass/PassBase.td"

def TesselSwapOperands : Pass<"tessel-swap-operands", "mlir::ModuleOp"> {
  let summary = "Compute a tile of fewer than 64 rows as its transpose (swap-AB: C^T = B A^T)";
  let description = [{
    A GEMM tile of 8-56 rows (a decode step's few rows of A) is computed as
    its BN x BM transpose, so that wgmma's 64 rows go to B and the few rows
    of A become wgmma's N: the dot's operands are swapped and transposed, the
    accumulator is carried transposed, and the epilogue reads it through a
    `tessel.trans` (its stores write each fragment element across the
    diagonal). One dot, a BN multiple of 64, no reduction, no cluster, not
    multistage (SwapOperands.cpp, rules S1-S4); other kernels are unchanged.

    Before:
    ```mlir
    %d = tessel.dot %a, %bt, %c : tensor<16x64xbf16>, tensor<64x64xbf16> -> tensor<16x64xf32>
    ```
    After:
    ```mlir
    %at = tessel.trans %a : tensor<16x64xbf16> -> tensor<64x16xbf16>
    %d = tessel.dot %b, %at, %c : tensor<64x64xbf16>, tensor<64x16xbf16> -> tensor<64x16xf32>
    ...
    %acc = tessel.trans %acc' : tensor<64x16xf32> -> tensor<16x64xf32>
    ```
  }];
  let options = [
    Option<"scheduleName", "schedule", "std::string", /*default=*/"\"auto\"",
           "the schedule tessel-select-schedule will build (multistage: no swap)">,
    Option<"cluster", "cluster", "std::string", /*default=*/"\"1x1\"",
           "the CTA cluster (anything but 1x1: no swap)">,
  ];
  let dependentDialects = ["mlir::tessel::TesselDialect", "mlir::arith::ArithDialect"];
}

def TesselSelectSchedule : Pass<"tessel-select-schedule", "mlir::ModuleOp"> {
  let summary = "Recognise the GEMM mainloop and attach a #tessel.schedule to each kernel";
  let description = [{
    Finds, in every `tessel.kernel` function, the mainloop (an `scf.for` whose
    loop-carried f32 tile is the accumulator of a `tessel.dot` fed by
    `tessel.load`s) and attaches the schedule the backend builds, with its
    tile (from the dot's shapes), stages and warpgroups. Kernels without a
    `dot` get no schedule: they lower as plain elementwise kernels.

    Before:
    ```mlir
    func.func @gemm(...) attributes {tessel.kernel} { ... scf.for ... tessel.dot ... }
    ```
    After:
    ```mlir
    func.func @gemm(...) attributes {tessel.kernel,
        tessel.schedule = #tessel.schedule<kind = tma, tile = [128, 256, 64],
                                           stages = 4, warpgroups = 2, swizzle = 128>}
    ```
  }];
  let options = [
    Option<"scheduleName", "schedule", "std::string", /*default=*/"\"auto\"",
           "tma | multistage | warp_specialized | cooperative | pingpong | auto">,
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "shared-memory ring depth (0: as many as fit, at most 4; -1: as many as fit)">,
    Option<"cluster", "cluster", "std::string", /*default=*/"\"1x1\"",
           "CTA cluster along program_id 0 x program_id 1: 1x1, 2x1 (B multicast) or 1x2 "
           "(A multicast); the persistent schedules only">,
    Option<"swizzle", "swizzle", "int64_t", /*default=*/"0",
           "shared-memory swizzle of the TMA-loaded operands: 0 automatic, 128, 64, 32, "
           "or -1 for none (options::swizzle)">,
    Option<"rasterGroup", "raster-group", "int64_t", /*default=*/"0",
           "rows of tiles per group of the grouped raster order (0: 8; options::raster_group)">,
    Option<"decomposition", "decomposition", "std::string", /*default=*/"\"auto\"",
           "how persistent CTAs split the tiles: stream-k (the last wave's k-iterations split "
           "among all CTAs where it pays; cooperative or pingpong with a 1x1 cluster only), data-parallel "
           "(whole tiles), auto (stream-k where allowed, else data-parallel) "
           "(options::decomposition)">,
  ];
  let dependentDialects = ["mlir::tessel::TesselDialect"];
}

//===----------------------------------------------------------------------===//
// The schedule's decisions, one pass each (HopperScheduleOps.td). Each runs on
// the GEMM kernels that tessel-select-schedule scheduled, after the previous
// one; kernels without a dot pass through unchanged.
//===----------------------------------------------------------------------===//

def TesselMaterializeTileScheduler
    : Pass<"tessel-materialize-tile-scheduler", "mlir::ModuleOp"> {
  let summary = "Decide which tile each CTA computes: hopper.tile_scheduler replaces program_id";
  let description = [{
    From the schedule: one CTA per tile (`grid`; multistage remaps the launch
    order into raster groups) or a persistent walk over the tiles (cooperative,
    pingpong: raster group, cluster, stream-K). Every `tessel.program_id` is
    replaced by a result of the scheduler.

    Before:
    ```mlir
    %0 = tessel.program_id 0 : index
    %1 = arith.muli %0, %c128 : index
    ```
    After:
    ```mlir
    %pid:3 = hopper.tile_scheduler "persistent" raster_group 8 cluster [1, 1] stream_k
    %1 = arith.muli %pid#0, %c128 : index
    ```
  }];
  let dependentDialects = ["mlir::tessel::hopper::HopperDialect"];
}

def TesselInsertAsyncCopies : Pass<"tessel-insert-async-copies", "mlir::ModuleOp"> {
  let summary = "Put the mainloop's operand loads on a shared-memory ring of async copies";
  let description = [{
    Declares the ring (`hopper.ring`: stages, TMA or cp.async, bytes per
    stage) and replaces the two `tessel.load`s that feed the dot by
    `hopper.async_load`s that say how each tile arrives: its TMA boxes,
    swizzle, K- or MN-major layout and multicast share (OperandLayout.h), or
    multistage's 16-byte cp.async chunks.

    Before:
    ```mlir
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    ```
    After:
    ```mlir
    hopper.ring "ab" stages 4 copy "tma" stage_bytes 49152
    %a = hopper.async_load %A[%m, %k] into "ab"[0] {box = array<i64: 64, 128>, boxes = 1 : i64,
        copy = "tma", multicast = 1 : i64, swizzle = 128 : i64} : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    ```
  }];
  let dependentDialects = ["mlir::tessel::hopper::HopperDialect"];
}

def TesselWarpSpecialize : Pass<"tessel-warp-specialize", "mlir::ModuleOp"> {
  let summary = "Split the CTA into producer and consumer roles with register budgets";
  let description = [{
    warp_specialized, cooperative, pingpong: a producer warpgroup (40
    registers per thread, one thread issues the copies) and 1-3 consumer
    warpgroups (or 2 for pingpong, taking tiles in turns) sharing the rest
    of the register file in multiples of 8, at most 232. tma: the copies are
    issued inline by thread 0 of the consumers. multistage: no roles (every
    warp copies and computes); the IR is unchanged.

    After:
    ```mlir
    hopper.warp_specialize producer "warpgroup" regs 40 {
      hopper.produce "ab"
    } consumers 2 regs 232 order "pingpong" {
      hopper.consume "ab"
    }
    ```
  }];
  let dependentDialects = ["mlir::tessel::hopper::HopperDialect"];
}

def TesselScheduleMma : Pass<"tessel-schedule-mma", "mlir::ModuleOp"> {
  let summary = "Decide the tensor-core instructions, row blocks and wgmma wait depth";
  let description = [{
    wgmma schedules: m64nBNk16, BK/16 per stage, one 64-row block per
    consumer warpgroup (pingpong: BM/64, the whole tile), wait depth 1 (a
    stage is released one k-step late). multistage: mma.sync m16n8k16 on
    its warp tiles.

    After:
    ```mlir
    hopper.mma_schedule "wgmma" shape [64, 256, 16] k_steps 4 row_blocks 1 wait_depth 1
    ```
  }];
  let dependentDialects = ["mlir::tessel::hopper::HopperDialect"];
}

def TesselLowerEpilogue : Pass<"tessel-lower-epilogue", "mlir::ModuleOp"> {
  let summary = "Decide how each store leaves the accumulators, and the stream-K fixup";
  let description = [{
    Marks each `tessel.store` after the mainloop with its path
    (`hopper.store`): `tma_store` through staging buffers (warp-specialized
    schedules; BM x BN tiles of 8- (fp8), 16- or 32-bit floats into 2-d tensors, rows
    of whole 128-byte chunks), `registers`, `register_pairs` (tma), or
    `fragments` (multistage); and declares the epilogue's staging buffers
    and its stream-K fixup.

    After:
    ```mlir
    hopper.epilogue staging_buffers 2 fixup "stream_k"
    tessel.store %7, %C[%m, %n] {hopper.store = "tma_store"} : tensor<128x256xbf16>, !tessel.ref<2 x bf16>
    ```
  }];
  let dependentDialects = ["mlir::tessel::hopper::HopperDialect"];
}

def TesselAllocateResources : Pass<"tessel-allocate-resources", "mlir::ModuleOp"> {
  let summary = "Lay out shared memory, count threads, number the barriers";
  let description = [{
    With the one shared-memory budget function that tessel-select-schedule
    also uses (SharedMemory.h): the ring's slots, the staging buffers, the
    full and empty barrier arrays; the CTA's threads; the named barrier ids
    and the empty barriers' arrival count.

    After:
    ```mlir
    hopper.resources threads 384 smem_bytes 229440 {arrivals = {empty = 1 : i64, full = 1 : i64}, ...}
    ```
  }];
  let dependentDialects = ["mlir::tessel::hopper::HopperDialect"];
}

def TesselLowerToNVVM : Pass<"tessel-lower-to-nvvm", "mlir::ModuleOp"> {
  let summary = "Build the sm_90a kernel of each scheduled tessel kernel (llvm.func + nvvm)";
  let description = [{
    Replaces every `tessel.kernel` function by an `llvm.func` kernel written in
    `hopper`, `nvvm`, `llvm`, `scf` and `arith` ops on LLVM-compatible types,
    as its plan says (the hopper schedule ops the passes before wrote): the
    tile scheduler's walk, the ring's barriers and copies, the roles, the
    wgmma (or mma.sync) mainloop, the epilogue evaluated on the accumulator
    fragments along each store's path. It decides nothing: a GEMM kernel
    without its plan is an error. The kernel's parameter list is recorded in
    `tessel.params` for the runtime.
  }];
  let options = [
    Option<"boundedWaits", "bounded-waits", "bool", /*default=*/"false",
           "mbarrier waits give up after 4 s, print the barrier, stage and parity, and trap "
           "(TESSEL_DEBUG)">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::NVVM::NVVMDialect",
                           "mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::tessel::hopper::HopperDialect"];
}

def TesselLegalizeMath : Pass<"tessel-legalize-math", "mlir::ModuleOp"> {
  let summary = "Rewrite scalar math ops the NVPTX backend cannot select into sm_90 fast paths";
  let description = [{
    After `tessel-lower-to-nvvm` the traced epilogue and elementwise math is
    scalar `math` ops on f16, bf16 or f32. The NVPTX backend of LLVM 22 has no
    instruction for `math.tanh` (it aborts: `Cannot select ... ftanh`) and no
    libcall for `math.exp` / `math.log`, so this pass rewrites every
    transcendental op before conversion to LLVM. f16 and bf16 operands are
    computed in f32 and rounded once at the end.

    | op | becomes | PTX | error (f32) |
    |---|---|---|---|
    | `math.exp2` | `llvm.nvvm.ex2.approx.f32` | `ex2.approx.f32` | 2 ulp (rel. 2^-22) |
    | `math.exp` | ex2 of `x * log2(e)` | `mul.f32; ex2.approx.f32` | 2 ulp + 2^-24 |x| rel. |
    | `math.log2` | `llvm.nvvm.lg2.approx.f` | `lg2.approx.f32` | 2^-22 abs. |
    | `math.log` | lg2 times `ln(2)` | `lg2.approx.f32; mul.f32` | 2^-22 abs. |
    | `math.tanh` | inline asm | `tanh.approx.f32` | 2^-10.99 rel. |
    | `math.erf` | a rational polynomial (upstream `math` approximation) | `fma.rn.f32` ... | 2 ulp |

    `math.sqrt` (`sqrt.rn.f32`), `math.rsqrt` (`div.rn` of `sqrt.rn`), `math.absf`
    and `arith` min/max select natively and are left alone.

    Before:
    ```mlir
    %e = math.exp %x : f32
    %t = math.tanh %y : bf16
    ```
    After:
    ```mlir
    %c = arith.constant 1.44269502 : f32
    %m = arith.mulf %x, %c : f32
    %e = llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"(%m) : (f32) -> f32
    %w = arith.extf %y : bf16 to f32
    %u = llvm.inline_asm "tanh.approx.f32 $0, $1;", "=f,f" %w : (f32) -> f32
    %t = arith.truncf %u : f32 to bf16
    ```
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect"];
}

def TesselConvertHopperToNVVM : Pass<"tessel-convert-hopper-to-nvvm", "mlir::ModuleOp"> {
  let summary = "Rewrite hopper ops 1:1 into the PTX they name";
  let description = [{
    The last step of the Hopper-level IR: each `hopper` op (mbarrier init /
    arrive / arrive_expect_tx / wait, the barrier-init fence, TMA loads)
    becomes the inline PTX its ODS description names, in place, with the
    operands in order. A `bounded` wait (TESSEL_DEBUG) becomes the timed loop
    that reports and traps. Any hopper op without a pattern is an error.

    Before:
    ```mlir
    hopper.mbarrier.arrive %empty
    ```
    After:
    ```mlir
    llvm.inline_asm has_side_effects "mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}" %empty : (i32) -> ()
    ```
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::NVVM::NVVMDialect",
                           "mlir::scf::SCFDialect", "mlir::arith::ArithDialect"];
}

def TesselVerifyRings : Pass<"tessel-verify-rings", "mlir::ModuleOp"> {
  let summary = "Reject kernels whose mbarrier rings would hang (the ring protocol's rules)";
  let description = [{
    Checks, on the hopper ops of each kernel, the rules whose violation makes
    the kernel wait forever on the GPU, and fails with the ring and the rule
    (VerifyRings.cpp has them, R1-R5): every waited ring is initialised and
    arrived on, has at least two stages, a full ring's phases take one
    expecting arrival, and `arrive_expect_tx` expects exactly the bytes of
    the TMA loads that complete on its barrier. Runs in the JIT after the
    kernel is built; changes nothing.

    ```mlir
    hopper.mbarrier.arrive_expect_tx %full, %c24576 {ring = "full"}
    hopper.tma.load %a[%k, %m] -> %dA, %full bytes 16384 : !llvm.ptr
    hopper.tma.load %b[%k, %n] -> %dB, %full bytes 16384 : !llvm.ptr
    // error: ring 'full': arrive_expect_tx expects 24576 bytes but the TMA loads
    // completing on this barrier deliver 32768 (rule R5: ...)
    ```
  }];
}

#endif // TESSEL_PASSES
