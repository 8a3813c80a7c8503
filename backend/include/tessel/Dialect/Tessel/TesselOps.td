//===- TesselOps.td - tessel operations --------------------*- tablegen -*-===//

#ifndef TESSEL_OPS
#define TESSEL_OPS

include "tessel/Dialect/Tessel/TesselTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Program identity
//===----------------------------------------------------------------------===//

def Tessel_ProgramIdOp : Tessel_Op<"program_id", [Pure]> {
  let summary = "index of this program instance along a grid axis";
  let description = [{
    Every kernel instance computes one tile; `program_id` tells it which. The
    backend maps it to `%ctaid` (non-persistent schedules) or to the tile
    scheduler's current tile (persistent schedules).

    ```mlir
    %pid = tessel.program_id 1
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<2>]>:$axis);
  let results = (outs Index:$result);
  let assemblyFormat = "$axis attr-dict";
}

def Tessel_NumProgramsOp : Tessel_Op<"num_programs", [Pure]> {
  let summary = "number of program instances along a grid axis";
  let description = [{
    ```mlir
    %n = tessel.num_programs 0
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<2>]>:$axis);
  let results = (outs Index:$result);
  let assemblyFormat = "$axis attr-dict";
}

def Tessel_DimOp : Tessel_Op<"dim", [Pure]> {
  let summary = "runtime size of a global tensor along one dimension";
  let description = [{
    ```mlir
    %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
    ```
  }];
  let arguments = (ins Tessel_RefType:$ref, I32Attr:$axis);
  let results = (outs Index:$result);
  let assemblyFormat = "$ref `,` $axis attr-dict `:` qualified(type($ref))";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Global memory <-> tiles
//===----------------------------------------------------------------------===//

def Tessel_LoadOp : Tessel_Op<"load", [MemoryEffects<[MemRead]>]> {
  let summary = "load a tile of a global tensor, zero outside its bounds";
  let description = [{
    Reads the tile whose first element is at `offsets` (one index per tensor
    dimension). The tile has the static shape of the result type. Its rank is
    the tensor's, or lower: then it covers the innermost dimensions and each
    leading offset selects a single index (a batch of matrices). Elements
    outside the tensor read as zero, so edge tiles need no special code.

    ```mlir
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    // Matrix %b of a batch: rows %m.., columns %k..
    %x = tessel.load %X[%b, %m, %k] : !tessel.ref<3 x bf16> -> tensor<128x64xbf16>
    ```
  }];
  let arguments = (ins Tessel_RefType:$ref, Variadic<Index>:$offsets);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $ref `[` $offsets `]` attr-dict `:` qualified(type($ref)) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tessel_LoadElementOp : Tessel_Op<"load_element", [MemoryEffects<[MemRead]>]> {
  let summary = "load one element of a global tensor as a scalar, zero outside its bounds";
  let description = [{
    Reads the element at `offsets` (one index per tensor dimension) as a
    scalar of the tensor's element type (f32 or i32), which tile expressions
    use like a `ts::scalar` kernel parameter (through `tessel.splat`). An
    offset outside the tensor reads zero. It is how a kernel reads a value
    that lives in device memory: a per-tensor scale written by an earlier
    kernel, or the scale of a 128 x 128 block of B in a block-scaled fp8
    GEMM, where the offsets depend on the mainloop's k
    (`ts::tensor::at`, docs/fp8.md):

    ```mlir
    %kb = arith.divui %k, %c128 : index
    %nb = arith.divui %n, %c128 : index
    %sb = tessel.load_element %SB[%nb, %kb] : !tessel.ref<2 x f32> -> f32
    %s = tessel.splat %sb : f32 -> tensor<128x128xf32>
    ```
  }];
  let arguments = (ins Tessel_RefType:$ref, Variadic<Index>:$offsets);
  let results = (outs AnyTypeOf<[F32, I32]>:$result);
  let assemblyFormat = [{
    $ref `[` $offsets `]` attr-dict `:` qualified(type($ref)) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tessel_StoreOp : Tessel_Op<"store", [MemoryEffects<[MemWrite]>]> {
  let summary = "store a tile into a global tensor, dropping what falls outside";
  let description = [{
    Writes `value` with its first element at `offsets`. Elements outside the
    tensor are not written. The tile's element type must equal the tensor's;
    as for `tessel.load`, a tile of lower rank covers the innermost
    dimensions (`tessel.store %c, %C[%b, %m, %n]` writes matrix %b).

    ```mlir
    tessel.store %c, %C[%m, %n] : tensor<128x256xbf16>, !tessel.ref<2 x bf16>
    ```

    With `combine`, the store writes a partial result of a reduction
    (`value` is a `tessel.reduce`): each element is combined into the
    tensor's current element with the reduction's operator (sum: added;
    max, amax: the larger one is kept), so that the program instances that
    cover one row or column all contribute. The backend does this with
    atomics; the tensor must hold the operator's identity (or a value to
    combine with) before the launch.

    ```mlir
    %r = tessel.reduce %y, amax, 1 : tensor<128x256xf32> -> tensor<128xf32>
    tessel.store %r, %V[%m] {combine} : tensor<128xf32>, !tessel.ref<1 x f32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$value, Tessel_RefType:$ref,
                       Variadic<Index>:$offsets, UnitAttr:$combine);
  let assemblyFormat = [{
    $value `,` $ref `[` $offsets `]` attr-dict `:` type($value) `,` qualified(type($ref))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tile math
//===----------------------------------------------------------------------===//

def Tessel_DotOp : Tessel_Op<"dot", [Pure,
    AllTypesMatch<["acc", "result"]>]> {
  let summary = "tile matrix product accumulated in f32: result = a * b + acc";
  let description = [{
    `a` is M x K, `b` is K x N, `acc` and the result are M x N f32. Inputs are
    f16 or bf16 (both the same), or fp8 (f8E4M3FN and f8E5M2 in any pairing,
    wgmma's four fp8 kinds). In a mainloop the accumulator is the
    loop-carried value, which is what the backend's GEMM matcher looks for.

    ```mlir
    %d = tessel.dot %a, %b, %acc : tensor<128x64xbf16>, tensor<64x256xbf16> -> tensor<128x256xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$a, AnyStaticShapeTensor:$b,
                       AnyStaticShapeTensor:$acc);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tessel_TransOp : Tessel_Op<"trans", [Pure]> {
  let summary = "transpose a 2-d tile";
  let description = [{
    A view change: the backend folds it into how the operand is loaded
    (which major the shared-memory tile has), it moves no data by itself. In
    an epilogue, a transposed accumulator (`acc.T()`, or the result of
    tessel-swap-operands) is stored by writing each thread's fragment element
    (r, c) at (c, r) of the stored tile.

    ```mlir
    %bt = tessel.trans %b : tensor<256x64xbf16> -> tensor<64x256xbf16>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$src);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tessel_BroadcastOp : Tessel_Op<"broadcast", [Pure]> {
  let summary = "broadcast a tile to a larger rank";
  let description = [{
    Source dimension `i` becomes result dimension `dims[i]` (same extent); the
    other result dimensions repeat the source. A bias row over the columns of
    an M x N tile:

    ```mlir
    %row = tessel.broadcast %bias [1] : tensor<256xf32> -> tensor<128x256xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$src, DenseI64ArrayAttr:$dims);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$src $dims attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tessel_SplatOp : Tessel_Op<"splat", [Pure]> {
  let summary = "a tile whose every element is one scalar";
  let description = [{
    ```mlir
    %t = tessel.splat %alpha : f32 -> tensor<128x256xf32>
    ```
  }];
  let arguments = (ins AnyTypeOf<[AnyFloat, AnySignlessInteger, Index]>:$value);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($value) `->` type($result)";
  let hasVerifier = 1;
}

def Tessel_ReduceOp : Tessel_Op<"reduce", [Pure]> {
  let summary = "reduce a 2-d tile along one axis (sum, max or max of |x|)";
  let description = [{
    Reduces `src` (M x N, floating point) along `axis`, which disappears
    (as in NumPy): axis 1 gives one value per row (M), axis 0 one per column
    (N). `sum` adds, `max` keeps the largest element, `amax` the largest
    absolute value; the result is f32 whatever the source's float type. NaN
    propagates through all three.

    The result is one program instance's partial: it is only stored, with
    `tessel.store ... {combine}`, which combines the partials of every
    instance covering the same rows or columns. In a GEMM epilogue the
    reduction covers the elements of the tile that lie inside the GEMM's
    M x N (rows of A, columns of B): the rows and columns that the loads
    padded with zeros at the edges are left out.

    ```mlir
    %rowmax = tessel.reduce %y, amax, 1 : tensor<128x256xf32> -> tensor<128xf32>
    %colsum = tessel.reduce %y, sum, 0 : tensor<128x256xf32> -> tensor<256xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$src, Tessel_ReduceKind:$kind, I32Attr:$axis);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$src `,` $kind `,` $axis attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tessel_CastOp : Tessel_Op<"cast", [Pure, SameOperandsAndResultShape]> {
  let summary = "convert the element type of a tile (round to nearest even)";
  let description = [{
    Between f32, f16, bf16 and i32 in any direction, and between fp8
    (f8E4M3FN, f8E5M2) and f32, f16, bf16. Float narrowing rounds to nearest
    even; to f8E4M3FN it saturates to +-448 (NaN stays NaN; cvt.satfinite);
    float to int truncates toward zero.

    ```mlir
    %c = tessel.cast %acc : tensor<128x256xf32> -> tensor<128x256xbf16>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$src);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

#endif // TESSEL_OPS
