// RUN: %qd-opt %s --split-input-file --verify-diagnostics

// Each verifier rule of the nn dialect, with the diagnostic naming op, operand and value.

func.func @mixed_floats(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error@+1 {{nn.add: operand 1 (rhs) element type f16 differs from the result's f32}}
  %0 = nn.add %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  func.return
}

// -----
func.func @logistic_on_integers(%a: tensor<4xi8>) {
  // expected-error@+1 {{nn.logistic: result element type i8 must be a float type}}
  %0 = nn.logistic %a : (tensor<4xi8>) -> tensor<4xi8>
  func.return
}

// -----
func.func @clamp_on_quantized(%a: tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{nn.max_pool2d: act_min / act_max (a real clamp) need a float result}}
  %0 = nn.max_pool2d %a {kernel = array<i64: 1, 1>, act_min = 0.0 : f64} : (tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @conv_channels(%x: tensor<1x4x4x3xf32>, %w: tensor<2x1x1x2xf32>) {
  // expected-error@+1 {{nn.conv2d: operand 1 (weights) has 2 input channels but the input has 3}}
  %0 = nn.conv2d %x, %w : (tensor<1x4x4x3xf32>, tensor<2x1x1x2xf32>) -> tensor<1x4x4x2xf32>
  func.return
}

// -----
func.func @conv_bias(%x: tensor<1x4x4x3xf32>, %w: tensor<2x1x1x3xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{nn.conv2d: operand 2 (bias) shape [3] must be [2]}}
  %0 = nn.conv2d %x, %w, %b : (tensor<1x4x4x3xf32>, tensor<2x1x1x3xf32>, tensor<3xf32>) -> tensor<1x4x4x2xf32>
  func.return
}

// -----
func.func @pool_shape(%x: tensor<1x4x4x3xf32>) {
  // expected-error@+1 {{nn.avg_pool2d: result shape [1, 2, 2, 3] does not match the expected [1, 3, 3, 3]}}
  %0 = nn.avg_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<1x4x4x3xf32>) -> tensor<1x2x2x3xf32>
  func.return
}

// -----
func.func @avg_pool_quantized(%x: tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{nn.avg_pool2d: result element type !quant.uniform<i8:f32, 5.000000e-01> must be a float or integer type}}
  %0 = nn.avg_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x1x1x1x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @max_params(%a: tensor<4x!quant.uniform<i8:f32, 0.5>>, %b: tensor<4x!quant.uniform<i8:f32, 0.25>>) {
  // expected-error@+1 {{nn.maximum: operand 1 (rhs) element type !quant.uniform<i8:f32, 2.500000e-01> differs from the result's !quant.uniform<i8:f32, 5.000000e-01>}}
  %0 = nn.maximum %a, %b : (tensor<4x!quant.uniform<i8:f32, 0.5>>, tensor<4x!quant.uniform<i8:f32, 0.25>>) -> tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @cast_to_float(%a: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{nn.cast: cannot cast !quant.uniform<i8:f32, 5.000000e-01> to f32: quantized values convert to and from integers (use quant.dcast / quant.qcast for floats)}}
  %0 = nn.cast %a : (tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<4xf32>
  func.return
}

// -----
func.func @clip_bounds(%a: tensor<4xf32>) {
  // expected-error@+1 {{nn.clip: min 2.0 is greater than max 1.0}}
  %0 = nn.clip %a {min = 2.0 : f64, max = 1.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----
func.func @leaky_alpha(%a: tensor<4xf32>) {
  // expected-error@+1 {{nn.leaky_relu: missing attribute 'alpha'}}
  %0 = nn.leaky_relu %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----
func.func @perm(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{nn.transpose: perm [0, 0] is not a permutation of 2 dims}}
  %0 = nn.transpose %a {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return
}

// -----
func.func @short_constant() {
  // expected-error@+1 {{nn.constant: 4 bytes of data but tensor<2xf32> needs 8}}
  %0 = nn.constant dense<"0x0000803F"> : tensor<2xf32>
  func.return
}

// -----
func.func @pad_pairs(%a: tensor<4xf32>) {
  // expected-error@+1 {{nn.pad: paddings [1] must be 2 non-negative ints per dim of [4]}}
  %0 = nn.pad %a {paddings = array<i64: 1>} : (tensor<4xf32>) -> tensor<5xf32>
  func.return
}
