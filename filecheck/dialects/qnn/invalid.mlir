// RUN: %qd-opt %s --split-input-file --verify-diagnostics

// Each verifier rule of the qnn dialect, with the diagnostic naming op, operand and value.

!a = !quant.uniform<i8:f32, 0.5:-3>
!o = !quant.uniform<i8:f32, 0.25:5>

func.func @logistic_fixed(%a: tensor<4x!a>) {
  // expected-error@+1 {{qnn.logistic: result for i8 must have scale 0.00390625 and zero point -128 (fixed by TFLite), got !quant.uniform<i8:f32, 2.500000e-01:5>}}
  %0 = qnn.logistic %a : (tensor<4x!a>) -> tensor<4x!o>
  func.return
}

// -----
!a = !quant.uniform<i8:f32, 0.5:-3>
func.func @tanh_fixed(%a: tensor<4x!a>) {
  // expected-error@+1 {{qnn.tanh: result for i8 must have scale 0.0078125 and zero point 0 (fixed by TFLite), got !quant.uniform<i8:f32, 7.812500e-03:1>}}
  %0 = qnn.tanh %a : (tensor<4x!a>) -> tensor<4x!quant.uniform<i8:f32, 0.0078125:1>>
  func.return
}

// -----
!a = !quant.uniform<i8:f32, 0.5:-3>
func.func @softmax_fixed(%a: tensor<4x!a>) {
  // expected-error@+1 {{qnn.softmax: result for i8 must have scale 0.00390625 and zero point -128}}
  %0 = qnn.softmax %a : (tensor<4x!a>) -> tensor<4x!quant.uniform<i8:f32, 0.00390625>>
  func.return
}

// -----
!a = !quant.uniform<i8:f32, 0.5:-3>
func.func @log_softmax_fixed(%a: tensor<4x!a>) {
  // expected-error@+1 {{qnn.log_softmax: result for i8 must have scale 0.0625 and zero point 127}}
  %0 = qnn.log_softmax %a : (tensor<4x!a>) -> tensor<4x!quant.uniform<i8:f32, 0.0625>>
  func.return
}

// -----
func.func @not_quantized(%a: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, %b: tensor<4xf32>) {
  // expected-error@+1 {{qnn.add: operand 1 (rhs) type tensor<4xf32> is not quantized}}
  %0 = qnn.add %a, %b : (tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
  func.return
}

// -----
func.func @broadcast(%a: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, %b: tensor<3x!quant.uniform<i8:f32, 0.5:-3>>) {
  // expected-error@+1 {{qnn.add: operand shapes [4] and [3] do not broadcast}}
  %0 = qnn.add %a, %b : (tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, tensor<3x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
  func.return
}

// -----
func.func @bad_rounding(%a: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) {
  // expected-error@+1 {{qnn.add: attribute 'rounding' is 'nearest', expected one of tflite, single, half_even, half_up, litert}}
  %0 = qnn.add %a, %a {rounding = "nearest"} : (tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
  func.return
}

// -----
func.func @bad_clamp(%a: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) {
  // expected-error@+1 {{qnn.add: clamp bounds [-200, 127] are not inside the result storage range [-128, 127] or are empty}}
  %0 = qnn.add %a, %a {act_min = -200 : i64} : (tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
  func.return
}

// -----
func.func @same_params(%a: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, %b: tensor<4x!quant.uniform<i8:f32, 0.25:-3>>) {
  // expected-error@+1 {{qnn.maximum: operand 1 (rhs) and result must have the same quantization parameters, got !quant.uniform<i8:f32, 2.500000e-01:-3> and !quant.uniform<i8:f32, 5.000000e-01:-3>}}
  %0 = qnn.maximum %a, %b : (tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, tensor<4x!quant.uniform<i8:f32, 0.25:-3>>) -> tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
  func.return
}

// -----
func.func @pool_params(%x: tensor<1x4x4x1x!quant.uniform<i8:f32, 0.5:-3>>) {
  // expected-error@+1 {{qnn.max_pool2d: operand 0 (input) and result must have the same quantization parameters}}
  %0 = qnn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x1x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5:-2>>
  func.return
}

// -----
func.func @pool_shape(%x: tensor<1x4x4x1x!quant.uniform<i8:f32, 0.5:-3>>) {
  // expected-error@+1 {{qnn.avg_pool2d: result 0 shape [1, 3, 3, 1] does not match the expected [1, 2, 2, 1]}}
  %0 = qnn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x1x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<1x3x3x1x!quant.uniform<i8:f32, 0.5:-3>>
  func.return
}

// -----
func.func @pool_kernel(%x: tensor<1x4x4x1x!quant.uniform<i8:f32, 0.5:-3>>) {
  // expected-error@+1 {{qnn.avg_pool2d: missing attribute 'kernel'}}
  %0 = qnn.avg_pool2d %x : (tensor<1x4x4x1x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<1x4x4x1x!quant.uniform<i8:f32, 0.5:-3>>
  func.return
}

// -----
func.func @bias_scale(%x: tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5:-3>>) {
  %w = qnn.constant dense<"0x0102"> : tensor<2x1x1x1x!quant.uniform<i8:f32:0, {0.1, 0.1}>>
  %b = qnn.constant dense<"0x0100000002000000"> : tensor<2x!quant.uniform<i32:f32:0, {0.05, 0.1}>>
  // expected-error@+1 {{qnn.conv2d: operand 2 (bias) scale 0.1 at channel 1 is not input scale * weight scale = 0.05}}
  %0 = qnn.conv2d %x, %w, %b : (tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2x1x1x1x!quant.uniform<i8:f32:0, {0.1, 0.1}>>, tensor<2x!quant.uniform<i32:f32:0, {0.05, 0.1}>>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.25:5>>
  func.return
}

// -----
func.func @bias_type(%x: tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5:-3>>, %b: tensor<2xi8>) {
  %w = qnn.constant dense<"0x0102"> : tensor<2x1x1x1x!quant.uniform<i8:f32:0, {0.1, 0.1}>>
  // expected-error@+1 {{qnn.conv2d: operand 2 (bias) element type i8 must be i32 or i64}}
  %0 = qnn.conv2d %x, %w, %b : (tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2x1x1x1x!quant.uniform<i8:f32:0, {0.1, 0.1}>>, tensor<2xi8>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.25:5>>
  func.return
}

// -----
func.func @conv_channels(%x: tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5:-3>>, %b: tensor<2xi32>) {
  %w = qnn.constant dense<"0x010203040506"> : tensor<2x1x1x3x!quant.uniform<i8:f32, 0.1>>
  // expected-error@+1 {{qnn.conv2d: operand 1 (weights) has 3 input channels but the input has 1}}
  %0 = qnn.conv2d %x, %w, %b : (tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2x1x1x3x!quant.uniform<i8:f32, 0.1>>, tensor<2xi32>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.25:5>>
  func.return
}

// -----
func.func @conv_axis(%x: tensor<1x2x2x2x!quant.uniform<i8:f32, 0.5:-3>>, %b: tensor<2xi32>) {
  %w = qnn.constant dense<"0x0102030405060708"> : tensor<2x1x2x2x!quant.uniform<i8:f32:3, {0.1, 0.2}>>
  // expected-error@+1 {{qnn.conv2d: operand 1 (weights) must be quantized along axis 0, got axis 3}}
  %0 = qnn.conv2d %x, %w, %b : (tensor<1x2x2x2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2x1x2x2x!quant.uniform<i8:f32:3, {0.1, 0.2}>>, tensor<2xi32>) -> tensor<1x2x1x2x!quant.uniform<i8:f32, 0.25:5>>
  func.return
}

// -----
func.func @conv_shape(%x: tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5:-3>>, %b: tensor<2xi32>) {
  %w = qnn.constant dense<"0x0102030405060708"> : tensor<2x2x2x1x!quant.uniform<i8:f32, 0.1>>
  // expected-error@+1 {{qnn.conv2d: result 0 shape [1, 2, 2, 2] does not match the expected [1, 1, 1, 2]}}
  %0 = qnn.conv2d %x, %w, %b : (tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2x2x2x1x!quant.uniform<i8:f32, 0.1>>, tensor<2xi32>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.25:5>>
  func.return
}

// -----
func.func @acc_width(%x: tensor<1x1x1x1x!quant.uniform<i8:f32, 0.5:-3>>, %b: tensor<1xi32>) {
  %w = qnn.constant dense<"0x01"> : tensor<1x1x1x1x!quant.uniform<i8:f32, 0.1>>
  // expected-error@+1 {{qnn.conv2d: attribute 'acc' is 'i8', expected one of i32, i16, i64}}
  %0 = qnn.conv2d %x, %w, %b {acc = "i8"} : (tensor<1x1x1x1x!quant.uniform<i8:f32, 0.5:-3>>, tensor<1x1x1x1x!quant.uniform<i8:f32, 0.1>>, tensor<1xi32>) -> tensor<1x1x1x1x!quant.uniform<i8:f32, 0.25:5>>
  func.return
}

// -----
func.func @bias_mode(%x: tensor<1x1x1x1x!quant.uniform<i8:f32, 0.5:-3>>, %b: tensor<1xi32>) {
  %w = qnn.constant dense<"0x01"> : tensor<1x1x1x1x!quant.uniform<i8:f32, 0.1>>
  // expected-error@+1 {{qnn.conv2d: attribute 'bias' is 'before', expected one of accumulator, output}}
  %0 = qnn.conv2d %x, %w, %b {bias = "before"} : (tensor<1x1x1x1x!quant.uniform<i8:f32, 0.5:-3>>, tensor<1x1x1x1x!quant.uniform<i8:f32, 0.1>>, tensor<1xi32>) -> tensor<1x1x1x1x!quant.uniform<i8:f32, 0.25:5>>
  func.return
}

// -----
func.func @constant_range() {
  // expected-error@+1 {{qnn.constant: stored value -128 is outside i8 [-127, 127]}}
  %w = qnn.constant dense<"0x80"> : tensor<1x!quant.uniform<i8<-127:127>:f32, 0.1>>
  func.return
}

// -----
func.func @constant_size() {
  // expected-error@+1 {{qnn.constant: 2 bytes of data but tensor<4x!quant.uniform<i8:f32, 1.000000e-01>> needs 4}}
  %w = qnn.constant dense<"0x0102"> : tensor<4x!quant.uniform<i8:f32, 0.1>>
  func.return
}

// -----
func.func @reshape_count(%a: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) {
  // expected-error@+1 {{qnn.reshape: result shape [3] has a different element count than [4]}}
  %0 = qnn.reshape %a : (tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<3x!quant.uniform<i8:f32, 0.5:-3>>
  func.return
}

// -----
func.func @perm(%a: tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>) {
  // expected-error@+1 {{qnn.transpose: perm [0, 0] is not a permutation of 2 dims}}
  %0 = qnn.transpose %a {perm = array<i64: 0, 0>} : (tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<2x2x!quant.uniform<i8:f32, 0.5:-3>>
  func.return
}

// -----
func.func @concat(%a: tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>, %b: tensor<2x4x!quant.uniform<i8:f32, 0.5:-3>>) {
  // expected-error@+1 {{qnn.concatenation: operand 1 shape [2, 4] does not match [2, 3] off axis 0}}
  %0 = qnn.concatenation %a, %b {axis = 0 : i64} : (tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2x4x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<4x3x!quant.uniform<i8:f32, 0.5:-3>>
  func.return
}

// -----
func.func @mean_axis(%a: tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>) {
  // expected-error@+1 {{qnn.mean: axis 4 is out of range for rank 2}}
  %0 = qnn.mean %a {axes = array<i64: 4>} : (tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<2x!quant.uniform<i8:f32, 0.5:-3>>
  func.return
}

// -----
func.func @alpha(%a: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) {
  // expected-error@+1 {{qnn.leaky_relu: missing attribute 'alpha'}}
  %0 = qnn.leaky_relu %a : (tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
  func.return
}

// -----
func.func @unknown_attr(%a: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) {
  // expected-error@+1 {{qnn.add: unknown attribute 'strides'}}
  %0 = qnn.add %a, %a {strides = array<i64: 1>} : (tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
  func.return
}

// -----
func.func @per_axis_activation(%a: tensor<4x!quant.uniform<i8:f32:0, {0.5, 0.5, 0.5, 0.5}>>, %b: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.add: operand 0 (lhs) must be per-tensor quantized, got !quant.uniform<i8:f32:0, {5.000000e-01,5.000000e-01,5.000000e-01,5.000000e-01}>}}
  %0 = qnn.add %a, %b : (tensor<4x!quant.uniform<i8:f32:0, {0.5, 0.5, 0.5, 0.5}>>, tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @depthwise_shape(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>, %b: tensor<4xi32>, %w: tensor<2x3x3x4x!quant.uniform<i8:f32, 0.1>>) {
  // expected-error@+1 {{qnn.depthwise_conv2d: operand 1 (weights) shape [2, 3, 3, 4] must be [1, KH, KW, C*multiplier] with C=2}}
  %0 = qnn.depthwise_conv2d %x, %w, %b : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>, tensor<2x3x3x4x!quant.uniform<i8:f32, 0.1>>, tensor<4xi32>) -> tensor<1x2x2x4x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @transpose_conv_shape(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>, %b: tensor<2xi32>, %w: tensor<2x2x2x2x!quant.uniform<i8:f32, 0.1>>) {
  // expected-error@+1 {{qnn.transpose_conv2d: result 0 shape [1, 4, 4, 2] does not match the expected [1, 8, 8, 2]}}
  %0 = qnn.transpose_conv2d %x, %w, %b {strides = array<i64: 2, 2>} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>, tensor<2x2x2x2x!quant.uniform<i8:f32, 0.1>>, tensor<2xi32>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @fc_features(%x: tensor<1x7x!quant.uniform<i8:f32, 0.5>>, %b: tensor<2xi32>, %w: tensor<2x4x!quant.uniform<i8:f32, 0.1>>) {
  // expected-error@+1 {{qnn.fully_connected: operand 0 (input) shape [1, 7] is not a multiple of 4 input features}}
  %0 = qnn.fully_connected %x, %w, %b : (tensor<1x7x!quant.uniform<i8:f32, 0.5>>, tensor<2x4x!quant.uniform<i8:f32, 0.1>>, tensor<2xi32>) -> tensor<1x2x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @fc_bias(%x: tensor<1x4x!quant.uniform<i8:f32, 0.5>>, %b: tensor<3xi32>, %w: tensor<2x4x!quant.uniform<i8:f32, 0.1>>) {
  // expected-error@+1 {{qnn.fully_connected: operand 2 (bias) shape [3] must be [2]}}
  %0 = qnn.fully_connected %x, %w, %b : (tensor<1x4x!quant.uniform<i8:f32, 0.5>>, tensor<2x4x!quant.uniform<i8:f32, 0.1>>, tensor<3xi32>) -> tensor<1x2x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @matmul_k(%a: tensor<2x3x!quant.uniform<i8:f32, 0.5>>, %b: tensor<4x5x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.batch_matmul: contracting sizes differ: 3 and 4}}
  %0 = qnn.batch_matmul %a, %b : (tensor<2x3x!quant.uniform<i8:f32, 0.5>>, tensor<4x5x!quant.uniform<i8:f32, 0.5>>) -> tensor<2x5x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @sqdiff_shape(%a: tensor<2x4x!quant.uniform<i8:f32, 0.5>>, %b: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.squared_difference: result 0 shape [4] does not match the expected [2, 4]}}
  %0 = qnn.squared_difference %a, %b : (tensor<2x4x!quant.uniform<i8:f32, 0.5>>, tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @prelu_alpha(%a: tensor<4x!quant.uniform<i8:f32, 0.5>>, %alpha: tensor<4xf32>) {
  // expected-error@+1 {{qnn.prelu: operand 1 (alpha) type tensor<4xf32> is not quantized}}
  %0 = qnn.prelu %a, %alpha : (tensor<4x!quant.uniform<i8:f32, 0.5>>, tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @requantize_shape(%a: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.requantize: result 0 shape [5] does not match the expected [4]}}
  %0 = qnn.requantize %a : (tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<5x!quant.uniform<i8:f32, 0.25>>
  func.return
}

// -----
func.func @clamp_empty(%a: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.clamp: clamp bounds [10, 5] are not inside the result storage range [-128, 127] or are empty}}
  %0 = qnn.clamp %a {act_min = 10 : i64, act_max = 5 : i64} : (tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @hard_swish_result(%a: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.hard_swish: result 0 type tensor<4xi8> is not quantized}}
  %0 = qnn.hard_swish %a : (tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<4xi8>
  func.return
}

// -----
func.func @elu_per_axis(%a: tensor<2x!quant.uniform<i8:f32:0, {0.5, 0.25}>>) {
  // expected-error@+1 {{qnn.elu: operand 0 (input) must be per-tensor quantized}}
  %0 = qnn.elu %a : (tensor<2x!quant.uniform<i8:f32:0, {0.5, 0.25}>>) -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @sum_shape(%a: tensor<2x3x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.sum: result 0 shape [2, 3] does not match the expected [2]}}
  %0 = qnn.sum %a {axes = array<i64: 1>} : (tensor<2x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<2x3x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @reduce_max_params(%a: tensor<2x3x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.reduce_max: operand 0 (input) and result must have the same quantization parameters}}
  %0 = qnn.reduce_max %a {axes = array<i64: 1>} : (tensor<2x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<2x!quant.uniform<i8:f32, 0.25>>
  func.return
}

// -----
func.func @reduce_min_axes(%a: tensor<2x3x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.reduce_min: missing attribute 'axes'}}
  %0 = qnn.reduce_min %a : (tensor<2x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @pad_count(%a: tensor<2x3x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.pad: paddings [1, 1] must be 2 non-negative ints per dim of [2, 3]}}
  %0 = qnn.pad %a {paddings = array<i64: 1, 1>} : (tensor<2x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<4x3x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @pad_value(%a: tensor<2x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.pad: pad_value 300 is outside [-128, 127]}}
  %0 = qnn.pad %a {paddings = array<i64: 1, 1>, pad_value = 300 : i64} : (tensor<2x!quant.uniform<i8:f32, 0.5>>) -> tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @slice_shape(%a: tensor<6x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.slice: result shape [2] does not match the slice shape [3]}}
  %0 = qnn.slice %a {begin = array<i64: 0>, end = array<i64: 6>, strides = array<i64: 2>} : (tensor<6x!quant.uniform<i8:f32, 0.5>>) -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @split_sizes(%a: tensor<6x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.split: result sizes on axis 0 add to 5, not 6}}
  %0:2 = qnn.split %a {axis = 0 : i64} : (tensor<6x!quant.uniform<i8:f32, 0.5>>) -> (tensor<2x!quant.uniform<i8:f32, 0.5>>, tensor<3x!quant.uniform<i8:f32, 0.5>>)
  func.return
}

// -----
func.func @gather_indices(%a: tensor<6x!quant.uniform<i8:f32, 0.5>>, %i: tensor<3xf32>) {
  // expected-error@+1 {{qnn.gather: operand 1 (indices) type tensor<3xf32> must be an integer tensor}}
  %0 = qnn.gather %a, %i : (tensor<6x!quant.uniform<i8:f32, 0.5>>, tensor<3xf32>) -> tensor<3x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @gather_batch_dims_past_axis(%a: tensor<2x5x3x!quant.uniform<i8:f32, 0.5>>, %i: tensor<2x4xi32>) {
  // expected-error@+1 {{qnn.gather: batch_dims 2 must be in [0, 1] (at most axis 1 and the indices rank 2)}}
  %0 = qnn.gather %a, %i {axis = 1 : i64, batch_dims = 2 : i64} : (tensor<2x5x3x!quant.uniform<i8:f32, 0.5>>, tensor<2x4xi32>) -> tensor<2x3x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @gather_batch_dims_mismatch(%a: tensor<2x5x3x!quant.uniform<i8:f32, 0.5>>, %i: tensor<3x4xi32>) {
  // expected-error@+1 {{qnn.gather: batch_dims 1: params batch dims [2] differ from indices batch dims [3]}}
  %0 = qnn.gather %a, %i {axis = 1 : i64, batch_dims = 1 : i64} : (tensor<2x5x3x!quant.uniform<i8:f32, 0.5>>, tensor<3x4xi32>) -> tensor<2x4x3x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @gather_batch_dims_shape(%a: tensor<2x5x3x!quant.uniform<i8:f32, 0.5>>, %i: tensor<2x4xi32>) {
  // expected-error@+1 {{qnn.gather: result 0 shape [2, 2, 4, 3] does not match the expected [2, 4, 3]}}
  %0 = qnn.gather %a, %i {axis = 1 : i64, batch_dims = 1 : i64} : (tensor<2x5x3x!quant.uniform<i8:f32, 0.5>>, tensor<2x4xi32>) -> tensor<2x2x4x3x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @resize_channels(%a: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.resize_bilinear: result shape [1, 8, 8, 3] must be [1, H, W, 2]}}
  %0 = qnn.resize_bilinear %a : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x8x8x3x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @resize_params(%a: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.resize_nearest_neighbor: operand 0 (input) and result must have the same quantization parameters}}
  %0 = qnn.resize_nearest_neighbor %a : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x8x8x2x!quant.uniform<i8:f32, 0.25>>
  func.return
}

// -----
func.func @space_to_depth_block(%a: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.space_to_depth: block_size 3 does not divide H=4, W=4}}
  %0 = qnn.space_to_depth %a {block_size = 3 : i64} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x1x1x18x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @depth_to_space_block(%a: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.depth_to_space: block_size 2: 4 does not divide C=2}}
  %0 = qnn.depth_to_space %a {block_size = 2 : i64} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x8x8x1x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @quantize_shape(%a: tensor<4xf32>) {
  // expected-error@+1 {{qnn.quantize: result 0 shape [3] does not match the expected [4]}}
  %0 = qnn.quantize %a : (tensor<4xf32>) -> tensor<3x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @dequantize_operand(%a: tensor<4xf32>) {
  // expected-error@+1 {{qnn.dequantize: operand type tensor<4xf32> is not quantized}}
  %0 = qnn.dequantize %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}
