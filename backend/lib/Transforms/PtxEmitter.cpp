//===- PtxEmitter.cpp - inline PTX, spin waits and timeout reports --------===//

#include "PtxEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

Value mlir::tessel::emitPtx(OpBuilder &b, Location loc, StringRef code, StringRef constraints,
                            ValueRange operands, Type result) {
  std::string cons = constraints.str();
  cons += cons.empty() ? "~{memory}" : ",~{memory}";
  auto asmOp = b.create<LLVM::InlineAsmOp>(
      loc, result, operands, code, cons, /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr{}, ArrayAttr{});
  return result ? asmOp.getResult(0) : Value();
}

/// vprintf(format, args) as CUDA's printf does, then trap.
static void emitTimeoutReport(OpBuilder &b, Location loc, const tessel::WaitReport &r) {
  MLIRContext *ctx = b.getContext();
  auto i32 = [&](int64_t v) { return b.create<arith::ConstantIntOp>(loc, b.getI32Type(), v).getResult(); };
  auto module = b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  auto ptrTy = LLVM::LLVMPointerType::get(ctx);
  if (!module.lookupSymbol("vprintf")) {
    OpBuilder mb(module.getBodyRegion());
    mb.create<LLVM::LLVMFuncOp>(
        loc, "vprintf", LLVM::LLVMFunctionType::get(b.getI32Type(), {ptrTy, ptrTy}));
  }
  std::string format = ("tessel: kernel '" + r.kernel + "': thread %d of block (%d, %d, %d)"
                        " waited 4 s on mbarrier " + r.what + "[%d] for parity %d: a missing "
                        "arrive or TMA transaction (TESSEL_DEBUG bounded waits)\n")
                           .str();
  std::string symbol = ("__tessel_timeout_" + r.what).str();
  if (!module.lookupSymbol(symbol)) {
    OpBuilder mb(module.getBodyRegion());
    std::string bytes = format + '\0';
    mb.create<LLVM::GlobalOp>(loc, LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size()),
                              /*isConstant=*/true, LLVM::Linkage::Internal, symbol,
                              b.getStringAttr(bytes));
  }
  Value fmt = b.create<LLVM::AddressOfOp>(loc, ptrTy, symbol);
  SmallVector<Value> values = {r.thread, b.create<NVVM::BlockIdXOp>(loc, b.getI32Type()),
                               b.create<NVVM::BlockIdYOp>(loc, b.getI32Type()),
                               b.create<NVVM::BlockIdZOp>(loc, b.getI32Type()), r.id, r.parity};
  auto argsTy =
      LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(values.size(), b.getI32Type()));
  Value buf = b.create<LLVM::AllocaOp>(loc, ptrTy, argsTy, i32(1));
  for (auto [i, v] : llvm::enumerate(values)) {
    Value field = b.create<LLVM::GEPOp>(loc, ptrTy, argsTy, buf,
                                        ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
    b.create<LLVM::StoreOp>(loc, v, field);
  }
  b.create<LLVM::CallOp>(loc, TypeRange{b.getI32Type()}, "vprintf", ValueRange{fmt, buf});
  tessel::emitPtx(b, loc, "trap;", "", {});
}

void mlir::tessel::emitSpinWait(OpBuilder &b, Location loc, StringRef decls,
                                std::function<std::string(int)> probe, bool doneIfP,
                                StringRef constraints, ValueRange operands, bool bounded,
                                const WaitReport &report) {
  StringRef waiting = doneIfP ? "@!p" : "@p", done = doneIfP ? "@p" : "@!p";
  if (!bounded) {
    emitPtx(b, loc,
            ("{\n.reg .pred p;\n" + decls + "WAIT:\n" + probe(0) + waiting + " bra WAIT;\n}").str(),
            constraints, operands);
    return;
  }
  // Bounded: give up after 4 s of %globaltimer and report.
  Value timedOut = emitPtx(b, loc,
                           ("{\n"
                            ".reg .pred p;\n"
                            ".reg .u64 t0, t1;\n" +
                            decls +
                            "mov.u32 $0, 0;\n"
                            "mov.u64 t0, %globaltimer;\n"
                            "WAIT:\n" +
                            probe(1) + done +
                            " bra DONE;\n"
                            "mov.u64 t1, %globaltimer;\n"
                            "sub.u64 t1, t1, t0;\n"
                            "setp.lt.u64 p, t1, 4000000000;\n"
                            "@p bra WAIT;\n"
                            "mov.u32 $0, 1;\n"
                            "DONE:\n"
                            "}")
                               .str(),
                           ("=r," + constraints).str(), operands, b.getI32Type());
  Value zero = b.create<arith::ConstantIntOp>(loc, b.getI32Type(), 0);
  Value failed = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, timedOut, zero);
  auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, failed, false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  emitTimeoutReport(b, loc, report);
}
