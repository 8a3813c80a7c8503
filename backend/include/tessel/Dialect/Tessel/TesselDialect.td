//===- TesselDialect.td - the tile-level tessel dialect ----*- tablegen -*-===//
//
// `tessel` is the target-independent, tile-level dialect that the C++ DSL is
// traced into (DESIGN.md §4). Values are either index scalars (offsets,
// program ids), ranked `tensor<...>` tiles with static shapes, or references
// to global tensors (`!tessel.ref`). Elementwise math on tiles uses `arith`
// and `math` directly; loops are `scf.for`.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_DIALECT
#define TESSEL_DIALECT

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Tessel_Dialect : Dialect {
  let name = "tessel";
  let summary = "Tile-level GEMM kernel dialect traced from the tessel C++ DSL";
  let description = [{
    A tessel kernel is a `func.func` carrying the `tessel.kernel` unit
    attribute. Its arguments are `!tessel.ref` values (global tensors: base
    pointer, runtime sizes and strides, static element type and rank). One
    instance of the kernel computes one tile of the output; `tessel.program_id`
    says which.

    ```mlir
    func.func @axpy(%x: !tessel.ref<1 x f32>, %y: !tessel.ref<1 x f32>)
        attributes {tessel.kernel} {
      %pid = tessel.program_id 0
      %c128 = arith.constant 128 : index
      %off = arith.muli %pid, %c128 : index
      %t = tessel.load %x[%off] : !tessel.ref<1 x f32> -> tensor<128xf32>
      tessel.store %t, %y[%off] : tensor<128xf32>, !tessel.ref<1 x f32>
      return
    }
    ```
  }];
  let cppNamespace = "::mlir::tessel";
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect",
                           "::mlir::func::FuncDialect", "::mlir::math::MathDialect"];
  let extraClassDeclaration = [{
    /// Unit attribute that marks a func.func as a tessel kernel.
    static constexpr ::llvm::StringLiteral getKernelAttrName() { return "tessel.kernel"; }
    /// Schedule attribute attached by tessel-select-schedule.
    static constexpr ::llvm::StringLiteral getScheduleAttrName() { return "tessel.schedule"; }
  }];
}

class Tessel_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tessel_Dialect, mnemonic, traits>;

#endif // TESSEL_DIALECT
