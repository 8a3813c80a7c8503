// REQUIRES: ptxas
// Element and byte offsets in 64 bits (issue 11): a dimension's index fits 32 bits (sizes are
// checked against 2^31 - 1 at launch), but index * stride and the byte offset from the base may
// exceed 2^31 (tests/gpu/large_test.cpp runs tensors of more than 2^31 elements). The 32-bit index
// is sign-extended once, then multiplied by the 64-bit stride parameter and scaled in 64 bits.
// RUN: rm -rf %t && tessel-compile %inputs/elementwise_math.mlir --dump-dir %t
// RUN: FileCheck %s --input-file=%t/elementwise_math.ptx
// RUN: rm -rf %t.ms && tessel-compile %inputs/gemm_128x128.mlir --schedule multistage --stages 3 --dump-dir %t.ms
// RUN: FileCheck %s --check-prefix=GEMM --input-file=%t.ms/11-convert-to-llvm.mlir

// X[i] load: the stride of X is parameter 2.
// CHECK: ld.param.b64 [[STRIDE:%rd[0-9]+]], [elementwise_math_param_2];
// CHECK: ld.param.b64 [[BASE:%rd[0-9]+]], [elementwise_math_param_0];
// CHECK: cvt.s64.s32 [[I:%rd[0-9]+]], %r{{[0-9]+}};
// CHECK: mul.lo.s64 [[OFF:%rd[0-9]+]], [[STRIDE]], [[I]];
// CHECK: shl.b64 [[BYTES:%rd[0-9]+]], [[OFF]], 2;
// CHECK: add.s64 %rd{{[0-9]+}}, [[BASE]], [[BYTES]];

// The GEMM's bounds-checked C stores: row index sign-extended, times the i64 row stride.
// GEMM: [[ROW:%[0-9]+]] = llvm.sext %{{[0-9]+}} : i32 to i64
// GEMM: llvm.mul [[ROW]], %arg{{[0-9]+}} : i64
// GEMM: llvm.getelementptr %arg{{[0-9]+}}[%{{[0-9]+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// GEMM: llvm.store %{{[0-9]+}}, %{{[0-9]+}} {{.*}}: vector<2xbf16>, !llvm.ptr<1>
