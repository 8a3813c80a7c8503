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
    !tessel.ref<2 x f8E4M3FN> // fp8 (also f8E5M2)
    ```
    Element types: f16, bf16, f32, i32, i1 (tiles only), f8E4M3FN, f8E5M2.
  }];
  let parameters = (ins "unsigned":$rank, "::mlir::Type":$elementType);
  let assemblyFormat = "`<` $rank `x` $elementType `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bytes of one element (fp8: 1, bf16 / f16: 2, f32 / i32: 4; i1: 0).
    int64_t getElementBytes() const { return getElementType().getIntOrFloatBitWidth() / 8; }
  }];
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

def Tessel_ReduceKind : I32EnumAttr<"ReduceKind", "reduction operator of tessel.reduce", [
    I32EnumAttrCase<"sum", 0>,
    I32EnumAttrCase<"max", 1>,
    I32EnumAttrCase<"amax", 2>]> {
  let cppNamespace = "::mlir::tessel";
}

def Tessel_ScheduleAttr : AttrDef<Tessel_Dialect, "Schedule"> {
  let mnemonic = "schedule";
  let summary = "how the backend builds the kernel (set by tessel-select-schedule)";
  let description = [{
    The schedule and its knobs: CTA tile (from the traced `dot`), number of
    shared-memory stages, consumer warpgroups, the swizzle (in bytes) of the
    operand tiles, and the CTA cluster (CTAs along program_id 0 x along
    program_id 1; omitted when 1 x 1). In a 2 x 1 cluster the two CTAs share
    the B tile (TMA multicast), in a 1 x 2 cluster the A tile. `raster`: the
    tile scheduler's group size (rows of tiles along program_id 0 walked
    column by column, so that co-resident CTAs share operand tiles in L2);
    omitted when 0, tessel's default (8 rows of tiles; 16 for tiles of at most
    64 rows, the same 1024 rows of A per group). `stream_k` (cooperative or pingpong,
    1 x 1 cluster): how tiles are split among the persistent CTAs, omitted when 0
    (data-parallel: whole tiles). 1: stream-K for the last, partial wave of
    tiles (or every tile of a grid smaller than the CTAs), decided in the
    kernel from the tile count, the k-iterations and the grid: it splits
    their k-iterations evenly among all CTAs when that shortens the longest
    CTA by more than the partial-sum traffic costs and by at least 2%. Split tiles are summed
    through a global workspace (StreamK.cpp, rules S1-S4).

    ```mlir
    func.func @gemm(...) attributes {tessel.kernel,
        tessel.schedule = #tessel.schedule<kind = cooperative, tile = [128, 256, 64],
                                           stages = 4, warpgroups = 2, swizzle = 128,
                                           cluster = [2, 1]>}
    ```
  }];
  let parameters = (ins "ScheduleKind":$kind, ArrayRefParameter<"int64_t">:$tile,
                        "int64_t":$stages, "int64_t":$warpgroups, "int64_t":$swizzle,
                        OptionalArrayRefParameter<"int64_t">:$cluster,
                        DefaultValuedParameter<"int64_t", "0">:$raster,
                        DefaultValuedParameter<"int64_t", "0">:$streamk);
  // Hand-written (TesselDialect.cpp): the declarative format's optional groups
  // `(`,` `cluster` ...)?` all begin with `,`, so after `swizzle = 128` its
  // parser took any comma as the start of `cluster` and rejected
  // `, stream_k = 1` (`expected 'cluster'`): the default cooperative and
  // pingpong dumps could not be replayed. The text is unchanged.
  let hasCustomAssemblyFormat = 1;
  let extraClassDeclaration = [{
    /// CTAs of the cluster along program_id 0 and 1 ({1, 1} when omitted).
    std::array<int64_t, 2> getClusterShape() const {
      auto c = getCluster();
      return c.size() == 2 ? std::array<int64_t, 2>{c[0], c[1]} : std::array<int64_t, 2>{1, 1};
    }
    int64_t getClusterSize() const { auto c = getClusterShape(); return c[0] * c[1]; }
    /// Rows of tiles per raster group; when `raster` is 0, tessel's default: 8,
    /// or 16 for tiles of at most 64 rows, so that a group spans the same 1024
    /// rows of A and re-reads B as often (docs/benchmarks.md run 40: the 64x128
    /// dual GEMM 1.7-2.9% faster with 16 than with 8 on three shapes).
    int64_t getRasterGroup() const {
      return getRaster() > 0 ? getRaster() : getTile()[0] <= 64 ? 16 : 8;
    }
  }];
}

#endif // TESSEL_TYPES
