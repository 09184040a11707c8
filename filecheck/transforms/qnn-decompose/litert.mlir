// RUN: %qd-opt %s -p qnn-decompose | filecheck %s

// rounding = "litert": ops that LiteRT's default path hands to XNNPACK (or to its own optimized
// kernels) decompose into the arithmetic those run.

!a = !quant.uniform<i8:f32, 0.5:-3>
!b = !quant.uniform<i8:f32, 0.125:1>
!o = !quant.uniform<i8:f32, 0.25:5>

// ADD / SUB -> qint.scaled_add (xnn_init_qs8_add_minmax params): ratios 0.5 / 0.25 = 2 and
// 0.125 / 0.25 = 0.5; the larger has exponent 1, so shift = 20 - 1 = 19, multipliers 2 * 2^19 =
// 1048576 and 0.5 * 2^19 = 262144; bias = 2^18 - 1048576 * (-3) - 262144 * 1 = 3145728.
// SUB negates the rhs multiplier: bias = 2^18 + 3145728 + 262144 = 3670016.
// MEAN (8-bit) -> i32 sum and one float_even rescale with XNNPACK's float32 scale
// 0.5 / (0.25 * 36) = 1/18 and offset 5 - (-3) * 36 / 18 = 11 (the zero points folded in).
// SOFTMAX -> the optimized kernel's float-table recipe, products rounded half away (float_away).
// CHECK-LABEL: func.func @litert
// CHECK-NEXT:    qint.scaled_add %{{.*}}, %{{.*}} {lhs_multiplier = 1048576 : i64, rhs_multiplier = 262144 : i64, bias = 3145728 : i64, shift = 19 : i64, output_zp = 5 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64} : (tensor<2x3xi8>, tensor<3xi8>) -> tensor<2x3xi8>
// CHECK-NEXT:    qint.scaled_add %{{.*}}, %{{.*}} {lhs_multiplier = 1048576 : i64, rhs_multiplier = -262144 : i64, bias = 3670016 : i64, shift = 19 : i64, output_zp = 5 : i64
// CHECK-NEXT:    %[[S:.*]] = qint.reduce_sum %{{.*}} {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<1x6x6x2xi8>) -> tensor<1x1x1x2xi32>
// CHECK-NEXT:    qint.rescale %[[S]] {mode = "float_even", scale = array<f64: 0.0555555559694767>, offset = array<f64: 1.100000e+01>, clamp_min = -128 : i64, clamp_max = 127 : i64} : (tensor<1x1x1x2xi32>) -> tensor<1x1x1x2xi8>
// CHECK-NEXT:    qint.softmax %{{.*}} {mode = "float_away", input_scale = array<f64: 5.000000e-01>, beta = array<f64: 1.000000e+00>, output_scale = array<f64: 3.906250e-03>, output_zp = -128 : i64} : (tensor<2x3xi8>) -> tensor<2x3xi8>
func.func @litert(%a: tensor<2x3x!a>, %b: tensor<3x!b>, %x: tensor<1x6x6x2x!a>) -> (tensor<2x3x!o>, tensor<2x3x!o>, tensor<1x1x1x2x!o>, tensor<2x3x!quant.uniform<i8:f32, 0.00390625:-128>>) {
  %0 = qnn.add %a, %b {rounding = "litert"} : (tensor<2x3x!a>, tensor<3x!b>) -> tensor<2x3x!o>
  %1 = qnn.sub %a, %b {rounding = "litert"} : (tensor<2x3x!a>, tensor<3x!b>) -> tensor<2x3x!o>
  %2 = qnn.mean %x {axes = array<i64: 1, 2>, keep_dims = true, rounding = "litert"} : (tensor<1x6x6x2x!a>) -> tensor<1x1x1x2x!o>
  %3 = qnn.softmax %a {rounding = "litert"} : (tensor<2x3x!a>) -> tensor<2x3x!quant.uniform<i8:f32, 0.00390625:-128>>
  func.return %0, %1, %2, %3 : tensor<2x3x!o>, tensor<2x3x!o>, tensor<1x1x1x2x!o>, tensor<2x3x!quant.uniform<i8:f32, 0.00390625:-128>>
}
