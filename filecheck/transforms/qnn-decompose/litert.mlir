// RUN: %qd-opt %s -p qnn-decompose | filecheck %s
// RUN: %qd-opt %s -p qnn-decompose,qnn-lower-to-linalg | filecheck %s --check-prefix=L3

// The `litert` profile (LiteRT's default interpreter, XNNPACK attached) where it is not
// the reference arithmetic: XNNPACK's fused add, its float mean, the optimized kernel's
// float-table softmax.

!a = !quant.uniform<i8:f32, 0.5:-3>
!b = !quant.uniform<i8:f32, 0.125:1>
!o = !quant.uniform<i8:f32, 0.25:5>
!s = !quant.uniform<i8:f32, 0.00390625:-128>

// XNNPACK qs8 add: ratios 0.5 / 0.25 = 2 and 0.125 / 0.25 = 0.5; the larger has exponent 1,
// so shift = 20 - 1 = 19, multipliers 2 * 2^19 and 0.5 * 2^19; bias = 2^18 - Ma * (-3) - Mb * 1.
// SUB negates the second multiplier (bias 2^18 + 3 Ma + Mb).
// CHECK-LABEL: func.func @add_sub
// CHECK-NEXT:    qint.scaled_add %{{.*}}, %{{.*}} {lhs_multiplier = 1048576 : i64, rhs_multiplier = 262144 : i64, bias = 3145728 : i64, shift = 19 : i64, output_zp = 5 : i64, clamp_min = -100 : i64, clamp_max = 100 : i64} : (tensor<2x3xi8>, tensor<3xi8>) -> tensor<2x3xi8>
// CHECK-NEXT:    qint.scaled_add %{{.*}}, %{{.*}} {lhs_multiplier = 1048576 : i64, rhs_multiplier = -262144 : i64, bias = 3670016 : i64, shift = 19 : i64, output_zp = 5 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64}
// L3-LABEL: func.func @add_sub
// L3:         arith.muli
// L3:         arith.trunci %{{.*}} : i64 to i32
// L3:         arith.shrsi %{{.*}}, %{{.*}} : i64
func.func @add_sub(%a: tensor<2x3x!a>, %b: tensor<3x!b>) -> (tensor<2x3x!o>, tensor<2x3x!o>) {
  %0 = qnn.add %a, %b {rounding = "litert", act_min = -100 : i64, act_max = 100 : i64} : (tensor<2x3x!a>, tensor<3x!b>) -> tensor<2x3x!o>
  %1 = qnn.sub %a, %b {rounding = "litert"} : (tensor<2x3x!a>, tensor<3x!b>) -> tensor<2x3x!o>
  func.return %0, %1 : tensor<2x3x!o>, tensor<2x3x!o>
}

// XNNPACK mean: scale = (0.5 / 0.25) * (1 / 4) = 0.5; offset = 5 - 4 * (-3) * 0.5 = 11 (the zero
// points); the raw sum is rescaled with ties to even.
// CHECK-LABEL: func.func @mean
// CHECK-NEXT:    %[[S:.*]] = qint.reduce_sum %{{.*}} {axes = array<i64: 1>, keep_dims = false} : (tensor<2x4xi8>) -> tensor<2xi32>
// CHECK-NEXT:    qint.rescale %[[S]] {mode = "float_even", scale = array<f64: 5.000000e-01>, offset = array<f64: 1.100000e+01>, clamp_min = -128 : i64, clamp_max = 127 : i64} : (tensor<2xi32>) -> tensor<2xi8>
// L3-LABEL: func.func @mean
// L3:         arith.mulf
// L3-NEXT:    arith.constant
// L3-NEXT:    arith.constant
// L3-NEXT:    arith.maximumf
// L3-NEXT:    arith.minimumf
// L3-NEXT:    arith.constant 1.100000e+01 : f32
// L3-NEXT:    arith.addf
func.func @mean(%a: tensor<2x4x!a>) -> tensor<2x!o> {
  %0 = qnn.mean %a {axes = array<i64: 1>, rounding = "litert"} : (tensor<2x4x!a>) -> tensor<2x!o>
  func.return %0 : tensor<2x!o>
}

// optimized_ops::Softmax: one recipe op at L2; at L3 the float32 row sum is added in order,
// each row element read through a constant-index map.
// CHECK-LABEL: func.func @softmax
// CHECK-NEXT:    qint.softmax %{{.*}} {mode = "float_away", input_scale = array<f64: 5.000000e-01>, beta = array<f64: 1.000000e+00>, output_scale = array<f64: 3.906250e-03>, output_zp = -128 : i64} : (tensor<2x4xi8>) -> tensor<2x4xi8>
// CHECK-NEXT:    qint.softmax %{{.*}} {mode = "float_even"
// L3-LABEL: func.func @softmax
// L3:         tensor.extract %{{.*}} : tensor<256xf32>
// L3:         linalg.generic {indexing_maps = [affine_map<(d0) -> (d0, 0)>, affine_map<(d0) -> (d0, 1)>, affine_map<(d0) -> (d0, 2)>, affine_map<(d0) -> (d0, 3)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
// L3-NEXT:    ^bb0(%[[E0:.*]]: f32, %[[E1:.*]]: f32, %[[E2:.*]]: f32, %[[E3:.*]]: f32, %{{.*}}: f32):
// L3-NEXT:      %[[S1:.*]] = arith.addf %[[E0]], %[[E1]] : f32
// L3-NEXT:      %[[S2:.*]] = arith.addf %[[S1]], %[[E2]] : f32
// L3-NEXT:      %[[S3:.*]] = arith.addf %[[S2]], %[[E3]] : f32
// L3-NEXT:      linalg.yield %[[S3]] : f32
// L3:         arith.divf
func.func @softmax(%a: tensor<2x4x!a>) -> (tensor<2x4x!s>, tensor<2x4x!s>) {
  %0 = qnn.softmax %a {rounding = "litert"} : (tensor<2x4x!a>) -> tensor<2x4x!s>
  %1 = qnn.softmax %a {rounding = "half_even"} : (tensor<2x4x!a>) -> tensor<2x4x!s>
  func.return %0, %1 : tensor<2x4x!s>, tensor<2x4x!s>
}
