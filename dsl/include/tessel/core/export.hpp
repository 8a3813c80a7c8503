// tessel/core/export.hpp - symbol visibility for libtessel.so.
//
// libtessel.so is built with hidden visibility (its static MLIR/LLVM stay private); only the
// functions marked TESSEL_API are exported.
#pragma once
#define TESSEL_API __attribute__((visibility("default")))
