// RUN: %qd-opt %s --split-input-file --verify-diagnostics

// Verifier rules of qnn.simulated_quantize.

func.func @no_qtype(%x: tensor<4xf32>) {
  // expected-error@+1 {{qnn.simulated_quantize: attribute 'qtype' must be a !quant.uniform type, got None}}
  %0 = qnn.simulated_quantize %x {rounding = "tflite"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----
func.func @integer_operand(%x: tensor<4xi8>) {
  // expected-error@+1 {{qnn.simulated_quantize: operand type tensor<4xi8> must be a float tensor}}
  %0 = qnn.simulated_quantize %x {qtype = !quant.uniform<i8:f32, 0.5>} : (tensor<4xi8>) -> tensor<4xi8>
  func.return
}

// -----
func.func @result_type(%x: tensor<4xf32>) {
  // expected-error@+1 {{qnn.simulated_quantize: result type tensor<4xf16> differs from the operand type tensor<4xf32>}}
  %0 = qnn.simulated_quantize %x {qtype = !quant.uniform<i8:f32, 0.5>} : (tensor<4xf32>) -> tensor<4xf16>
  func.return
}

// -----
func.func @mode(%x: tensor<4xf32>) {
  // expected-error@+1 {{qnn.simulated_quantize: attribute 'mode' is 'record', expected one of quantize, passthrough}}
  %0 = qnn.simulated_quantize %x {qtype = !quant.uniform<i8:f32, 0.5>, mode = "record"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----
func.func @overflow_without_acc(%x: tensor<4xf32>) {
  // expected-error@+1 {{qnn.simulated_quantize: acc_overflow needs acc}}
  %0 = qnn.simulated_quantize %x {qtype = !quant.uniform<i8:f32, 0.5>, acc_overflow = "wrap"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----
func.func @per_axis_size(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{qnn.simulated_quantize: qtype has 3 scales on axis 0, operand shape is [2, 3]}}
  %0 = qnn.simulated_quantize %x {qtype = !quant.uniform<i8:f32:0, {0.1, 0.2, 0.3}>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
