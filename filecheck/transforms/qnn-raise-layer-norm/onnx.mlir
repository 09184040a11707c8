// RUN: %qd-opt %s -p qnn-raise-layer-norm | filecheck %s
// RUN: %qd-opt %s -p qnn-raise-layer-norm,qnn-expand-layer-norm | filecheck %s --check-prefix=EXPAND

// ONNX LayerNormalization between DequantizeLinear and QuantizeLinear (ONNX Runtime runs it
// in float) becomes one qnn.layer_norm on the quantized tensors; qnn-expand-layer-norm gives
// the island back.

!x = !quant.uniform<u8:f32, 0.05:128>
!y = !quant.uniform<u8:f32, 0.03:120>

// CHECK-LABEL: func.func @island
// CHECK-NEXT:    %[[LN:.*]] = qnn.layer_norm %x {axis = 2 : i64, epsilon = {{.*}} : f64, spelling = "onnx"} : (tensor<1x3x4x!quant.uniform<u8:f32, {{.*}}:128>>) -> tensor<1x3x4x!quant.uniform<u8:f32, {{.*}}:120>> {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<1x3x4x!quant.uniform<u8:f32, {{.*}}:128>>):
// CHECK-NEXT:      %[[F:.*]] = qnn.dequantize %[[X]]
// CHECK-NEXT:      %[[G:.*]] = nn.constant dense<"0x0000803F0000003F0000C03F00004040">
// CHECK-NEXT:      %[[B:.*]] = nn.constant dense<"0x000000000000803F00000000000080BF">
// CHECK-NEXT:      %[[N:.*]] = nn.layer_norm %[[F]], %[[G]], %[[B]] {axis = -1 : i64, epsilon = {{.*}} : f64, qnn.rounding = "onnx"}
// CHECK-NEXT:      %[[Q:.*]] = qnn.quantize %[[N]] {rounding = "onnx"}
// CHECK-NEXT:      qnn.yield %[[Q]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[LN]]

// EXPAND-LABEL: func.func @island
// EXPAND-NEXT:    %[[F:.*]] = qnn.dequantize %x
// EXPAND-NEXT:    %[[G:.*]] = nn.constant
// EXPAND-NEXT:    %[[B:.*]] = nn.constant
// EXPAND-NEXT:    %[[N:.*]] = nn.layer_norm %[[F]], %[[G]], %[[B]]
// EXPAND-NEXT:    %[[Q:.*]] = qnn.quantize %[[N]]
// EXPAND-NEXT:    func.return %[[Q]]
func.func @island(%x: tensor<1x3x4x!x>) -> tensor<1x3x4x!y> {
  %f = qnn.dequantize %x : (tensor<1x3x4x!x>) -> tensor<1x3x4xf32>
  %gamma = nn.constant dense<"0x0000803F0000003F0000C03F00004040"> : tensor<4xf32>
  %beta = nn.constant dense<"0x000000000000803F00000000000080BF"> : tensor<4xf32>
  %n = nn.layer_norm %f, %gamma, %beta {axis = -1 : i64, epsilon = 1.0e-05 : f64, qnn.rounding = "onnx"} : (tensor<1x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x3x4xf32>
  %q = qnn.quantize %n {rounding = "onnx"} : (tensor<1x3x4xf32>) -> tensor<1x3x4x!y>
  func.return %q : tensor<1x3x4x!y>
}

// Normalizing the last two axes (axis 1 of a rank-3 tensor) is not a one-axis layer norm.
// CHECK-LABEL: func.func @two_axes
// CHECK-NOT:     qnn.layer_norm
// CHECK:         nn.layer_norm
func.func @two_axes(%x: tensor<1x3x4x!x>) -> tensor<1x3x4x!y> {
  %f = qnn.dequantize %x : (tensor<1x3x4x!x>) -> tensor<1x3x4xf32>
  %gamma = nn.constant dense<"0x0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F"> : tensor<3x4xf32>
  %n = nn.layer_norm %f, %gamma {axis = 1 : i64, epsilon = 1.0e-05 : f64, qnn.rounding = "onnx"} : (tensor<1x3x4xf32>, tensor<3x4xf32>) -> tensor<1x3x4xf32>
  %q = qnn.quantize %n {rounding = "onnx"} : (tensor<1x3x4xf32>) -> tensor<1x3x4x!y>
  func.return %q : tensor<1x3x4x!y>
}

// The float result is read by another float op (a mean over tokens), not quantized at once.
// CHECK-LABEL: func.func @float_consumer
// CHECK-NOT:     qnn.layer_norm
// CHECK:         nn.layer_norm
func.func @float_consumer(%x: tensor<1x3x4x!x>) -> tensor<1x4x!y> {
  %f = qnn.dequantize %x : (tensor<1x3x4x!x>) -> tensor<1x3x4xf32>
  %gamma = nn.constant dense<"0x0000803F0000003F0000C03F00004040"> : tensor<4xf32>
  %n = nn.layer_norm %f, %gamma {axis = -1 : i64, epsilon = 1.0e-05 : f64, qnn.rounding = "onnx"} : (tensor<1x3x4xf32>, tensor<4xf32>) -> tensor<1x3x4xf32>
  %m = nn.mean %n {axes = array<i64: 1>, keep_dims = false, qnn.rounding = "onnx"} : (tensor<1x3x4xf32>) -> tensor<1x4xf32>
  %q = qnn.quantize %m {rounding = "onnx"} : (tensor<1x4xf32>) -> tensor<1x4x!y>
  func.return %q : tensor<1x4x!y>
}
