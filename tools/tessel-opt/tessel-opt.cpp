//===- tessel-opt.cpp - mlir-opt with tessel's dialects and passes --------===//
//
// Replays any stage that tessel dumps (TESSEL_DUMP_DIR / --dump-dir):
//
//   tessel-opt 01-tessel.mlir --tessel-select-schedule --tessel-lower-to-nvvm
//   tessel-opt 01-tessel.mlir --tessel-pipeline                 (the whole JIT pipeline)
//
//===----------------------------------------------------------------------===//

#include "tessel/Pipelines/Pipelines.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  tessel::registerAllDialects(registry);
  tessel::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tessel optimizer driver\n", registry));
}
