// RUN: %qd-opt %s -p qnn-decompose | filecheck %s

// conv2d / depthwise_conv2d / fully_connected: integer accumulation with the
// zero points explicit, the bias on the accumulator, and one qint.rescale whose
// per-channel parameters are TFLite's QuantizeMultiplier of
// input_scale * weight_scale[c] / output_scale (scales read as float32, the
// ratio formed in double).  Here 0.05f * 0.01f / 0.1f = 0.005f
// = 0.63999998569 * 2^-7, so multiplier round(0.63999998569 * 2^31) = 1374389504
// and shift -7; each doubling of the weight scale only moves the shift.

!x = !quant.uniform<i8:f32, 0.05:-3>
!y = !quant.uniform<i8:f32, 0.1:5>
!w = !quant.uniform<i8<-127:127>:f32:0, {0.01, 0.02}>
!b = !quant.uniform<i32:f32:0, {5.0e-4, 1.0e-3}>
!dw = !quant.uniform<i8<-127:127>:f32:3, {0.01, 0.02, 0.04, 0.08}>
!db = !quant.uniform<i32:f32:0, {5.0e-4, 1.0e-3, 2.0e-3, 4.0e-3}>
!fw = !quant.uniform<i8<-127:127>:f32, 0.01>
!fb = !quant.uniform<i32:f32, 5.0e-4>
!pw = !quant.uniform<i8<-127:127>:f32:0, {0.01, 0.02}>

// Per-channel conv with padding, strides and a fused clamp (act_min 5 in the output's storage).
// The signature becomes the storage integers; weights and bias become plain integer constants.
// CHECK-LABEL: func.func @conv(%{{.*}}: tensor<1x4x4x3xi8>) -> tensor<1x2x2x2xi8>
// CHECK-NEXT:    %[[W:.*]] = arith.constant dense<{{\[\[\[\[}}10, -10, 20], [10, -10, 20]], {{.*}}[127, -30, -127]]]]> : tensor<2x2x2x3xi8>
// CHECK-NEXT:    %[[B:.*]] = arith.constant dense<[100, -50]> : tensor<2xi32>
// CHECK-NEXT:    %[[ACC:.*]] = qint.conv2d %{{.*}}, %[[W]] {input_zp = -3 : i64, weight_zp = 0 : i64, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 1, 0, 1>} : (tensor<1x4x4x3xi8>, tensor<2x2x2x3xi8>) -> tensor<1x2x2x2xi32>
// CHECK-NEXT:    %[[SUM:.*]] = qint.bias_add %[[ACC]], %[[B]] : (tensor<1x2x2x2xi32>, tensor<2xi32>) -> tensor<1x2x2x2xi32>
// CHECK-NEXT:    %[[R:.*]] = qint.rescale %[[SUM]] {mode = "double_round", multiplier = array<i64: 1374389504, 1374389504>, shift = array<i64: -7, -6>, output_zp = 5 : i64, clamp_min = 5 : i64, clamp_max = 127 : i64} : (tensor<1x2x2x2xi32>) -> tensor<1x2x2x2xi8>
// CHECK-NEXT:    func.return %[[R]] : tensor<1x2x2x2xi8>
func.func @conv(%x: tensor<1x4x4x3x!x>) -> tensor<1x2x2x2x!y> {
  %w = qnn.constant dense<"0x0AF6140AF6140AF6140AF6147FE2817FE2817FE2817FE281"> : tensor<2x2x2x3x!w>
  %b = qnn.constant dense<"0x64000000CEFFFFFF"> : tensor<2x!b>
  %c = qnn.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 0, 1, 0, 1>, act_min = 5 : i64} : (tensor<1x4x4x3x!x>, tensor<2x2x2x3x!w>, tensor<2x!b>) -> tensor<1x2x2x2x!y>
  func.return %c : tensor<1x2x2x2x!y>
}

// Depthwise with channel multiplier 2 (2 input channels, 4 outputs), weight scales 0.01 * 2^c:
// one multiplier, shifts -7..-4.
// CHECK-LABEL: func.func @depthwise
// CHECK:         %[[ACC:.*]] = qint.depthwise_conv2d %{{.*}}, %{{.*}} {input_zp = -3 : i64, weight_zp = 0 : i64, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x3x3x2xi8>, tensor<1x2x2x4xi8>) -> tensor<1x2x2x4xi32>
// CHECK-NEXT:    %[[SUM:.*]] = qint.bias_add %[[ACC]], %{{.*}} : (tensor<1x2x2x4xi32>, tensor<4xi32>)
// CHECK-NEXT:    qint.rescale %[[SUM]] {mode = "double_round", multiplier = array<i64: 1374389504, 1374389504, 1374389504, 1374389504>, shift = array<i64: -7, -6, -5, -4>, output_zp = 5 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64} : (tensor<1x2x2x4xi32>) -> tensor<1x2x2x4xi8>
func.func @depthwise(%x: tensor<1x3x3x2x!x>) -> tensor<1x2x2x4x!y> {
  %w = qnn.constant dense<"0x0102030405060708090A0B0C0D0E0F10"> : tensor<1x2x2x4x!dw>
  %b = qnn.constant dense<"0x64000000CEFFFFFF07000000F8FFFFFF"> : tensor<4x!db>
  %c = qnn.depthwise_conv2d %x, %w, %b : (tensor<1x3x3x2x!x>, tensor<1x2x2x4x!dw>, tensor<4x!db>) -> tensor<1x2x2x4x!y>
  func.return %c : tensor<1x2x2x4x!y>
}

// fully_connected under `tflite`: the reference kernel requantizes in double with
// ties away from zero, so the rescale keeps the real ratio 0.005f (float_away).
// CHECK-LABEL: func.func @fc
// CHECK:         %[[ACC:.*]] = qint.fully_connected %{{.*}}, %{{.*}} {input_zp = -3 : i64, weight_zp = 0 : i64} : (tensor<2x4xi8>, tensor<2x4xi8>) -> tensor<2x2xi32>
// CHECK-NEXT:    %[[SUM:.*]] = qint.bias_add %[[ACC]], %{{.*}}
// CHECK-NEXT:    qint.rescale %[[SUM]] {mode = "float_away", scale = array<f64: 0.004999999888241291, 0.004999999888241291>, output_zp = 5 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64}
func.func @fc(%x: tensor<2x4x!x>) -> tensor<2x2x!y> {
  %w = qnn.constant dense<"0x01020304FFFEFDFC"> : tensor<2x4x!fw>
  %b = qnn.constant dense<"0x64000000CEFFFFFF"> : tensor<2x!fb>
  %c = qnn.fully_connected %x, %w, %b : (tensor<2x4x!x>, tensor<2x4x!fw>, tensor<2x!fb>) -> tensor<2x2x!y>
  func.return %c : tensor<2x2x!y>
}

// fully_connected on a rank-3 input: the rows are collapsed first; per-channel scales 0.005f, 0.01f.
// CHECK-LABEL: func.func @fc_per_channel
// CHECK:         %[[FLAT:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0 : i64], [1 : i64, 2 : i64]] : tensor<2x2x2xi8> into tensor<2x4xi8>
// CHECK-NEXT:    qint.fully_connected %[[FLAT]], %{{.*}} {input_zp = -3 : i64, weight_zp = 0 : i64}
// CHECK-NEXT:    qint.bias_add
// CHECK-NEXT:    qint.rescale %{{.*}} {mode = "float_away", scale = array<f64: 0.004999999888241291, 0.0099999997764825821>, output_zp = 5 : i64
func.func @fc_per_channel(%x: tensor<2x2x2x!x>) -> tensor<2x2x!y> {
  %w = qnn.constant dense<"0x01020304FFFEFDFC"> : tensor<2x4x!pw>
  %b = qnn.constant dense<"0x64000000CEFFFFFF"> : tensor<2x!b>
  %c = qnn.fully_connected %x, %w, %b : (tensor<2x2x2x!x>, tensor<2x4x!pw>, tensor<2x!b>) -> tensor<2x2x!y>
  func.return %c : tensor<2x2x!y>
}

// Each knob picks the shape of the rescale:
//   single / half_up -> single_round with the same Q31 multiplier;
//   half_even        -> float_even with the ratio as float32;
//   litert           -> float_even with XNNPACK's float32 scale (0.05f * 0.01f / 0.1f in float32 = 0.0050000004);
//   bias = output    -> accumulator and bias each rescaled to i64, added, then mode none adds the zero point and clamps;
//   acc = i16        -> i16 accumulator (the i32 bias is added in 16 bits);
//   acc = i64        -> i64 accumulator.
// CHECK-LABEL: func.func @fc_knobs
// CHECK:         qint.rescale %{{.*}} {mode = "single_round", multiplier = array<i64: 1374389504, 1374389504>, shift = array<i64: -7, -6>, output_zp = 5 : i64
// CHECK:         qint.rescale %{{.*}} {mode = "single_round", multiplier = array<i64: 1374389504, 1374389504>, shift = array<i64: -7, -6>, output_zp = 5 : i64
// CHECK:         qint.rescale %{{.*}} {mode = "float_even", scale = array<f64: 0.004999999888241291, 0.0099999997764825821>, output_zp = 5 : i64
// CHECK:         qint.rescale %{{.*}} {mode = "float_even", scale = array<f64: 0.0050000003539025784, 0.010000000707805157>, output_zp = 5 : i64
// CHECK:         %[[ACC:.*]] = qint.fully_connected {{.*}} -> tensor<2x2xi32>
// CHECK-NEXT:    %[[RA:.*]] = qint.rescale %[[ACC]] {mode = "float_away", scale = array<f64: 0.004999999888241291, 0.0099999997764825821>} : (tensor<2x2xi32>) -> tensor<2x2xi64>
// CHECK-NEXT:    %[[RB:.*]] = qint.rescale %[[B:.*]] {mode = "float_away", scale = array<f64: 0.004999999888241291, 0.0099999997764825821>} : (tensor<2xi32>) -> tensor<2xi64>
// CHECK-NEXT:    %[[T:.*]] = qint.bias_add %[[RA]], %[[RB]] : (tensor<2x2xi64>, tensor<2xi64>) -> tensor<2x2xi64>
// CHECK-NEXT:    qint.rescale %[[T]] {mode = "none", output_zp = 5 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64} : (tensor<2x2xi64>) -> tensor<2x2xi8>
// CHECK-NEXT:    %[[A16:.*]] = qint.fully_connected {{.*}} -> tensor<2x2xi16>
// CHECK-NEXT:    %[[S16:.*]] = qint.bias_add %[[A16]], %{{.*}} : (tensor<2x2xi16>, tensor<2xi32>) -> tensor<2x2xi16>
// CHECK-NEXT:    qint.rescale %[[S16]] {mode = "float_away", {{.*}} : (tensor<2x2xi16>) -> tensor<2x2xi8>
// CHECK-NEXT:    %[[A64:.*]] = qint.fully_connected {{.*}} -> tensor<2x2xi64>
// CHECK-NEXT:    %[[S64:.*]] = qint.bias_add %[[A64]], %{{.*}} : (tensor<2x2xi64>, tensor<2xi32>) -> tensor<2x2xi64>
// CHECK-NEXT:    qint.rescale %[[S64]] {mode = "float_away", {{.*}} : (tensor<2x2xi64>) -> tensor<2x2xi8>
func.func @fc_knobs(%x: tensor<2x4x!x>) -> (tensor<2x2x!y>, tensor<2x2x!y>, tensor<2x2x!y>, tensor<2x2x!y>, tensor<2x2x!y>, tensor<2x2x!y>, tensor<2x2x!y>) {
  %w = qnn.constant dense<"0x01020304FFFEFDFC"> : tensor<2x4x!pw>
  %b = qnn.constant dense<"0x64000000CEFFFFFF"> : tensor<2x!b>
  %0 = qnn.fully_connected %x, %w, %b {rounding = "single"} : (tensor<2x4x!x>, tensor<2x4x!pw>, tensor<2x!b>) -> tensor<2x2x!y>
  %1 = qnn.fully_connected %x, %w, %b {rounding = "half_up"} : (tensor<2x4x!x>, tensor<2x4x!pw>, tensor<2x!b>) -> tensor<2x2x!y>
  %2 = qnn.fully_connected %x, %w, %b {rounding = "half_even"} : (tensor<2x4x!x>, tensor<2x4x!pw>, tensor<2x!b>) -> tensor<2x2x!y>
  %3 = qnn.fully_connected %x, %w, %b {rounding = "litert"} : (tensor<2x4x!x>, tensor<2x4x!pw>, tensor<2x!b>) -> tensor<2x2x!y>
  %4 = qnn.fully_connected %x, %w, %b {bias = "output"} : (tensor<2x4x!x>, tensor<2x4x!pw>, tensor<2x!b>) -> tensor<2x2x!y>
  %5 = qnn.fully_connected %x, %w, %b {acc = "i16"} : (tensor<2x4x!x>, tensor<2x4x!pw>, tensor<2x!b>) -> tensor<2x2x!y>
  %6 = qnn.fully_connected %x, %w, %b {acc = "i64"} : (tensor<2x4x!x>, tensor<2x4x!pw>, tensor<2x!b>) -> tensor<2x2x!y>
  func.return %0, %1, %2, %3, %4, %5, %6 : tensor<2x2x!y>, tensor<2x2x!y>, tensor<2x2x!y>, tensor<2x2x!y>, tensor<2x2x!y>, tensor<2x2x!y>, tensor<2x2x!y>
}

// The same knobs on conv2d, whose integer path is TFLite's MultiplyByQuantizedMultiplier:
// bias = output with single rounding rescales accumulator and bias separately;
// acc = i64 uses TFLite's 64-bit multiply (wide_round: the multiplier cut to 16 bits, one rounding).
// CHECK-LABEL: func.func @conv_knobs
// CHECK:         %[[ACC:.*]] = qint.conv2d {{.*}} -> tensor<1x2x2x2xi32>
// CHECK-NEXT:    %[[RA:.*]] = qint.rescale %[[ACC]] {mode = "single_round", multiplier = array<i64: 1374389504, 1374389504>, shift = array<i64: -7, -6>} : (tensor<1x2x2x2xi32>) -> tensor<1x2x2x2xi64>
// CHECK-NEXT:    %[[RB:.*]] = qint.rescale %{{.*}} {mode = "single_round", multiplier = array<i64: 1374389504, 1374389504>, shift = array<i64: -7, -6>} : (tensor<2xi32>) -> tensor<2xi64>
// CHECK-NEXT:    %[[T:.*]] = qint.bias_add %[[RA]], %[[RB]]
// CHECK-NEXT:    qint.rescale %[[T]] {mode = "none", output_zp = 5 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64} : (tensor<1x2x2x2xi64>) -> tensor<1x2x2x2xi8>
// CHECK:         qint.rescale %{{.*}} {mode = "float_even", scale = array<f64: 0.004999999888241291, 0.0099999997764825821>, output_zp = 5 : i64
// CHECK:         qint.conv2d {{.*}} -> tensor<1x2x2x2xi16>
// CHECK-NEXT:    qint.bias_add {{.*}} : (tensor<1x2x2x2xi16>, tensor<2xi32>) -> tensor<1x2x2x2xi16>
// CHECK-NEXT:    qint.rescale %{{.*}} {mode = "double_round", multiplier = array<i64: 1374389504, 1374389504>, shift = array<i64: -7, -6>, {{.*}} : (tensor<1x2x2x2xi16>) -> tensor<1x2x2x2xi8>
// CHECK:         qint.conv2d {{.*}} -> tensor<1x2x2x2xi64>
// CHECK-NEXT:    qint.bias_add {{.*}} : (tensor<1x2x2x2xi64>, tensor<2xi32>) -> tensor<1x2x2x2xi64>
// CHECK-NEXT:    qint.rescale %{{.*}} {mode = "wide_round", multiplier = array<i64: 1374389504, 1374389504>, shift = array<i64: -7, -6>, {{.*}} : (tensor<1x2x2x2xi64>) -> tensor<1x2x2x2xi8>
// CHECK:         qint.rescale %{{.*}} {mode = "float_even", scale = array<f64: 0.0050000003539025784, 0.010000000707805157>, output_zp = 5 : i64
func.func @conv_knobs(%x: tensor<1x4x4x3x!x>) -> (tensor<1x2x2x2x!y>, tensor<1x2x2x2x!y>, tensor<1x2x2x2x!y>, tensor<1x2x2x2x!y>, tensor<1x2x2x2x!y>) {
  %w = qnn.constant dense<"0x0AF6140AF6140AF6140AF6147FE2817FE2817FE2817FE281"> : tensor<2x2x2x3x!w>
  %b = qnn.constant dense<"0x64000000CEFFFFFF"> : tensor<2x!b>
  %0 = qnn.conv2d %x, %w, %b {strides = array<i64: 2, 2>, rounding = "single", bias = "output"} : (tensor<1x4x4x3x!x>, tensor<2x2x2x3x!w>, tensor<2x!b>) -> tensor<1x2x2x2x!y>
  %1 = qnn.conv2d %x, %w, %b {strides = array<i64: 2, 2>, rounding = "half_even"} : (tensor<1x4x4x3x!x>, tensor<2x2x2x3x!w>, tensor<2x!b>) -> tensor<1x2x2x2x!y>
  %2 = qnn.conv2d %x, %w, %b {strides = array<i64: 2, 2>, acc = "i16"} : (tensor<1x4x4x3x!x>, tensor<2x2x2x3x!w>, tensor<2x!b>) -> tensor<1x2x2x2x!y>
  %3 = qnn.conv2d %x, %w, %b {strides = array<i64: 2, 2>, acc = "i64"} : (tensor<1x4x4x3x!x>, tensor<2x2x2x3x!w>, tensor<2x!b>) -> tensor<1x2x2x2x!y>
  %4 = qnn.conv2d %x, %w, %b {strides = array<i64: 2, 2>, rounding = "litert"} : (tensor<1x4x4x3x!x>, tensor<2x2x2x3x!w>, tensor<2x!b>) -> tensor<1x2x2x2x!y>
  func.return %0, %1, %2, %3, %4 : tensor<1x2x2x2x!y>, tensor<1x2x2x2x!y>, tensor<1x2x2x2x!y>, tensor<1x2x2x2x!y>, tensor<1x2x2x2x!y>
}

// 16x8 (int16 activations, int8 weights, i64 bias): TFLite's default accumulator is i64 and its
// requantization the int64 MultiplyByQuantizedMultiplier (wide_round).  0.001 * 0.5 / 0.002 = 0.25
// -> (2^30, -1); 0.001 * 0.25 / 0.002 = 0.125 -> (2^30, -2); the clamp is the i16 range.
// CHECK-LABEL: func.func @conv16x8(%{{.*}}: tensor<1x2x2x2xi16>) -> tensor<1x2x2x2xi16>
// CHECK:         %[[ACC:.*]] = qint.conv2d %{{.*}}, %{{.*}} {input_zp = 0 : i64, weight_zp = 0 : i64, {{.*}} : (tensor<1x2x2x2xi16>, tensor<2x1x1x2xi8>) -> tensor<1x2x2x2xi64>
// CHECK-NEXT:    %[[SUM:.*]] = qint.bias_add %[[ACC]], %{{.*}} : (tensor<1x2x2x2xi64>, tensor<2xi64>) -> tensor<1x2x2x2xi64>
// CHECK-NEXT:    qint.rescale %[[SUM]] {mode = "wide_round", multiplier = array<i64: 1073741824, 1073741824>, shift = array<i64: -1, -2>, clamp_min = -32768 : i64, clamp_max = 32767 : i64} : (tensor<1x2x2x2xi64>) -> tensor<1x2x2x2xi16>
func.func @conv16x8(%x: tensor<1x2x2x2x!quant.uniform<i16:f32, 0.001>>) -> tensor<1x2x2x2x!quant.uniform<i16:f32, 0.002>> {
  %w = qnn.constant dense<"0x01020304"> : tensor<2x1x1x2x!quant.uniform<i8<-127:127>:f32:0, {0.5, 0.25}>>
  %b = arith.constant dense<[100, -50]> : tensor<2xi64>
  %c = qnn.conv2d %x, %w, %b : (tensor<1x2x2x2x!quant.uniform<i16:f32, 0.001>>, tensor<2x1x1x2x!quant.uniform<i8<-127:127>:f32:0, {0.5, 0.25}>>, tensor<2xi64>) -> tensor<1x2x2x2x!quant.uniform<i16:f32, 0.002>>
  func.return %c : tensor<1x2x2x2x!quant.uniform<i16:f32, 0.002>>
}
