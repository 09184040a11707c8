// RUN: %qd-opt %s --split-input-file -p 'qnn-partition{target=ethos-u}' 2>&1 >/dev/null | filecheck %s

// One op kept on the host per remark kind, each with the Vela 5.2 constraint
// that failed (the remark kind in brackets): op, storage, per-axis,
// quantization, weights, bias, rounding, knob, kernel, stride, shape,
// attribute.  The last function holds what Vela 5.2 takes and the old table
// refused (stride 4 unpadded, dilation 4, batch 2, broadcasting both ways, a
// clamp that is no fused activation, asymmetric weights): no remark.

// CHECK:      remark: qnn.sqrt %r stays on host for ethos-u: ethos-u has no row for qnn.sqrt [op]
!a = !quant.uniform<i8:f32, 0.5:-3>
func.func @op(%x: tensor<4x!a>) -> tensor<4x!a> {
  %r = qnn.sqrt %x : (tensor<4x!a>) -> tensor<4x!a>
  func.return %r : tensor<4x!a>
}

// -----

// CHECK-NEXT: remark: qnn.logistic %r stays on host for ethos-u: operand 0 (input) storage i32 is not one of i8, u8, i16 [storage]
!q = !quant.uniform<i32:f32, 0.5:0>
!l = !quant.uniform<i32:f32, 0.00390625:0>
func.func @storage(%x: tensor<4x!q>) -> tensor<4x!l> {
  %r = qnn.logistic %x : (tensor<4x!q>) -> tensor<4x!l>
  func.return %r : tensor<4x!l>
}

// -----

// CHECK-NEXT: remark: qnn.requantize %r stays on host for ethos-u: operand 0 (input) is per-axis quantized (axis 1); Vela takes per-axis quantization only on conv2d, depthwise, transpose conv and fully connected [per-axis]
!p = !quant.uniform<i8:f32:1, {0.5, 0.25}>
!a = !quant.uniform<i8:f32, 0.5:-3>
func.func @per_axis(%x: tensor<1x2x!p>) -> tensor<1x2x!a> {
  %r = qnn.requantize %x : (tensor<1x2x!p>) -> tensor<1x2x!a>
  func.return %r : tensor<1x2x!a>
}

// -----

// CHECK-NEXT: remark: qnn.add %r stays on host for ethos-u: result scale 8e+09 is not below 4.29497e+09 [quantization]
!a = !quant.uniform<i8:f32, 0.5:-3>
!big = !quant.uniform<i8:f32, 8.0e9:0>
func.func @quantization(%x: tensor<4x!a>) -> tensor<4x!big> {
  %r = qnn.add %x, %x : (tensor<4x!a>, tensor<4x!a>) -> tensor<4x!big>
  func.return %r : tensor<4x!big>
}

// -----

// CHECK-NEXT: remark: qnn.conv2d %c stays on host for ethos-u: operand 1 (weights) storage i16 is not i8 or u8 [weights]
!x = !quant.uniform<i8:f32, 0.5:-3>
!w = !quant.uniform<i16:f32, 0.1>
!b = !quant.uniform<i32:f32, 0.05>
!o = !quant.uniform<i8:f32, 0.25:0>
func.func @weights(%x: tensor<1x2x2x2x!x>) -> tensor<1x2x2x2x!o> {
  %w = qnn.constant dense<"0x0100020003000400"> : tensor<2x1x1x2x!w>
  %b = qnn.constant dense<"0x0100000002000000"> : tensor<2x!b>
  %c = qnn.conv2d %x, %w, %b : (tensor<1x2x2x2x!x>, tensor<2x1x1x2x!w>, tensor<2x!b>) -> tensor<1x2x2x2x!o>
  func.return %c : tensor<1x2x2x2x!o>
}

// -----

// CHECK-NEXT: remark: qnn.conv2d %c stays on host for ethos-u: operand 2 (bias) value 35184372088832 is not smaller than 1099511627775 [bias]
!x = !quant.uniform<i8:f32, 0.5:-3>
!w = !quant.uniform<i8:f32, 0.1>
!o = !quant.uniform<i8:f32, 0.25:0>
func.func @bias(%x: tensor<1x2x2x2x!x>) -> tensor<1x2x2x2x!o> {
  %w = qnn.constant dense<"0x01020304"> : tensor<2x1x1x2x!w>
  %b = qnn.constant dense<"0x00000000002000000100000000000000"> : tensor<2xi64>
  %c = qnn.conv2d %x, %w, %b : (tensor<1x2x2x2x!x>, tensor<2x1x1x2x!w>, tensor<2xi64>) -> tensor<1x2x2x2x!o>
  func.return %c : tensor<1x2x2x2x!o>
}

// -----

// CHECK-NEXT: remark: qnn.add %r stays on host for ethos-u: rounding litert is not tflite [rounding]
!a = !quant.uniform<i8:f32, 0.5:-3>
func.func @rounding(%x: tensor<4x!a>) -> tensor<4x!a> {
  %r = qnn.add %x, %x {rounding = "litert"} : (tensor<4x!a>, tensor<4x!a>) -> tensor<4x!a>
  func.return %r : tensor<4x!a>
}

// -----

// CHECK-NEXT: remark: qnn.conv2d %c stays on host for ethos-u: bias mode 'output' (added after requantization) is not 'accumulator' [knob]
!x = !quant.uniform<i8:f32, 0.5:-3>
!w = !quant.uniform<i8:f32, 0.1>
!b = !quant.uniform<i32:f32, 0.05>
!o = !quant.uniform<i8:f32, 0.25:0>
func.func @knob(%x: tensor<1x2x2x2x!x>) -> tensor<1x2x2x2x!o> {
  %w = qnn.constant dense<"0x01020304"> : tensor<2x1x1x2x!w>
  %b = qnn.constant dense<"0x0100000002000000"> : tensor<2x!b>
  %c = qnn.conv2d %x, %w, %b {bias = "output"} : (tensor<1x2x2x2x!x>, tensor<2x1x1x2x!w>, tensor<2x!b>) -> tensor<1x2x2x2x!o>
  func.return %c : tensor<1x2x2x2x!o>
}

// -----

// CHECK-NEXT: remark: qnn.avg_pool2d %p stays on host for ethos-u: kernel 9x9 height 9 is outside [1, 8] with same padding [kernel]
!a = !quant.uniform<i8:f32, 0.5:-3>
func.func @kernel(%x: tensor<1x9x9x1x!a>) -> tensor<1x9x9x1x!a> {
  %p = qnn.avg_pool2d %x {kernel = array<i64: 9, 9>, padding = array<i64: 4, 4, 4, 4>} : (tensor<1x9x9x1x!a>) -> tensor<1x9x9x1x!a>
  func.return %p : tensor<1x9x9x1x!a>
}

// -----

// CHECK-NEXT: remark: qnn.depthwise_conv2d %c stays on host for ethos-u: stride 4x4 is outside [1, 3] [stride]
!x = !quant.uniform<i8:f32, 0.5:-3>
!w = !quant.uniform<i8:f32, 0.1>
!b = !quant.uniform<i32:f32, 0.05>
!o = !quant.uniform<i8:f32, 0.25:0>
func.func @stride(%x: tensor<1x8x8x2x!x>) -> tensor<1x2x2x2x!o> {
  %w = qnn.constant dense<"0x0102"> : tensor<1x1x1x2x!w>
  %b = qnn.constant dense<"0x0100000002000000"> : tensor<2x!b>
  %c = qnn.depthwise_conv2d %x, %w, %b {strides = array<i64: 4, 4>} : (tensor<1x8x8x2x!x>, tensor<1x1x1x2x!w>, tensor<2x!b>) -> tensor<1x2x2x2x!o>
  func.return %c : tensor<1x2x2x2x!o>
}

// -----

// CHECK-NEXT: remark: qnn.softmax %r stays on host for ethos-u: input height x width 257x256 = 65792 is above 65536 [shape]
!a = !quant.uniform<i8:f32, 0.5:-3>
!s = !quant.uniform<i8:f32, 0.00390625:-128>
func.func @shape(%x: tensor<1x257x256x2x!a>) -> tensor<1x257x256x2x!s> {
  %r = qnn.softmax %x : (tensor<1x257x256x2x!a>) -> tensor<1x257x256x2x!s>
  func.return %r : tensor<1x257x256x2x!s>
}

// -----

// CHECK-NEXT: remark: qnn.arg_max %r stays on host for ethos-u: axis 1 is not the depth axis [attribute]
!a = !quant.uniform<i8:f32, 0.5:-3>
func.func @attribute(%x: tensor<1x4x2x!a>) -> tensor<1x2xi32> {
  %r = qnn.arg_max %x {axis = 1 : i64} : (tensor<1x4x2x!a>) -> tensor<1x2xi32>
  func.return %r : tensor<1x2xi32>
}

// -----

// CHECK-NOT: remark
!x = !quant.uniform<i8:f32, 0.5:-3>
!w = !quant.uniform<i8:f32, 0.1:3>
!b = !quant.uniform<i32:f32, 0.05>
!o = !quant.uniform<i8:f32, 0.25:0>
!a = !quant.uniform<i8:f32, 0.5:-3>
func.func @accepted(%x: tensor<2x9x9x1x!x>, %y: tensor<2x1x9x1x!a>, %z: tensor<2x9x1x1x!a>) -> (tensor<2x2x2x1x!o>, tensor<2x1x1x1x!o>, tensor<2x9x9x1x!a>) {
  %w = qnn.constant dense<"0x010203040506070809"> : tensor<1x3x3x1x!w>
  %b = qnn.constant dense<"0x01000000"> : tensor<1x!b>
  %s = qnn.conv2d %x, %w, %b {strides = array<i64: 4, 4>} : (tensor<2x9x9x1x!x>, tensor<1x3x3x1x!w>, tensor<1x!b>) -> tensor<2x2x2x1x!o>
  %d = qnn.conv2d %x, %w, %b {dilations = array<i64: 4, 4>} : (tensor<2x9x9x1x!x>, tensor<1x3x3x1x!w>, tensor<1x!b>) -> tensor<2x1x1x1x!o>
  %r = qnn.add %y, %z {act_min = -100 : i64, act_max = 50 : i64} : (tensor<2x1x9x1x!a>, tensor<2x9x1x1x!a>) -> tensor<2x9x9x1x!a>
  func.return %s, %d, %r : tensor<2x2x2x1x!o>, tensor<2x1x1x1x!o>, tensor<2x9x9x1x!a>
}
