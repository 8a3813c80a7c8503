// tessel-compile compiles a traced program (a dump's 01-tessel.mlir). A later stage already
// carries a plan: compiling it again with other options would mix two plans into one kernel, so
// it is refused (exit 2), and --debug builds what a `.debug` dump was built with.
// RUN: rm -rf %t && tessel-compile %inputs/gemm_128x128.mlir --schedule tma --dump-dir %t > /dev/null 2>&1
// RUN: not tessel-compile %t/05-warp-specialize.mlir --schedule pingpong 2>&1 | FileCheck %s --check-prefix=PLANNED
// RUN: not tessel-compile %t/02-select-schedule.mlir 2>&1 | FileCheck %s --check-prefix=PLANNED
// RUN: rm -rf %t.dbg && tessel-compile %inputs/gemm_128x128.mlir --schedule tma --debug --dump-dir %t.dbg > /dev/null 2>&1
// RUN: FileCheck %s --check-prefix=DEBUG < %t.dbg/14-kernel.ptx
// RUN: FileCheck %s --check-prefix=NODEBUG < %t/14-kernel.ptx
// PLANNED: is already scheduled (it carries #tessel.schedule or hopper ops: a dump's stage 02 or later); compile the dump's 01-tessel.mlir, or replay later stages with tessel-opt
// The bounded waits read the clock and trap.
// DEBUG: trap
// NODEBUG-NOT: trap
