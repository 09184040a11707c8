// REQUIRES: mlir-opt
// The new-syntax cases of ../dialects/quant/roundtrip.mlir through mlir-opt 22 itself, with the
// same CHECK lines: what we print is what mlir-opt prints.
// RUN: %mlir-opt %S/../dialects/quant/roundtrip.mlir | filecheck %S/../dialects/quant/roundtrip.mlir
// RUN: %qd-opt %S/../dialects/quant/roundtrip.mlir | %mlir-opt | filecheck %S/../dialects/quant/roundtrip.mlir
