// RUN: %qd-opt %s --split-input-file --verify-diagnostics

// Verifier rules of the transformer-encoder ops, each diagnostic naming op, operand and value.

func.func @neg_zero_point(%a: tensor<4x!quant.uniform<i8:f32, 0.5:3>>) {
  // expected-error@+1 {{qnn.neg: operand and result must have zero point 0 and the same scale and storage (stored negation)}}
  %0 = qnn.neg %a : (tensor<4x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<4x!quant.uniform<i8:f32, 0.5:3>>
  func.return
}

// -----
func.func @exp_int16_zero_point(%a: tensor<4x!quant.uniform<i16:f32, 0.5:3>>) {
  // expected-error@+1 {{qnn.exp: operand 0 is 16-bit with zero point 3; TFLite needs 0}}
  %0 = qnn.exp %a : (tensor<4x!quant.uniform<i16:f32, 0.5:3>>) -> tensor<4x!quant.uniform<i16:f32, 0.5>>
  func.return
}

// -----
func.func @l2_normalization_fixed(%a: tensor<2x4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.l2_normalization: result for i8 must have scale 0.0078125 and zero point 0 (fixed by TFLite)}}
  %0 = qnn.l2_normalization %a : (tensor<2x4x!quant.uniform<i8:f32, 0.5>>) -> tensor<2x4x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @gelu_shape(%a: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.gelu: result 0 shape [3] does not match the expected [4]}}
  %0 = qnn.gelu %a : (tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<3x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @tile_multiples(%a: tensor<2x3x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.tile: multiples [2] must be one non-negative integer per dimension of [2, 3]}}
  %0 = qnn.tile %a {multiples = array<i64: 2>} : (tensor<2x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<4x3x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @tile_params(%a: tensor<2x3x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.tile: operand 0 (input) and result must have the same quantization parameters}}
  %0 = qnn.tile %a {multiples = array<i64: 2, 1>} : (tensor<2x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<4x3x!quant.uniform<i8:f32, 0.25>>
  func.return
}

// -----
func.func @mirror_pad_too_wide(%a: tensor<2x4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.mirror_pad: paddings [4, 0] of dimension 1 (size 4) must be in [0, 3] in reflect mode}}
  %0 = qnn.mirror_pad %a {paddings = array<i64: 0, 0, 4, 0>, mode = "reflect"} : (tensor<2x4x!quant.uniform<i8:f32, 0.5>>) -> tensor<2x8x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @mirror_pad_mode(%a: tensor<2x4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.mirror_pad: attribute 'mode' is 'edge', expected one of reflect, symmetric}}
  %0 = qnn.mirror_pad %a {paddings = array<i64: 0, 0, 1, 0>, mode = "edge"} : (tensor<2x4x!quant.uniform<i8:f32, 0.5>>) -> tensor<2x5x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @gather_nd_depth(%a: tensor<2x4x!quant.uniform<i8:f32, 0.5>>, %i: tensor<3x3xi32>) {
  // expected-error@+1 {{qnn.gather_nd: operand 1 (indices) shape [3, 3] must have rank >= 1 and a last dimension of at most the params rank 2}}
  %0 = qnn.gather_nd %a, %i : (tensor<2x4x!quant.uniform<i8:f32, 0.5>>, tensor<3x3xi32>) -> tensor<3x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @arg_max_result(%a: tensor<2x4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.arg_max: result type tensor<2xi16> must be an i32 or i64 tensor}}
  %0 = qnn.arg_max %a {axis = 1 : i64} : (tensor<2x4x!quant.uniform<i8:f32, 0.5>>) -> tensor<2xi16>
  func.return
}

// -----
func.func @arg_min_axis(%a: tensor<2x4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{qnn.arg_min: axis 2 is out of range for rank 2}}
  %0 = qnn.arg_min %a {axis = 2 : i64} : (tensor<2x4x!quant.uniform<i8:f32, 0.5>>) -> tensor<2xi32>
  func.return
}
