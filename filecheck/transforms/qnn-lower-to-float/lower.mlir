// RUN: %qd-opt %s -p qnn-lower-to-float | filecheck %s

// qnn ops become quant.dcast -> nn float op -> quant.qcast; types keep every parameter.

!x = !quant.uniform<i8:f32, 0.05:-3>
!y = !quant.uniform<i8:f32, 0.1:5>
!w = !quant.uniform<i8:f32:0, {0.01, 0.02}>
!b = !quant.uniform<i32:f32:0, {5.0e-4, 1.0e-3}>

// Weights stay quantized constants and are dequantized; relu (act_min at the
// zero point) becomes the real fused clamp act_min = 0.0.
// CHECK-LABEL: func.func @conv
// CHECK-NEXT:    %[[X:.*]] = quant.dcast %x : tensor<1x2x2x3x!quant.uniform<i8:f32, 5.000000e-02:-3>> to tensor<1x2x2x3xf32>
// CHECK-NEXT:    %[[W:.*]] = qnn.constant dense<"0x0AF6147FE281"> : tensor<2x1x1x3x!quant.uniform<i8:f32:0, {1.000000e-02,2.000000e-02}>>
// CHECK-NEXT:    %[[WF:.*]] = quant.dcast %[[W]] : tensor<2x1x1x3x!quant.uniform<i8:f32:0, {1.000000e-02,2.000000e-02}>> to tensor<2x1x1x3xf32>
// CHECK-NEXT:    %[[B:.*]] = qnn.constant
// CHECK-NEXT:    %[[BF:.*]] = quant.dcast %[[B]] : tensor<2x!quant.uniform<i32:f32:0, {5.000000e-04,1.000000e-03}>> to tensor<2xf32>
// CHECK-NEXT:    %[[C:.*]] = nn.conv2d %[[X]], %[[WF]], %[[BF]] {strides = array<i64: 1, 1>, act_min = 0.000000e+00 : f64} : (tensor<1x2x2x3xf32>, tensor<2x1x1x3xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    %[[Q:.*]] = quant.qcast %[[C]] : tensor<1x2x2x2xf32> to tensor<1x2x2x2x!quant.uniform<i8:f32, 1.000000e-01:5>>
// CHECK-NEXT:    func.return %[[Q]]
func.func @conv(%x: tensor<1x2x2x3x!x>) -> tensor<1x2x2x2x!y> {
  %w = qnn.constant dense<"0x0AF6147FE281"> : tensor<2x1x1x3x!w>
  %b = qnn.constant dense<"0x64000000CEFFFFFF"> : tensor<2x!b>
  %c = qnn.conv2d %x, %w, %b {strides = array<i64: 1, 1>, act_min = 5 : i64, act_max = 127 : i64} : (tensor<1x2x2x3x!x>, tensor<2x1x1x3x!w>, tensor<2x!b>) -> tensor<1x2x2x2x!y>
  func.return %c : tensor<1x2x2x2x!y>
}

// One dcast per value, shared by its users; knobs travel as qnn.<knob> hints,
// and a rounding other than tflite quantizes with qnn.quantize in that profile.
// CHECK-LABEL: func.func @add_twice
// CHECK-NEXT:    %[[X:.*]] = quant.dcast %x
// CHECK-NEXT:    %[[A:.*]] = nn.add %[[X]], %[[X]] {qnn.rounding = "half_even"} :
// CHECK-NEXT:    qnn.quantize %[[A]] {rounding = "half_even"} : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 1.000000e-01:5>>
// CHECK-NEXT:    nn.mul %[[X]], %[[X]] :
// CHECK-NEXT:    quant.qcast
func.func @add_twice(%x: tensor<4x!x>) -> (tensor<4x!y>, tensor<4x!y>) {
  %a = qnn.add %x, %x {rounding = "half_even"} : (tensor<4x!x>, tensor<4x!x>) -> tensor<4x!y>
  %m = qnn.mul %x, %x : (tensor<4x!x>, tensor<4x!x>) -> tensor<4x!y>
  func.return %a, %m : tensor<4x!y>, tensor<4x!y>
}

// A requantize is dcast -> qcast; with a clamp, an nn.clip marked qnn.requantize in between.
// CHECK-LABEL: func.func @requantize
// CHECK-NEXT:    %[[X:.*]] = quant.dcast %x
// CHECK-NEXT:    quant.qcast %[[X]] : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 1.000000e-01:5>>
// CHECK-NEXT:    %[[C:.*]] = nn.clip %[[X]] {min = 5.000000e-01 : f64, qnn.requantize} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    quant.qcast %[[C]] : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 1.000000e-01:5>>
func.func @requantize(%x: tensor<4x!x>) -> (tensor<4x!y>, tensor<4x!y>) {
  %a = qnn.requantize %x : (tensor<4x!x>) -> tensor<4x!y>
  %b = qnn.requantize %x {act_min = 10 : i64} : (tensor<4x!x>) -> tensor<4x!y>
  func.return %a, %b : tensor<4x!y>, tensor<4x!y>
}

// relu6 as qnn.clamp: a clip with the real bounds [0, 6].
// CHECK-LABEL: func.func @relu6
// CHECK:         nn.clip %{{.*}} {min = 0.000000e+00 : f64, max = 6.000000e+00 : f64} : (tensor<4xf32>) -> tensor<4xf32>
func.func @relu6(%x: tensor<4x!x>) -> tensor<4x!y> {
  %r = qnn.clamp %x {act_min = 5 : i64, act_max = 65 : i64} : (tensor<4x!x>) -> tensor<4x!y>
  func.return %r : tensor<4x!y>
}

// The stored pad value becomes the real value it stands for: 0.05 * (7 - -3) = 0.5.
// CHECK-LABEL: func.func @pad
// CHECK:         nn.pad %{{.*}} {paddings = array<i64: 1, 1>, pad_value = 5.000000e-01 : f64} : (tensor<4xf32>) -> tensor<6xf32>
func.func @pad(%x: tensor<4x!x>) -> tensor<6x!x> {
  %p = qnn.pad %x {paddings = array<i64: 1, 1>, pad_value = 7 : i64} : (tensor<4x!x>) -> tensor<6x!x>
  func.return %p : tensor<6x!x>
}

// Fixed output types (softmax 1/256, -128) are just the qcast's type.
// CHECK-LABEL: func.func @softmax
// CHECK:         %[[S:.*]] = nn.softmax %{{.*}} {beta = 1.000000e+00 : f64} : (tensor<1x4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    quant.qcast %[[S]] : tensor<1x4xf32> to tensor<1x4x!quant.uniform<i8:f32, 3.906250e-03:-128>>
func.func @softmax(%x: tensor<1x4x!x>) -> tensor<1x4x!quant.uniform<i8:f32, 0.00390625:-128>> {
  %s = qnn.softmax %x {beta = 1.0 : f64} : (tensor<1x4x!x>) -> tensor<1x4x!quant.uniform<i8:f32, 0.00390625:-128>>
  func.return %s : tensor<1x4x!quant.uniform<i8:f32, 0.00390625:-128>>
}

// An integer bias constant is retyped with the scales input_scale * weight_scale[c].
// CHECK-LABEL: func.func @integer_bias
// CHECK:         %[[B:.*]] = qnn.constant dense<"0x64000000CEFFFFFF"> : tensor<2x!quant.uniform<i32:f32:0, {5.000000e-04,1.000000e-03}>>
// CHECK-NEXT:    %[[BF:.*]] = quant.dcast %[[B]]
// CHECK-NEXT:    nn.fully_connected %{{.*}}, %{{.*}}, %[[BF]] :
func.func @integer_bias(%x: tensor<1x3x!x>) -> tensor<1x2x!y> {
  %w = qnn.constant dense<"0x0AF6147FE281"> : tensor<2x3x!w>
  %b = arith.constant dense<[100, -50]> : tensor<2xi32>
  %f = qnn.fully_connected %x, %w, %b : (tensor<1x3x!x>, tensor<2x3x!w>, tensor<2xi32>) -> tensor<1x2x!y>
  func.return %f : tensor<1x2x!y>
}

// Ops without a float counterpart stay as they are.
// CHECK-LABEL: func.func @no_counterpart
// CHECK-NEXT:    qnn.resize_nearest_neighbor %x
func.func @no_counterpart(%x: tensor<1x2x2x1x!x>) -> tensor<1x4x4x1x!x> {
  %r = qnn.resize_nearest_neighbor %x : (tensor<1x2x2x1x!x>) -> tensor<1x4x4x1x!x>
  func.return %r : tensor<1x4x4x1x!x>
}
