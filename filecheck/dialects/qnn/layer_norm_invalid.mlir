// RUN: %qd-opt %s --split-input-file --verify-diagnostics

// The verifier of qnn.layer_norm (a composite op whose body is the chain it was raised from).

!x = !quant.uniform<i8:f32, 0.5:-3>
!y = !quant.uniform<i8:f32, 0.25:1>
func.func @axis_out_of_range(%x: tensor<2x4x!x>) {
  // expected-error@+1 {{qnn.layer_norm: axis 2 is outside [0, 2) for a rank-2 input}}
  %y = qnn.layer_norm %x {axis = 2 : i64, epsilon = 1.0e-03 : f64, spelling = "tflite_hand"} : (tensor<2x4x!x>) -> tensor<2x4x!y> {
  ^bb0(%a: tensor<2x4x!x>):
    %r = qnn.requantize %a : (tensor<2x4x!x>) -> tensor<2x4x!y>
    qnn.yield %r : tensor<2x4x!y>
  }
  func.return
}

// -----
!x = !quant.uniform<i8:f32, 0.5:-3>
!y = !quant.uniform<i8:f32, 0.25:1>
func.func @unknown_spelling(%x: tensor<2x4x!x>) {
  // expected-error@+1 {{qnn.layer_norm: spelling 'pytorch' is not one of tflite, tflite_hand, onnx, onnx_hand}}
  %y = qnn.layer_norm %x {axis = 1 : i64, epsilon = 1.0e-03 : f64, spelling = "pytorch"} : (tensor<2x4x!x>) -> tensor<2x4x!y> {
  ^bb0(%a: tensor<2x4x!x>):
    %r = qnn.requantize %a : (tensor<2x4x!x>) -> tensor<2x4x!y>
    qnn.yield %r : tensor<2x4x!y>
  }
  func.return
}

// -----
!x = !quant.uniform<i8:f32, 0.5:-3>
func.func @float_result(%x: tensor<2x4x!x>) {
  // expected-error@+1 {{qnn.layer_norm: result type tensor<2x4xf32> is not a quantized tensor}}
  %y = qnn.layer_norm %x {axis = 1 : i64, epsilon = 1.0e-03 : f64, spelling = "onnx"} : (tensor<2x4x!x>) -> tensor<2x4xf32> {
  ^bb0(%a: tensor<2x4x!x>):
    %r = qnn.dequantize %a : (tensor<2x4x!x>) -> tensor<2x4xf32>
    qnn.yield %r : tensor<2x4xf32>
  }
  func.return
}

// -----
!x = !quant.uniform<i8:f32, 0.5:-3>
!y = !quant.uniform<i8:f32, 0.25:1>
func.func @body_yields_another_type(%x: tensor<2x4x!x>) {
  // expected-error@+1 {{qnn.layer_norm: the body yields tensor<2x4x!quant.uniform<i8:f32, 5.000000e-01:-3>>, the result is tensor<2x4x!quant.uniform<i8:f32, 2.500000e-01:1>>}}
  %y = qnn.layer_norm %x {axis = 1 : i64, epsilon = 1.0e-03 : f64, spelling = "tflite_hand"} : (tensor<2x4x!x>) -> tensor<2x4x!y> {
  ^bb0(%a: tensor<2x4x!x>):
    qnn.yield %a : tensor<2x4x!x>
  }
  func.return
}

// -----
!x = !quant.uniform<i8:f32, 0.5:-3>
!y = !quant.uniform<i8:f32, 0.25:1>
func.func @body_reads_outside(%x: tensor<2x4x!x>) {
  // expected-error@+1 {{qnn.layer_norm: Operation using value defined out of its IsolatedFromAbove parent}}
  %y = qnn.layer_norm %x {axis = 1 : i64, epsilon = 1.0e-03 : f64, spelling = "tflite_hand"} : (tensor<2x4x!x>) -> tensor<2x4x!y> {
  ^bb0(%a: tensor<2x4x!x>):
    %r = qnn.requantize %x : (tensor<2x4x!x>) -> tensor<2x4x!y>
    qnn.yield %r : tensor<2x4x!y>
  }
  func.return
}
