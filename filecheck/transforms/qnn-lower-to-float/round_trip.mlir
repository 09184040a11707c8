// RUN: %qd-opt %s -p qnn-lower-to-float,qnn-raise | filecheck %s

// qnn-raise undoes qnn-lower-to-float: the same ops, types and attributes come back.

!x = !quant.uniform<i8:f32, 0.05:-3>
!y = !quant.uniform<i8:f32, 0.1:5>
!w = !quant.uniform<i8:f32:3, {0.01, 0.02}>
!b = !quant.uniform<i32:f32:0, {5.0e-4, 1.0e-3}>

// CHECK-LABEL: func.func @block
// CHECK-NEXT:    %[[W:.*]] = qnn.constant dense<"0x0AF6147FE2810AF6147FE281146C146C146C"> : tensor<1x3x3x2x!quant.uniform<i8:f32:3, {1.000000e-02,2.000000e-02}>>
// CHECK-NEXT:    %[[B:.*]] = qnn.constant dense<"0x64000000CEFFFFFF"> : tensor<2x!quant.uniform<i32:f32:0, {5.000000e-04,1.000000e-03}>>
// CHECK-NEXT:    %[[D:.*]] = qnn.depthwise_conv2d %x, %[[W]], %[[B]] {strides = array<i64: 2, 2>, padding = array<i64: 0, 1, 0, 1>, act_min = 5 : i64, act_max = 65 : i64, rounding = "litert"} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 5.000000e-02:-3>>, tensor<1x3x3x2x!quant.uniform<i8:f32:3, {1.000000e-02,2.000000e-02}>>, tensor<2x!quant.uniform<i32:f32:0, {5.000000e-04,1.000000e-03}>>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 1.000000e-01:5>>
// CHECK-NEXT:    %[[M:.*]] = qnn.mean %[[D]] {axes = array<i64: 1, 2>, keep_dims = false} : (tensor<1x2x2x2x!quant.uniform<i8:f32, 1.000000e-01:5>>) -> tensor<1x2x!quant.uniform<i8:f32, 2.000000e-01:-1>>
// CHECK-NEXT:    %[[L:.*]] = qnn.logistic %[[M]] : (tensor<1x2x!quant.uniform<i8:f32, 2.000000e-01:-1>>) -> tensor<1x2x!quant.uniform<i8:f32, 3.906250e-03:-128>>
// CHECK-NEXT:    func.return %[[L]]
func.func @block(%x: tensor<1x4x4x2x!x>) -> tensor<1x2x!quant.uniform<i8:f32, 0.00390625:-128>> {
  %w = qnn.constant dense<"0x0AF6147FE2810AF6147FE281146C146C146C"> : tensor<1x3x3x2x!w>
  %b = qnn.constant dense<"0x64000000CEFFFFFF"> : tensor<2x!b>
  %d = qnn.depthwise_conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 0, 1, 0, 1>, act_min = 5 : i64, act_max = 65 : i64, rounding = "litert"} : (tensor<1x4x4x2x!x>, tensor<1x3x3x2x!w>, tensor<2x!b>) -> tensor<1x2x2x2x!y>
  %m = qnn.mean %d {axes = array<i64: 1, 2>, keep_dims = false} : (tensor<1x2x2x2x!y>) -> tensor<1x2x!quant.uniform<i8:f32, 0.2:-1>>
  %l = qnn.logistic %m : (tensor<1x2x!quant.uniform<i8:f32, 0.2:-1>>) -> tensor<1x2x!quant.uniform<i8:f32, 0.00390625:-128>>
  func.return %l : tensor<1x2x!quant.uniform<i8:f32, 0.00390625:-128>>
}

// CHECK-LABEL: func.func @movement
// CHECK-NEXT:    %[[P:.*]] = qnn.pad %x {paddings = array<i64: 0, 0, 1, 0>, pad_value = 7 : i64}
// CHECK-NEXT:    %[[T:.*]] = qnn.transpose %[[P]] {perm = array<i64: 1, 0>}
// CHECK-NEXT:    %[[R:.*]] = qnn.reshape %[[T]]
// CHECK-NEXT:    %[[C:.*]] = qnn.concatenation %[[R]], %[[R]] {axis = 0 : i64}
// CHECK-NEXT:    %[[Q:.*]] = qnn.requantize %[[C]] {act_min = -100 : i64} : (tensor<20x!quant.uniform<i8:f32, 5.000000e-02:-3>>) -> tensor<20x!quant.uniform<i8:f32, 1.000000e-01:5>>
// CHECK-NEXT:    func.return %[[Q]]
func.func @movement(%x: tensor<2x4x!x>) -> tensor<20x!y> {
  %p = qnn.pad %x {paddings = array<i64: 0, 0, 1, 0>, pad_value = 7 : i64} : (tensor<2x4x!x>) -> tensor<2x5x!x>
  %t = qnn.transpose %p {perm = array<i64: 1, 0>} : (tensor<2x5x!x>) -> tensor<5x2x!x>
  %r = qnn.reshape %t : (tensor<5x2x!x>) -> tensor<10x!x>
  %c = qnn.concatenation %r, %r {axis = 0 : i64} : (tensor<10x!x>, tensor<10x!x>) -> tensor<20x!x>
  %q = qnn.requantize %c {act_min = -100 : i64} : (tensor<20x!x>) -> tensor<20x!y>
  func.return %q : tensor<20x!y>
}
