// RUN: %qd-opt %s | %qd-opt | filecheck %s
// RUN: %qd-opt %s --print-op-generic | %qd-opt | filecheck %s

// One valid use of every qnn op; each prints back unchanged.

!a = !quant.uniform<i8:f32, 0.5:-3>
!o = !quant.uniform<i8:f32, 0.25:5>

// CHECK-LABEL: func.func @convs
func.func @convs(%x: tensor<1x8x8x3x!quant.uniform<i8:f32, 0.5:-3>>) {
  // CHECK: qnn.constant dense<"0x{{[0-9A-F]+}}"> : tensor<4x1x1x3x!quant.uniform<i8<-127:127>:f32:0, {1.000000e-01,2.000000e-01,3.000000e-01,4.000000e-01}>>
  %w = qnn.constant dense<"0x0102030405060708090A0B0C"> : tensor<4x1x1x3x!quant.uniform<i8<-127:127>:f32:0, {0.1, 0.2, 0.3, 0.4}>>
  %b = qnn.constant dense<"0x01000000020000000300000004000000"> : tensor<4x!quant.uniform<i32:f32:0, {0.05, 0.1, 0.15, 0.2}>>
  // CHECK: qnn.conv2d %{{.*}}, %{{.*}}, %{{.*}} {strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, act_min = 5 : i64, rounding = "half_even", bias = "output", acc = "i16", acc_overflow = "saturate"} : (tensor<1x8x8x3x!quant.uniform<i8:f32, 5.000000e-01:-3>>, tensor<4x1x1x3x!quant.uniform<i8<-127:127>:f32:0, {1.000000e-01,2.000000e-01,3.000000e-01,4.000000e-01}>>, tensor<4x!quant.uniform<i32:f32:0, {5.000000e-02,1.000000e-01,1.500000e-01,2.000000e-01}>>) -> tensor<1x4x4x4x!quant.uniform<i8:f32, 2.500000e-01:5>>
  %c = qnn.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, act_min = 5 : i64, rounding = "half_even", bias = "output", acc = "i16", acc_overflow = "saturate"} : (tensor<1x8x8x3x!quant.uniform<i8:f32, 0.5:-3>>, tensor<4x1x1x3x!quant.uniform<i8<-127:127>:f32:0, {0.1, 0.2, 0.3, 0.4}>>, tensor<4x!quant.uniform<i32:f32:0, {0.05, 0.1, 0.15, 0.2}>>) -> tensor<1x4x4x4x!quant.uniform<i8:f32, 0.25:5>>
  %dw = qnn.constant dense<"0x010203040506070809010203040506070809"> : tensor<1x3x3x2x!quant.uniform<i8:f32:3, {0.1, 0.2}>>
  %x2 = qnn.constant dense<"0x0000000000000000000000000000000000000000000000000000000000000000"> : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>
  %db = arith.constant dense<[7, 8]> : tensor<2xi32>
  // CHECK: qnn.depthwise_conv2d %{{.*}} {padding = array<i64: 1, 1, 1, 1>, rounding = "litert"} : {{.*}} -> tensor<1x4x4x2x!quant.uniform<i8:f32, 2.500000e-01:5>>
  %d = qnn.depthwise_conv2d %x2, %dw, %db {padding = array<i64: 1, 1, 1, 1>, rounding = "litert"} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>, tensor<1x3x3x2x!quant.uniform<i8:f32:3, {0.1, 0.2}>>, tensor<2xi32>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.25:5>>
  %tw = qnn.constant dense<"0x01020304050607080102030405060708"> : tensor<2x2x2x2x!quant.uniform<i8:f32, 0.1>>
  // CHECK: qnn.transpose_conv2d {{.*}} -> tensor<1x8x8x2x!quant.uniform<i8:f32, 2.500000e-01:5>>
  %t = qnn.transpose_conv2d %x2, %tw, %db {strides = array<i64: 2, 2>} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>, tensor<2x2x2x2x!quant.uniform<i8:f32, 0.1>>, tensor<2xi32>) -> tensor<1x8x8x2x!quant.uniform<i8:f32, 0.25:5>>
  %fw = qnn.constant dense<"0x0102030405060708"> : tensor<2x4x!quant.uniform<i8:f32, 0.1>>
  // CHECK: qnn.fully_connected {{.*}} -> tensor<8x2x!quant.uniform<i8:f32, 2.500000e-01:5>>
  %f = qnn.fully_connected %x2, %fw, %db : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>, tensor<2x4x!quant.uniform<i8:f32, 0.1>>, tensor<2xi32>) -> tensor<8x2x!quant.uniform<i8:f32, 0.25:5>>
  // CHECK: qnn.batch_matmul {{.*}} {adj_y = true} : {{.*}} -> tensor<1x4x4x4x!quant.uniform<i8:f32, 2.500000e-01:5>>
  %m = qnn.batch_matmul %x2, %x2 {adj_y = true} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>, tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x4x4x4x!quant.uniform<i8:f32, 0.25:5>>
  func.return
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<2x3x!a>, %b: tensor<3x!quant.uniform<i8:f32, 0.125:1>>) {
  // CHECK: qnn.add %{{.*}}, %{{.*}} {act_min = -100 : i64, act_max = 100 : i64} : (tensor<2x3x!quant.uniform<i8:f32, 5.000000e-01:-3>>, tensor<3x!quant.uniform<i8:f32, 1.250000e-01:1>>) -> tensor<2x3x!quant.uniform<i8:f32, 2.500000e-01:5>>
  %0 = qnn.add %a, %b {act_min = -100 : i64, act_max = 100 : i64} : (tensor<2x3x!a>, tensor<3x!quant.uniform<i8:f32, 0.125:1>>) -> tensor<2x3x!o>
  // CHECK: qnn.sub
  %1 = qnn.sub %a, %b : (tensor<2x3x!a>, tensor<3x!quant.uniform<i8:f32, 0.125:1>>) -> tensor<2x3x!o>
  // CHECK: qnn.mul
  %2 = qnn.mul %a, %b {rounding = "single"} : (tensor<2x3x!a>, tensor<3x!quant.uniform<i8:f32, 0.125:1>>) -> tensor<2x3x!o>
  // CHECK: qnn.squared_difference
  %3 = qnn.squared_difference %a, %b : (tensor<2x3x!a>, tensor<3x!quant.uniform<i8:f32, 0.125:1>>) -> tensor<2x3x!o>
  // CHECK: qnn.maximum
  %4 = qnn.maximum %a, %a : (tensor<2x3x!a>, tensor<2x3x!a>) -> tensor<2x3x!a>
  // CHECK: qnn.minimum
  %5 = qnn.minimum %a, %a : (tensor<2x3x!a>, tensor<2x3x!a>) -> tensor<2x3x!a>
  // CHECK: qnn.prelu
  %6 = qnn.prelu %a, %b : (tensor<2x3x!a>, tensor<3x!quant.uniform<i8:f32, 0.125:1>>) -> tensor<2x3x!o>
  // CHECK: qnn.requantize
  %7 = qnn.requantize %a {rounding = "half_up"} : (tensor<2x3x!a>) -> tensor<2x3x!quant.uniform<u8:f32, 0.1:128>>
  // CHECK: qnn.clamp %{{.*}} {act_min = -3 : i64, act_max = 9 : i64}
  %8 = qnn.clamp %a {act_min = -3 : i64, act_max = 9 : i64} : (tensor<2x3x!a>) -> tensor<2x3x!a>
  func.return
}

// CHECK-LABEL: func.func @activations
func.func @activations(%a: tensor<2x3x!a>, %h: tensor<2x3x!quant.uniform<i16:f32, 0.001>>) {
  // CHECK: qnn.logistic {{.*}} -> tensor<2x3x!quant.uniform<i8:f32, 3.906250e-03:-128>>
  %0 = qnn.logistic %a : (tensor<2x3x!a>) -> tensor<2x3x!quant.uniform<i8:f32, 0.00390625:-128>>
  // CHECK: qnn.logistic {{.*}} -> tensor<2x3x!quant.uniform<i16:f32, 3.0517578125E-5>>
  %1 = qnn.logistic %h : (tensor<2x3x!quant.uniform<i16:f32, 0.001>>) -> tensor<2x3x!quant.uniform<i16:f32, 3.0517578125e-05>>
  // CHECK: qnn.tanh {{.*}} -> tensor<2x3x!quant.uniform<i8:f32, 7.812500e-03>>
  %2 = qnn.tanh %a : (tensor<2x3x!a>) -> tensor<2x3x!quant.uniform<i8:f32, 0.0078125>>
  // CHECK: qnn.softmax %{{.*}} {beta = 1.000000e+00 : f64}
  %3 = qnn.softmax %a {beta = 1.0 : f64} : (tensor<2x3x!a>) -> tensor<2x3x!quant.uniform<i8:f32, 0.00390625:-128>>
  // CHECK: qnn.log_softmax {{.*}} -> tensor<2x3x!quant.uniform<i8:f32, 6.250000e-02:127>>
  %4 = qnn.log_softmax %a : (tensor<2x3x!a>) -> tensor<2x3x!quant.uniform<i8:f32, 0.0625:127>>
  // CHECK: qnn.hard_swish
  %5 = qnn.hard_swish %a : (tensor<2x3x!a>) -> tensor<2x3x!o>
  // CHECK: qnn.leaky_relu %{{.*}} {alpha = 2.000000e-01 : f64}
  %6 = qnn.leaky_relu %a {alpha = 0.2 : f64} : (tensor<2x3x!a>) -> tensor<2x3x!o>
  // CHECK: qnn.elu
  %7 = qnn.elu %a : (tensor<2x3x!a>) -> tensor<2x3x!o>
  func.return
}

// CHECK-LABEL: func.func @pools_and_reductions
func.func @pools_and_reductions(%x: tensor<1x6x6x2x!a>) {
  // CHECK: qnn.avg_pool2d %{{.*}} {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 0, 1, 0, 1>} : (tensor<1x6x6x2x!quant.uniform<i8:f32, 5.000000e-01:-3>>) -> tensor<1x3x3x2x!quant.uniform<i8:f32, 5.000000e-01:-3>>
  %0 = qnn.avg_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 0, 1, 0, 1>} : (tensor<1x6x6x2x!a>) -> tensor<1x3x3x2x!a>
  // CHECK: qnn.max_pool2d
  %1 = qnn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x6x6x2x!a>) -> tensor<1x3x3x2x!a>
  // CHECK: qnn.mean %{{.*}} {axes = array<i64: 1, 2>, keep_dims = true} : {{.*}} -> tensor<1x1x1x2x!quant.uniform<i8:f32, 2.500000e-01:5>>
  %2 = qnn.mean %x {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<1x6x6x2x!a>) -> tensor<1x1x1x2x!o>
  // CHECK: qnn.sum {{.*}} -> tensor<1x2x!quant.uniform<i8:f32, 2.500000e-01:5>>
  %3 = qnn.sum %x {axes = array<i64: 1, -2>} : (tensor<1x6x6x2x!a>) -> tensor<1x2x!o>
  // CHECK: qnn.reduce_max
  %4 = qnn.reduce_max %x {axes = array<i64: 3>} : (tensor<1x6x6x2x!a>) -> tensor<1x6x6x!a>
  // CHECK: qnn.reduce_min
  %5 = qnn.reduce_min %x {axes = array<i64: 0>} : (tensor<1x6x6x2x!a>) -> tensor<6x6x2x!a>
  func.return
}

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%x: tensor<1x4x4x2x!a>, %i: tensor<3xi32>) {
  // CHECK: qnn.reshape {{.*}} -> tensor<2x16x!quant.uniform<i8:f32, 5.000000e-01:-3>>
  %0 = qnn.reshape %x : (tensor<1x4x4x2x!a>) -> tensor<2x16x!a>
  // CHECK: qnn.transpose %{{.*}} {perm = array<i64: 0, 3, 1, 2>}
  %1 = qnn.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x2x!a>) -> tensor<1x2x4x4x!a>
  // CHECK: qnn.pad %{{.*}} {paddings = array<i64: 0, 0, 1, 1, 2, 0, 0, 0>}
  %2 = qnn.pad %x {paddings = array<i64: 0, 0, 1, 1, 2, 0, 0, 0>} : (tensor<1x4x4x2x!a>) -> tensor<1x6x6x2x!a>
  // CHECK: qnn.slice %{{.*}} {begin = array<i64: 0, 1, 0, 0>, end = array<i64: 1, 4, 4, 1>, strides = array<i64: 1, 2, 1, 1>}
  %3 = qnn.slice %x {begin = array<i64: 0, 1, 0, 0>, end = array<i64: 1, 4, 4, 1>, strides = array<i64: 1, 2, 1, 1>} : (tensor<1x4x4x2x!a>) -> tensor<1x2x4x1x!a>
  // CHECK: qnn.split %{{.*}} {axis = 1 : i64} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 5.000000e-01:-3>>) -> (tensor<1x1x4x2x!quant.uniform<i8:f32, 5.000000e-01:-3>>, tensor<1x3x4x2x!quant.uniform<i8:f32, 5.000000e-01:-3>>)
  %4:2 = qnn.split %x {axis = 1 : i64} : (tensor<1x4x4x2x!a>) -> (tensor<1x1x4x2x!a>, tensor<1x3x4x2x!a>)
  // CHECK: qnn.concatenation %{{.*}}, %{{.*}} {axis = -1 : i64}
  %5 = qnn.concatenation %x, %x {axis = -1 : i64} : (tensor<1x4x4x2x!a>, tensor<1x4x4x2x!a>) -> tensor<1x4x4x4x!a>
  // CHECK: qnn.gather %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 5.000000e-01:-3>>, tensor<3xi32>) -> tensor<1x3x4x2x!quant.uniform<i8:f32, 5.000000e-01:-3>>
  %6 = qnn.gather %x, %i {axis = 1 : i64} : (tensor<1x4x4x2x!a>, tensor<3xi32>) -> tensor<1x3x4x2x!a>
  // CHECK: qnn.resize_bilinear %{{.*}} {half_pixel_centers = true}
  %7 = qnn.resize_bilinear %x {half_pixel_centers = true} : (tensor<1x4x4x2x!a>) -> tensor<1x8x8x2x!a>
  // CHECK: qnn.resize_nearest_neighbor %{{.*}} {align_corners = true}
  %8 = qnn.resize_nearest_neighbor %x {align_corners = true} : (tensor<1x4x4x2x!a>) -> tensor<1x8x8x2x!a>
  // CHECK: qnn.space_to_depth %{{.*}} {block_size = 2 : i64} : {{.*}} -> tensor<1x2x2x8x!quant.uniform<i8:f32, 5.000000e-01:-3>>
  %9 = qnn.space_to_depth %x {block_size = 2 : i64} : (tensor<1x4x4x2x!a>) -> tensor<1x2x2x8x!a>
  // CHECK: qnn.depth_to_space %{{.*}} {block_size = 2 : i64} : {{.*}} -> tensor<1x4x4x2x!quant.uniform<i8:f32, 5.000000e-01:-3>>
  %10 = qnn.depth_to_space %9 {block_size = 2 : i64} : (tensor<1x2x2x8x!a>) -> tensor<1x4x4x2x!a>
  func.return
}

// gather with shared batch dimensions; a strided slice whose result gains a new
// size-1 axis (TFLite's new_axis_mask) is a qnn.slice with that result shape
// CHECK-LABEL: func.func @batch_gather_and_new_axis
func.func @batch_gather_and_new_axis(%x: tensor<2x5x3x!a>, %i: tensor<2x4xi32>) {
  // CHECK: qnn.gather %{{.*}}, %{{.*}} {axis = 1 : i64, batch_dims = 1 : i64} : (tensor<2x5x3x!quant.uniform<i8:f32, 5.000000e-01:-3>>, tensor<2x4xi32>) -> tensor<2x4x3x!quant.uniform<i8:f32, 5.000000e-01:-3>>
  %0 = qnn.gather %x, %i {axis = 1 : i64, batch_dims = 1 : i64} : (tensor<2x5x3x!a>, tensor<2x4xi32>) -> tensor<2x4x3x!a>
  // CHECK: qnn.slice %{{.*}} {begin = array<i64: 0, 1, 0>, end = array<i64: 2, 3, 3>, strides = array<i64: 1, 1, 1>} : (tensor<2x5x3x!quant.uniform<i8:f32, 5.000000e-01:-3>>) -> tensor<2x1x2x3x!quant.uniform<i8:f32, 5.000000e-01:-3>>
  %1 = qnn.slice %x {begin = array<i64: 0, 1, 0>, end = array<i64: 2, 3, 3>, strides = array<i64: 1, 1, 1>} : (tensor<2x5x3x!a>) -> tensor<2x1x2x3x!a>
  func.return
}

// CHECK-LABEL: func.func @edges
func.func @edges(%f: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: qnn.quantize %{{.*}} : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 5.000000e-01:-3>>
  %0 = qnn.quantize %f : (tensor<4xf32>) -> tensor<4x!a>
  // CHECK: qnn.dequantize %{{.*}} : (tensor<4x!quant.uniform<i8:f32, 5.000000e-01:-3>>) -> tensor<4xf32>
  %1 = qnn.dequantize %0 : (tensor<4x!a>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
