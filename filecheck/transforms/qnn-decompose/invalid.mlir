// RUN: %qd-opt %s -p qnn-decompose --split-input-file --verify-diagnostics
// RUN: not %qd-opt %s -p qnn-decompose --split-input-file 2>&1 | filecheck %s --check-prefix=EXIT

// What qnn-decompose refuses, one diagnostic per chunk at the op, naming it and the reason;
// nothing is approximated.  Without --verify-diagnostics every chunk's refusal is a line on
// stderr and the exit status is non-zero.

// EXIT: error: qnn-decompose cannot lower: qnn.conv2d: qnn.conv2d with unsigned storage u8

// unsigned u8 storage into an accumulating op (only signed int8/int16 kernels are exact here)
!a = !quant.uniform<i8:f32, 0.5:-3>
!o = !quant.uniform<i8:f32, 0.25:5>
!u = !quant.uniform<u8:f32, 0.1:128>
func.func @conv_u8(%x: tensor<1x4x4x2x!u>) -> tensor<1x4x4x2x!o> {
  %w = qnn.constant dense<"0x01020304"> : tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.1, 0.2}>>
  %b = arith.constant dense<[1, 2]> : tensor<2xi32>
  // expected-error@+1 {{qnn-decompose cannot lower: qnn.conv2d: qnn.conv2d with unsigned storage u8}}
  %0 = qnn.conv2d %x, %w, %b : (tensor<1x4x4x2x!u>, tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.1, 0.2}>>, tensor<2xi32>) -> tensor<1x4x4x2x!o>
  func.return %0 : tensor<1x4x4x2x!o>
}
// -----
// per-channel weight zero points that differ (the conv primitive has one weight zero point)
!a = !quant.uniform<i8:f32, 0.5:-3>
!o = !quant.uniform<i8:f32, 0.25:5>
func.func @weight_zero_points(%x: tensor<1x4x4x2x!a>) -> tensor<1x4x4x2x!o> {
  %w = qnn.constant dense<"0x01020304"> : tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.1:1, 0.2:2}>>
  %b = arith.constant dense<[1, 2]> : tensor<2xi32>
  // expected-error@+1 {{qnn-decompose cannot lower: qnn.conv2d: per-channel weight zero points that differ}}
  %0 = qnn.conv2d %x, %w, %b : (tensor<1x4x4x2x!a>, tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.1:1, 0.2:2}>>, tensor<2xi32>) -> tensor<1x4x4x2x!o>
  func.return %0 : tensor<1x4x4x2x!o>
}
// -----
// add under half_even is one float sum of both inputs: no integer primitive
!a = !quant.uniform<i8:f32, 0.5:-3>
!o = !quant.uniform<i8:f32, 0.25:5>
func.func @add_half_even(%a: tensor<2x3x!a>) -> tensor<2x3x!o> {
  // expected-error@+1 {{qnn-decompose cannot lower: qnn.add: qnn.add with rounding 'half_even' (one float sum of both inputs)}}
  %0 = qnn.add %a, %a {rounding = "half_even"} : (tensor<2x3x!a>, tensor<2x3x!a>) -> tensor<2x3x!o>
  func.return %0 : tensor<2x3x!o>
}
// -----
// concatenation of inputs with other parameters would need a float rescale
!a = !quant.uniform<i8:f32, 0.5:-3>
!o = !quant.uniform<i8:f32, 0.25:5>
func.func @concat_params(%y: tensor<1x2x!a>, %c: tensor<1x2x!quant.uniform<i8:f32, 0.5:-2>>) -> tensor<1x4x!a> {
  // expected-error@+1 {{qnn-decompose cannot lower: qnn.concatenation: qnn.concatenation of inputs with different parameters (float rescale)}}
  %0 = qnn.concatenation %y, %c {axis = 1 : i64} : (tensor<1x2x!a>, tensor<1x2x!quant.uniform<i8:f32, 0.5:-2>>) -> tensor<1x4x!a>
  func.return %0 : tensor<1x4x!a>
}
// -----
// a saturating narrow accumulator saturates in loop order: not one wrap
!a = !quant.uniform<i8:f32, 0.5:-3>
!o = !quant.uniform<i8:f32, 0.25:5>
func.func @conv_saturate(%x: tensor<1x4x4x2x!a>) -> tensor<1x4x4x2x!o> {
  %w = qnn.constant dense<"0x01020304"> : tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.1, 0.2}>>
  %b = arith.constant dense<[1, 2]> : tensor<2xi32>
  // expected-error@+1 {{qnn-decompose cannot lower: qnn.conv2d: acc_overflow = 'saturate' (the sum saturates in loop order)}}
  %0 = qnn.conv2d %x, %w, %b {acc = "i16", acc_overflow = "saturate"} : (tensor<1x4x4x2x!a>, tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.1, 0.2}>>, tensor<2xi32>) -> tensor<1x4x4x2x!o>
  func.return %0 : tensor<1x4x4x2x!o>
}
// -----
// tables need <= 16-bit input
!a = !quant.uniform<i8:f32, 0.5:-3>
!o = !quant.uniform<i8:f32, 0.25:5>
func.func @table_i32(%x: tensor<4x!quant.uniform<i32:f32, 0.001>>) -> tensor<4x!quant.uniform<i16:f32, 3.0517578125e-05>> {
  // expected-error@+1 {{qnn-decompose cannot lower: qnn.logistic: qnn.logistic on i32 input (tables need <= 16 bits)}}
  %0 = qnn.logistic %x : (tensor<4x!quant.uniform<i32:f32, 0.001>>) -> tensor<4x!quant.uniform<i16:f32, 3.0517578125e-05>>
  func.return %0 : tensor<4x!quant.uniform<i16:f32, 3.0517578125e-05>>
}
// -----
// ops without a decomposition are named, all at once
!a = !quant.uniform<i8:f32, 0.5:-3>
!o = !quant.uniform<i8:f32, 0.25:5>
func.func @no_decomposition(%y: tensor<1x4x4x2x!a>) -> (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.0625:127>>, tensor<1x8x8x2x!a>) {
  // expected-error@+1 {{qnn-decompose cannot lower: qnn.log_softmax (no decomposition)}}
  %0 = qnn.log_softmax %y : (tensor<1x4x4x2x!a>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.0625:127>>
  %1 = qnn.resize_nearest_neighbor %y : (tensor<1x4x4x2x!a>) -> tensor<1x8x8x2x!a>
  func.return %0, %1 : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.0625:127>>, tensor<1x8x8x2x!a>
}
