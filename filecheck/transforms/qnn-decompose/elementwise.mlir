// RUN: %qd-opt %s -p qnn-decompose | filecheck %s

// add / sub / mul / maximum / minimum / requantize / clamp.  Scales are chosen so the
// multipliers are exact powers of two and can be checked by hand: TFLite's
// QuantizeMultiplier(r) = (round(f * 2^31), e) with r = f * 2^e, f in [0.5, 1).

!a = !quant.uniform<i8:f32, 0.5:-3>
!b = !quant.uniform<i8:f32, 0.125:1>
!o = !quant.uniform<i8:f32, 0.25:5>
!h = !quant.uniform<i16:f32, 0.001>
!u = !quant.uniform<u8:f32, 0.1:128>

// ADD (TFLite add.cc, 8-bit): left_shift 20, twice_max_input_scale = 2 * 0.5 = 1;
// input 1: 0.5 / 1 = 0.5 * 2^0 -> (2^30, 0); input 2: 0.125 / 1 = 0.5 * 2^-2 -> (2^30, -2);
// output: 1 / (2^20 * 0.25) = 2^-18 = 0.5 * 2^-17 -> (2^30, -17).  Broadcasting stays in the types.
// CHECK-LABEL: func.func @add_sub
// CHECK-NEXT:    %[[A:.*]] = qint.rescale %{{.*}} {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 0>, input_zp = -3 : i64, left_shift = 20 : i64} : (tensor<2x3xi8>) -> tensor<2x3xi32>
// CHECK-NEXT:    %[[B:.*]] = qint.rescale %{{.*}} {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: -2>, input_zp = 1 : i64, left_shift = 20 : i64} : (tensor<3xi8>) -> tensor<3xi32>
// CHECK-NEXT:    %[[S:.*]] = qint.add %[[A]], %[[B]] : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    qint.rescale %[[S]] {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: -17>, output_zp = 5 : i64, clamp_min = -100 : i64, clamp_max = 100 : i64} : (tensor<2x3xi32>) -> tensor<2x3xi8>
// CHECK-NEXT:    qint.rescale
// CHECK-NEXT:    qint.rescale
// CHECK-NEXT:    %[[D:.*]] = qint.sub
// CHECK-NEXT:    qint.rescale %[[D]] {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: -17>, output_zp = 5 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64}
func.func @add_sub(%a: tensor<2x3x!a>, %b: tensor<3x!b>) -> (tensor<2x3x!o>, tensor<2x3x!o>) {
  %0 = qnn.add %a, %b {act_min = -100 : i64, act_max = 100 : i64} : (tensor<2x3x!a>, tensor<3x!b>) -> tensor<2x3x!o>
  %1 = qnn.sub %a, %b : (tensor<2x3x!a>, tensor<3x!b>) -> tensor<2x3x!o>
  func.return %0, %1 : tensor<2x3x!o>, tensor<2x3x!o>
}

// 16-bit ADD: left_shift 15; 0.001 / 0.004 = 0.5 * 2^-1, 0.002 / 0.004 = 0.5 * 2^0,
// output 0.004 / (2^15 * 0.004) = 0.5 * 2^-14; the clamp is the i16 range.
// CHECK-LABEL: func.func @add16
// CHECK-NEXT:    qint.rescale %{{.*}} {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: -1>, left_shift = 15 : i64} : (tensor<4xi16>) -> tensor<4xi32>
// CHECK-NEXT:    qint.rescale %{{.*}} {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 0>, left_shift = 15 : i64} : (tensor<4xi16>) -> tensor<4xi32>
// CHECK-NEXT:    qint.add
// CHECK-NEXT:    qint.rescale %{{.*}} {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: -14>, clamp_min = -32768 : i64, clamp_max = 32767 : i64} : (tensor<4xi32>) -> tensor<4xi16>
func.func @add16(%a: tensor<4x!h>, %b: tensor<4x!quant.uniform<i16:f32, 0.002>>) -> tensor<4x!quant.uniform<i16:f32, 0.004>> {
  %0 = qnn.add %a, %b : (tensor<4x!h>, tensor<4x!quant.uniform<i16:f32, 0.002>>) -> tensor<4x!quant.uniform<i16:f32, 0.004>>
  func.return %0 : tensor<4x!quant.uniform<i16:f32, 0.004>>
}

// MUL: the product of the centred inputs, then 0.5 * 0.125 / 0.25 = 0.25 = 0.5 * 2^-1.
// tflite -> double_round, single -> single_round, half_even -> float_even with scale 0.25.
// CHECK-LABEL: func.func @mul
// CHECK-NEXT:    %[[P:.*]] = qint.mul %{{.*}}, %{{.*}} {lhs_zp = -3 : i64, rhs_zp = 1 : i64} : (tensor<2x3xi8>, tensor<3xi8>) -> tensor<2x3xi32>
// CHECK-NEXT:    qint.rescale %[[P]] {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: -1>, output_zp = 5 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64}
// CHECK-NEXT:    qint.mul
// CHECK-NEXT:    qint.rescale %{{.*}} {mode = "single_round", multiplier = array<i64: 1073741824>, shift = array<i64: -1>, output_zp = 5 : i64
// CHECK-NEXT:    qint.mul
// CHECK-NEXT:    qint.rescale %{{.*}} {mode = "float_even", scale = array<f64: 2.500000e-01>, output_zp = 5 : i64
func.func @mul(%a: tensor<2x3x!a>, %b: tensor<3x!b>) -> (tensor<2x3x!o>, tensor<2x3x!o>, tensor<2x3x!o>) {
  %0 = qnn.mul %a, %b : (tensor<2x3x!a>, tensor<3x!b>) -> tensor<2x3x!o>
  %1 = qnn.mul %a, %b {rounding = "single"} : (tensor<2x3x!a>, tensor<3x!b>) -> tensor<2x3x!o>
  %2 = qnn.mul %a, %b {rounding = "half_even"} : (tensor<2x3x!a>, tensor<3x!b>) -> tensor<2x3x!o>
  func.return %0, %1, %2 : tensor<2x3x!o>, tensor<2x3x!o>, tensor<2x3x!o>
}

// maximum / minimum on equal types: no rescale; a fused clamp becomes a rescale of mode none.
// CHECK-LABEL: func.func @extrema
// CHECK-NEXT:    %[[MAX:.*]] = qint.maximum %{{.*}}, %{{.*}} : (tensor<2x3xi8>, tensor<3xi8>) -> tensor<2x3xi8>
// CHECK-NEXT:    %[[MIN:.*]] = qint.minimum %{{.*}}, %{{.*}} : (tensor<2x3xi8>, tensor<3xi8>) -> tensor<2x3xi8>
// CHECK-NEXT:    %[[C:.*]] = qint.rescale %[[MIN]] {mode = "none", clamp_min = -3 : i64, clamp_max = 9 : i64} : (tensor<2x3xi8>) -> tensor<2x3xi8>
// CHECK-NEXT:    func.return %[[MAX]], %[[C]]
func.func @extrema(%a: tensor<2x3x!a>, %b: tensor<3x!a>) -> (tensor<2x3x!a>, tensor<2x3x!a>) {
  %0 = qnn.maximum %a, %b : (tensor<2x3x!a>, tensor<3x!a>) -> tensor<2x3x!a>
  %1 = qnn.minimum %a, %b {act_min = -3 : i64, act_max = 9 : i64} : (tensor<2x3x!a>, tensor<3x!a>) -> tensor<2x3x!a>
  func.return %0, %1 : tensor<2x3x!a>, tensor<2x3x!a>
}

// requantize: 0.5 / 0.25 = 2 = 0.5 * 2^2 -> (2^30, 2).
// To u8 (0.1:128) with half_up: 0.5 / 0.1f = 4.9999999255 = 0.62499999068 * 2^3 -> round(0.62499999068 * 2^31) = 1342177260,
//   single rounding, clamp [0, 255] (the u8 range, its bits carried in i8).
// From u8: 0.1f / 0.5 = 0.80000001192 * 2^-2 -> 1717986944, the input read unsigned.
// clamp: a rescale by 1 (2^30, 1) with the bounds; half_even: float_even with scale 2.
// The u8 edges keep their signedness as a mark (qdialect/io_types.py).
// CHECK-LABEL: func.func @requantize(%{{.*}}: tensor<2x3xi8>, %{{.*}}: tensor<2x3xi8> {qnn.element_type = ui8}) -> (tensor<2x3xi8>, tensor<2x3xi8> {qnn.element_type = ui8}, 
// CHECK-NEXT:    qint.rescale %{{.*}} {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 2>, input_zp = -3 : i64, output_zp = 5 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64} : (tensor<2x3xi8>) -> tensor<2x3xi8>
// CHECK-NEXT:    qint.rescale %{{.*}} {mode = "single_round", multiplier = array<i64: 1342177260>, shift = array<i64: 3>, input_zp = -3 : i64, output_zp = 128 : i64, clamp_min = 0 : i64, clamp_max = 255 : i64} : (tensor<2x3xi8>) -> tensor<2x3xi8>
// CHECK-NEXT:    qint.rescale %{{.*}} {mode = "double_round", multiplier = array<i64: 1717986944>, shift = array<i64: -2>, input_zp = 128 : i64, output_zp = -3 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64, input_unsigned = true}
// CHECK-NEXT:    qint.rescale %{{.*}} {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 1>, input_zp = -3 : i64, output_zp = -3 : i64, clamp_min = -3 : i64, clamp_max = 9 : i64}
// CHECK-NEXT:    qint.rescale %{{.*}} {mode = "float_even", scale = array<f64: 2.000000e+00>, input_zp = -3 : i64, output_zp = 5 : i64
func.func @requantize(%a: tensor<2x3x!a>, %u: tensor<2x3x!u>) -> (tensor<2x3x!o>, tensor<2x3x!u>, tensor<2x3x!a>, tensor<2x3x!a>, tensor<2x3x!o>) {
  %0 = qnn.requantize %a : (tensor<2x3x!a>) -> tensor<2x3x!o>
  %1 = qnn.requantize %a {rounding = "half_up"} : (tensor<2x3x!a>) -> tensor<2x3x!u>
  %2 = qnn.requantize %u : (tensor<2x3x!u>) -> tensor<2x3x!a>
  %3 = qnn.clamp %a {act_min = -3 : i64, act_max = 9 : i64} : (tensor<2x3x!a>) -> tensor<2x3x!a>
  %4 = qnn.requantize %a {rounding = "half_even"} : (tensor<2x3x!a>) -> tensor<2x3x!o>
  func.return %0, %1, %2, %3, %4 : tensor<2x3x!o>, tensor<2x3x!u>, tensor<2x3x!a>, tensor<2x3x!a>, tensor<2x3x!o>
}

// requantize to per-axis scales (axis 1): 0.5 / {0.25, 0.5, 1} = 0.5 * 2^{2, 1, 0}.
// CHECK-LABEL: func.func @requantize_per_axis
// CHECK-NEXT:    qint.rescale %{{.*}} {mode = "double_round", multiplier = array<i64: 1073741824, 1073741824, 1073741824>, shift = array<i64: 2, 1, 0>, input_zp = -3 : i64, output_zp = 2 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64, axis = 1 : i64}
func.func @requantize_per_axis(%a: tensor<2x3x!a>) -> tensor<2x3x!quant.uniform<i8:f32:1, {0.25:2, 0.5:2, 1.0:2}>> {
  %0 = qnn.requantize %a : (tensor<2x3x!a>) -> tensor<2x3x!quant.uniform<i8:f32:1, {0.25:2, 0.5:2, 1.0:2}>>
  func.return %0 : tensor<2x3x!quant.uniform<i8:f32:1, {0.25:2, 0.5:2, 1.0:2}>>
}
