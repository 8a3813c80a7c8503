// A GEMM whose stores never read the accumulator (here it stores another tile, and the one
// expression of the accumulator, %y, is never stored) would lose its mainloop to the canonicalizer
// and compile as an elementwise kernel: it is refused at the dot, as the user's error (no IR
// reproducer).
// RUN: rm -rf %t && not tessel-compile %s --dump-dir %t 2>&1 | FileCheck %s
// RUN: sed "s/%zc = tessel.cast %z :/%zc = tessel.cast %acc :/" %s > %t.used.mlir && tessel-compile %t.used.mlir --schedule tma > /dev/null
// CHECK: tessel: scheduling failed (kernel 'gemm'):
// CHECK-NEXT: tessel-compile-dead-mainloop.mlir:[[@LINE+16]]:10: error: the result of ts::dot is never used: no store of the kernel reads the accumulator, so the mainloop computes nothing the kernel writes (store the accumulator, or an expression of it, after the loop)
// CHECK-NOT: IR reproducer
func.func @gemm(%A: !tessel.ref<2 x bf16>, %B: !tessel.ref<2 x bf16>, %Z: !tessel.ref<2 x f32>, %C: !tessel.ref<2 x bf16>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %p0 = tessel.program_id 0
  %p1 = tessel.program_id 1
  %m = arith.muli %p0, %c128 : index
  %n = arith.muli %p1, %c128 : index
  %K = tessel.dim %A, 1 : !tessel.ref<2 x bf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero) -> (tensor<128x128xf32>) {
    %a = tessel.load %A[%m, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %b = tessel.load %B[%n, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
    %bt = tessel.trans %b : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %d = tessel.dot %a, %bt, %c : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %y = arith.addf %acc, %acc : tensor<128x128xf32>
  %z = tessel.load %Z[%m, %n] : !tessel.ref<2 x f32> -> tensor<128x128xf32>
  %zc = tessel.cast %z : tensor<128x128xf32> -> tensor<128x128xbf16>
  tessel.store %zc, %C[%m, %n] : tensor<128x128xbf16>, !tessel.ref<2 x bf16>
  return
}
