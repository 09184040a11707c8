// RUN: %qd-opt %s -p qnn-lower-to-linalg --split-input-file --verify-diagnostics --allow-unregistered-dialect
// RUN: not %qd-opt %s -p qnn-lower-to-linalg --split-input-file --allow-unregistered-dialect 2>&1 | filecheck %s --check-prefix=EXIT

// What qnn-lower-to-linalg refuses: one diagnostic per chunk, naming the op and the reason.

// EXIT: error: qnn-lower-to-linalg cannot lower: qint.conv2d: input zero point 200 does not fit the i8 input

// a conv whose input zero point does not fit the input's storage cannot pad with it
func.func @conv_zp(%x: tensor<1x4x4x3xi8>, %w: tensor<2x2x2x3xi8>) -> tensor<1x3x3x2xi32> {
  // expected-error@+1 {{qnn-lower-to-linalg cannot lower: qint.conv2d: input zero point 200 does not fit the i8 input}}
  %0 = qint.conv2d %x, %w {input_zp = 200 : i64, weight_zp = 0 : i64} : (tensor<1x4x4x3xi8>, tensor<2x2x2x3xi8>) -> tensor<1x3x3x2xi32>
  func.return %0 : tensor<1x3x3x2xi32>
}
// -----
// single rounding with shift -40 would shift by 71 bits: more than i64 holds
func.func @single_round_shift(%x: tensor<4xi32>) -> tensor<4xi8> {
  // expected-error@+1 {{qnn-lower-to-linalg cannot lower: qint.rescale: single_round shift -40..-40 needs more than 64 bits}}
  %0 = qint.rescale %x {mode = "single_round", multiplier = array<i64: 1073741824>, shift = array<i64: -40>} : (tensor<4xi32>) -> tensor<4xi8>
  func.return %0 : tensor<4xi8>
}
// -----
// softmax needs a last axis
func.func @softmax_rank0(%x: tensor<i8>) -> tensor<i8> {
  // expected-error@+1 {{qnn-lower-to-linalg cannot lower: qint.softmax: softmax of a rank-0 tensor}}
  %0 = qint.softmax %x {input_multiplier = 1073741824 : i64, input_shift = 26 : i64, diff_min = -31 : i64} : (tensor<i8>) -> tensor<i8>
  func.return %0 : tensor<i8>
}
// -----
// anything left that is not upstream func/arith/linalg/tensor is named
func.func @left_over(%x: tensor<4xi8>) -> tensor<4xi8> {
  // expected-error@+1 {{qnn-lower-to-linalg cannot lower: test.op (not an upstream func/arith/linalg/tensor/math.fma/math.ctlz op)}}
  %0 = "test.op"(%x) : (tensor<4xi8>) -> tensor<4xi8>
  func.return %0 : tensor<4xi8>
}
