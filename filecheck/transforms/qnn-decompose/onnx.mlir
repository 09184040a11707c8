// RUN: %qd-opt %s -p qnn-decompose | filecheck %s

// The ONNX profiles (models imported from ONNX).  rounding = "onnxruntime": ONNX Runtime's
// integer kernels.
// QLinearConv with uint8 activations: the activations are read as x - 128 (one wrapped qint.add
// with lhs_zp = -128) with zero point 128 - 128 = 0, the sums are exact, and the requantization is
// MlasRequantizeOutput's float32 product with f32(f32(0.5 * 0.25) / 1.0) = 0.125, ties to even,
// written straight into the uint8 result (clamp [0, 255], zero point 10).
// QLinearAdd: one 65536-entry table indexed by (a_bits + 128) * 256 + (b_bits + 128); its first
// entry is a = 128 (real 0), b = 128 (real 118): 118 / 1.0 + 10 = 128 = 0x80, the next b = 129: 0x81.
// Nearest Resize by 2: every pixel repeated 2 x 2 times (a broadcasting generic, collapsed).
// CHECK-LABEL: func.func @onnxruntime
// CHECK:         %[[S:.*]] = qint.add %x, %{{.*}} {lhs_zp = -128 : i64} : (tensor<1x4x4x2xi8>, tensor<1x1x1x1xi8>) -> tensor<1x4x4x2xi8>
// CHECK-NEXT:    %[[C:.*]] = qint.conv2d %[[S]], %w {input_zp = 0 : i64, weight_zp = 0 : i64
// CHECK-NEXT:    %[[B:.*]] = qint.bias_add %[[C]], %b
// CHECK-NEXT:    qint.rescale %[[B]] {mode = "float_even", scale = array<f64: 1.250000e-01, 1.250000e-01, 1.250000e-01>, output_zp = 10 : i64, clamp_min = 0 : i64, clamp_max = 255 : i64}
// CHECK:         %[[HI:.*]] = qint.mul %x, %{{.*}} {lhs_zp = -128 : i64} : (tensor<1x4x4x2xi8>, tensor<1x1x1x1xi32>) -> tensor<1x4x4x2xi32>
// CHECK-NEXT:    %[[I:.*]] = qint.add %[[HI]], %y {rhs_zp = -128 : i64} : (tensor<1x4x4x2xi32>, tensor<1x4x4x2xi8>) -> tensor<1x4x4x2xi16>
// CHECK-NEXT:    %[[T:.*]] = arith.constant dense<"0x808182
// CHECK-NEXT:    qint.table %[[I]], %[[T]] {unsigned = true} : (tensor<1x4x4x2xi16>, tensor<65536xi8>) -> tensor<1x4x4x2xi8>
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d3, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>]
// CHECK:         tensor.collapse_shape %{{.*}} {{\[}}[0 : i64], [1 : i64, 2 : i64], [3 : i64, 4 : i64], [5 : i64]] : tensor<1x4x2x4x2x2xi8> into tensor<1x8x8x2xi8>
!x = !quant.uniform<u8:f32, 0.5:128>
!w = !quant.uniform<i8:f32, 0.25>
!b = !quant.uniform<i32:f32, 0.125>
!o = !quant.uniform<u8:f32, 1.0:10>
func.func @onnxruntime(%x: tensor<1x4x4x2x!x>, %y: tensor<1x4x4x2x!o>) -> (tensor<1x4x4x3x!o>, tensor<1x4x4x2x!o>, tensor<1x8x8x2x!x>) {
  %w = qnn.constant dense<"0x010203040506"> : tensor<3x1x1x2x!w>
  %b = qnn.constant dense<"0x000000000100000002000000"> : tensor<3x!b>
  %0 = qnn.conv2d %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, rounding = "onnxruntime"} : (tensor<1x4x4x2x!x>, tensor<3x1x1x2x!w>, tensor<3x!b>) -> tensor<1x4x4x3x!o>
  %1 = qnn.add %x, %y {rounding = "onnxruntime"} : (tensor<1x4x4x2x!x>, tensor<1x4x4x2x!o>) -> tensor<1x4x4x2x!o>
  %2 = qnn.resize_nearest_neighbor %x : (tensor<1x4x4x2x!x>) -> tensor<1x8x8x2x!x>
  func.return %0, %1, %2 : tensor<1x4x4x3x!o>, tensor<1x4x4x2x!o>, tensor<1x8x8x2x!x>
}
