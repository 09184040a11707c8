// RUN: %qd-opt %s | %qd-opt | filecheck %s
// RUN: %qd-opt %s --print-op-generic | %qd-opt | filecheck %s

// One use of every nn op; each prints back unchanged.

!q = !quant.uniform<i8:f32, 0.05:-3>

// CHECK-LABEL: func.func @float_ops
func.func @float_ops(%x: tensor<1x4x4x3xf32>, %v: tensor<2x8xf32>) {
  // CHECK: %w = nn.constant dense<"0x0000803F000000BF0000803E0000803F000000BF0000803E"> : tensor<2x1x1x3xf32>
  %w = nn.constant dense<"0x0000803F000000BF0000803E0000803F000000BF0000803E"> : tensor<2x1x1x3xf32>
  %b = nn.constant dense<"0x0000803F000000BF"> : tensor<2xf32>
  // CHECK: nn.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, act_min = 0.000000e+00 : f64, act_max = 6.000000e+00 : f64, qnn.rounding = "half_even"} : (tensor<1x4x4x3xf32>, tensor<2x1x1x3xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %c = nn.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, act_min = 0.0 : f64, act_max = 6.0 : f64, qnn.rounding = "half_even"} : (tensor<1x4x4x3xf32>, tensor<2x1x1x3xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %dw = nn.constant dense<"0x0000803F000000BF0000803E0000803F000000BF0000803E"> : tensor<1x1x1x6xf32>
  // CHECK: nn.depthwise_conv2d %x, %dw : (tensor<1x4x4x3xf32>, tensor<1x1x1x6xf32>) -> tensor<1x4x4x6xf32>
  %d = nn.depthwise_conv2d %x, %dw : (tensor<1x4x4x3xf32>, tensor<1x1x1x6xf32>) -> tensor<1x4x4x6xf32>
  %fw = nn.constant dense<"0x0000803F000000BF0000803E0000803F000000BF0000803E0000803F000000BF0000803E0000803F000000BF0000803E0000803F000000BF0000803E0000803F"> : tensor<2x8xf32>
  // CHECK: nn.fully_connected %v, %fw, %b {qnn.bias = "output"} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %f = nn.fully_connected %v, %fw, %b {qnn.bias = "output"} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  // CHECK: nn.batch_matmul %v, %v {adj_y = true} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x2xf32>
  %m = nn.batch_matmul %v, %v {adj_y = true} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x2xf32>
  // CHECK: nn.add %v, %v : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %e0 = nn.add %v, %v : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %e1 = nn.sub %v, %v : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %e2 = nn.mul %v, %v : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %e3 = nn.squared_difference %v, %v : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %e4 = nn.maximum %v, %v : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %e5 = nn.minimum %v, %v : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %u0 = nn.relu %v : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: nn.clip %v {min = -1.000000e+00 : f64, max = 1.000000e+00 : f64}
  %u1 = nn.clip %v {min = -1.0 : f64, max = 1.0 : f64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %u2 = nn.logistic %v : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %u3 = nn.tanh %v : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %u4 = nn.softmax %v {beta = 1.0 : f64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %u5 = nn.log_softmax %v : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %u6 = nn.hard_swish %v : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: nn.leaky_relu %v {alpha = 2.000000e-01 : f64}
  %u7 = nn.leaky_relu %v {alpha = 0.2 : f64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %u8 = nn.elu %v : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: nn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x3xf32>) -> tensor<1x2x2x3xf32>
  %p0 = nn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x3xf32>) -> tensor<1x2x2x3xf32>
  %p1 = nn.max_pool2d %x {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32>
  // CHECK: nn.mean %x {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<1x4x4x3xf32>) -> tensor<1x1x1x3xf32>
  %r0 = nn.mean %x {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<1x4x4x3xf32>) -> tensor<1x1x1x3xf32>
  %r1 = nn.sum %x {axes = array<i64: 3>} : (tensor<1x4x4x3xf32>) -> tensor<1x4x4xf32>
  %r2 = nn.reduce_max %x {axes = array<i64: -1>} : (tensor<1x4x4x3xf32>) -> tensor<1x4x4xf32>
  %r3 = nn.reduce_min %x {axes = array<i64: 0>} : (tensor<1x4x4x3xf32>) -> tensor<4x4x3xf32>
  // CHECK: nn.concatenation %v, %v {axis = 0 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  %k = nn.concatenation %v, %v {axis = 0 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.pad %v {paddings = array<i64: 0, 1, 2, 0>, pad_value = 5.000000e-01 : f64} : (tensor<2x8xf32>) -> tensor<3x10xf32>
  %pd = nn.pad %v {paddings = array<i64: 0, 1, 2, 0>, pad_value = 0.5 : f64} : (tensor<2x8xf32>) -> tensor<3x10xf32>
  %rs = nn.reshape %v : (tensor<2x8xf32>) -> tensor<16xf32>
  %tr = nn.transpose %v {perm = array<i64: 1, 0>} : (tensor<2x8xf32>) -> tensor<8x2xf32>
  // CHECK: nn.slice %v {begin = array<i64: 1, 7>, end = array<i64: 2, -1>, strides = array<i64: 1, -2>} : (tensor<2x8xf32>) -> tensor<4xf32>
  %sl = nn.slice %v {begin = array<i64: 1, 7>, end = array<i64: 2, -1>, strides = array<i64: 1, -2>} : (tensor<2x8xf32>) -> tensor<4xf32>
  func.return
}

// CHECK-LABEL: func.func @integer_and_quantized
func.func @integer_and_quantized(%q: tensor<1x4x4x3x!q>) {
  // CHECK: nn.cast %q : (tensor<1x4x4x3x!quant.uniform<i8:f32, 5.000000e-02:-3>>) -> tensor<1x4x4x3xi32>
  %i = nn.cast %q : (tensor<1x4x4x3x!q>) -> tensor<1x4x4x3xi32>
  %a = nn.avg_pool2d %i {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x3xi32>) -> tensor<1x2x2x3xi32>
  %m = nn.mean %i {axes = array<i64: 1, 2>} : (tensor<1x4x4x3xi32>) -> tensor<1x3xi32>
  %f = nn.cast %m : (tensor<1x3xi32>) -> tensor<1x3xf32>
  // CHECK: nn.cast %a : (tensor<1x2x2x3xi32>) -> tensor<1x2x2x3x!quant.uniform<i8:f32, 5.000000e-02:-3>>
  %b = nn.cast %a : (tensor<1x2x2x3xi32>) -> tensor<1x2x2x3x!q>
  // CHECK: nn.max_pool2d %q {kernel = array<i64: 2, 2>} : (tensor<1x4x4x3x!quant.uniform<i8:f32, 5.000000e-02:-3>>) -> tensor<1x3x3x3x!quant.uniform<i8:f32, 5.000000e-02:-3>>
  %p = nn.max_pool2d %q {kernel = array<i64: 2, 2>} : (tensor<1x4x4x3x!q>) -> tensor<1x3x3x3x!q>
  %r = nn.relu %q : (tensor<1x4x4x3x!q>) -> tensor<1x4x4x3x!q>
  %z = nn.pad %q {paddings = array<i64: 0, 0, 1, 1, 1, 1, 0, 0>} : (tensor<1x4x4x3x!q>) -> tensor<1x6x6x3x!q>
  %ic = nn.constant dense<"0x0100000002000000"> : tensor<2xi32>
  func.return
}
