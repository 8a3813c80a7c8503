//===- TesselTypes.td - tessel types and attributes --------*- tablegen -*-===//

#ifndef TESSEL_TYPES
#define TESSEL_TYPES

include "tessel/Dialect/Tessel/TesselDialect.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

def Tessel_RefType : TypeDef<Tessel_Dialect, "Ref"> {
  let mnemonic = "ref";
  let summary = "reference to a global tensor: pointer, runtime sizes and strides";
  let description = [{
    A kernel argument that names a tensor in global memory. The rank and the
    element type are static; the sizes and strides (in elements) are runtime
    values, queried with `tessel.dim`. Tiles move between a ref and registers
    with `tessel.load` / `tessel.store`.

    ```mlir
    !tessel.ref<2 x bf16>     // e.g. an M x K matrix
    ```
  }];
  let parameters = (ins "unsigned":$rank, "::mlir::Type":$elementType);
  let assemblyFormat = "`<` $rank `x` $elementType `>`";
  let genVerifyDecl = 1;
}

def Tessel_ScheduleKind : I32EnumAttr<"ScheduleKind", "GEMM kernel schedule", [
    I32EnumAttrCase<"tma", 0>,
    I32EnumAttrCase<"multistage", 1>,
    I32EnumAttrCase<"warp_specialized", 2>,
    I32EnumAttrCase<"cooperative", 3>,
    I32EnumAttrCase<"pingpong", 4>]> {
  let cppNamespace = "::mlir::tessel";
  let genSpecializedAttr = 0;
}

def Tessel_ScheduleKindAttr : EnumAttr<Tessel_Dialect, Tessel_ScheduleKind, "kind">;

def Tessel_ScheduleAttr : AttrDef<Tessel_Dialect, "Schedule"> {
  let mnemonic = "schedule";
  let summary = "how the backend builds the kernel (set by tessel-select-schedule)";
  let description = [{
    The schedule and its knobs: CTA tile (from the traced `dot`), number of
    shared-memory stages, consumer warpgroups, and the swizzle (in bytes) of
    the operand tiles.

    ```mlir
    func.func @gemm(...) attributes {tessel.kernel,
        tessel.schedule = #tessel.schedule<kind = tma, tile = [128, 256, 64],
                                           stages = 4, warpgroups = 2, swizzle = 128>}
    ```
  }];
  let parameters = (ins "ScheduleKind":$kind, ArrayRefParameter<"int64_t">:$tile,
                        "int64_t":$stages, "int64_t":$warpgroups, "int64_t":$swizzle);
  let assemblyFormat = [{
    `<` `kind` `=` $kind `,` `tile` `=` `[` $tile `]` `,` `stages` `=` $stages `,`
    `warpgroups` `=` $warpgroups `,` `swizzle` `=` $swizzle `>`
  }];
}

#endif // TESSEL_TYPES
