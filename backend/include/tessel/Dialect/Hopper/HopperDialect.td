//===- HopperDialect.td - the Hopper-level dialect ---------*- tablegen -*-===//

#ifndef TESSEL_HOPPER_DIALECT
#define TESSEL_HOPPER_DIALECT

include "mlir/IR/OpBase.td"

def Hopper_Dialect : Dialect {
  let name = "hopper";
  let cppNamespace = "::mlir::tessel::hopper";
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
  let summary = "sm_90 machinery between tile-level tessel IR and nvvm";
  let description = [{
    The hardware protocol of a Hopper GEMM as ops, so that a dump shows the
    ring's barriers, waits and TMA copies as steps rather than as inline-asm
    strings. `tessel-lower-to-nvvm` builds kernels with these ops and
    `tessel-convert-hopper-to-nvvm` rewrites each one 1:1 into the PTX it
    names (the only place their PTX strings live).

    Addresses of shared memory are 32-bit shared-window addresses (`i32`, the
    PTX `.shared` state space); TMA descriptors are generic pointers to the
    `__grid_constant__` kernel parameters that hold them (`!llvm.ptr`).

    Two levels of ops:
    - the schedule's decisions (HopperScheduleOps.td): the tile scheduler,
      the operand ring and its async loads, the warp-specialized roles, the
      mma schedule, the epilogue's paths, the resources. The schedule passes
      write them into the scheduled tessel function, one pass per decision;
      `tessel-lower-to-nvvm` reads them.
    - the hardware protocol (HopperOps.td): the rings' mbarrier protocol
      (also across a cluster), TMA loads and stores, the roles' register
      budgets and named barriers (pingpong turns, per-consumer epilogue
      barriers), the stmatrix + TMA-store epilogue and its fences.
      `tessel-lower-to-nvvm` writes them and `tessel-convert-hopper-to-nvvm`
      lowers them 1:1; wgmma (fence, mma on accumulator values, commit,
      wait) too, into the upstream nvvm ops. Still written in nvvm / inline
      PTX by `tessel-lower-to-nvvm`: the tile scheduler's arithmetic and
      stream-K, multistage's cp.async / ldmatrix / mma.sync (docs/pipeline.md).
  }];
}

class Hopper_Op<string mnemonic, list<Trait> traits = []>
    : Op<Hopper_Dialect, mnemonic, traits>;

#endif // TESSEL_HOPPER_DIALECT
