// RUN: %qd-opt %s -p qnn-raise | filecheck %s

// dcast -> nn.<op> -> qcast regions become qnn.<op> on the dcasts' sources,
// with the qcast's type as result type.

!x = !quant.uniform<i8:f32, 0.05:-3>
!y = !quant.uniform<i8:f32, 0.1:5>
!w = !quant.uniform<i8:f32:0, {0.01, 0.02}>
!b = !quant.uniform<i32:f32:0, {5.0e-4, 1.0e-3}>

// The real fused clamp [0, 6] becomes [zp + 0/s, zp + 6/s] = [5, 65]; hints become knobs.
// CHECK-LABEL: func.func @conv
// CHECK:         %[[C:.*]] = qnn.conv2d %x, %{{.*}}, %{{.*}} {padding = array<i64: 0, 0, 0, 0>, act_min = 5 : i64, act_max = 65 : i64, bias = "output"} : (tensor<1x2x2x3x!quant.uniform<i8:f32, 5.000000e-02:-3>>, tensor<2x1x1x3x!quant.uniform<i8:f32:0, {1.000000e-02,2.000000e-02}>>, tensor<2x!quant.uniform<i32:f32:0, {5.000000e-04,1.000000e-03}>>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 1.000000e-01:5>>
// CHECK-NEXT:    func.return %[[C]]
func.func @conv(%x: tensor<1x2x2x3x!x>) -> tensor<1x2x2x2x!y> {
  %xf = quant.dcast %x : tensor<1x2x2x3x!x> to tensor<1x2x2x3xf32>
  %w = qnn.constant dense<"0x0AF6147FE281"> : tensor<2x1x1x3x!w>
  %wf = quant.dcast %w : tensor<2x1x1x3x!w> to tensor<2x1x1x3xf32>
  %b = qnn.constant dense<"0x64000000CEFFFFFF"> : tensor<2x!b>
  %bf = quant.dcast %b : tensor<2x!b> to tensor<2xf32>
  %c = nn.conv2d %xf, %wf, %bf {padding = array<i64: 0, 0, 0, 0>, act_min = 0.0 : f64, act_max = 6.0 : f64, qnn.bias = "output"} : (tensor<1x2x2x3xf32>, tensor<2x1x1x3xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %q = quant.qcast %c : tensor<1x2x2x2xf32> to tensor<1x2x2x2x!y>
  func.return %q : tensor<1x2x2x2x!y>
}

// Without a bias, a zero i32 bias at scale input_scale * weight_scale[c] is made.
// CHECK-LABEL: func.func @no_bias
// CHECK:         %[[B:.*]] = qnn.constant dense<"0x0000000000000000"> : tensor<2x!quant.uniform<i32:f32:0, {5.000000e-04,1.000000e-03}>>
// CHECK-NEXT:    qnn.fully_connected %x, %{{.*}}, %[[B]]
func.func @no_bias(%x: tensor<1x3x!x>) -> tensor<1x2x!y> {
  %xf = quant.dcast %x : tensor<1x3x!x> to tensor<1x3xf32>
  %w = qnn.constant dense<"0x0AF6147FE281"> : tensor<2x3x!w>
  %wf = quant.dcast %w : tensor<2x3x!w> to tensor<2x3xf32>
  %f = nn.fully_connected %xf, %wf : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<1x2xf32>
  %q = quant.qcast %f : tensor<1x2xf32> to tensor<1x2x!y>
  func.return %q : tensor<1x2x!y>
}

// Several qcasts of one result to the same type share the raised op.
// CHECK-LABEL: func.func @two_qcasts
// CHECK-NEXT:    %[[L:.*]] = qnn.logistic %x : (tensor<4x!quant.uniform<i8:f32, 5.000000e-02:-3>>) -> tensor<4x!quant.uniform<i8:f32, 3.906250e-03:-128>>
// CHECK-NEXT:    func.return %[[L]], %[[L]]
func.func @two_qcasts(%x: tensor<4x!x>) -> (tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>>, tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>>) {
  %xf = quant.dcast %x : tensor<4x!x> to tensor<4xf32>
  %l = nn.logistic %xf : (tensor<4xf32>) -> tensor<4xf32>
  %a = quant.qcast %l : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>>
  %b = quant.qcast %l : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>>
  func.return %a, %b : tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>>, tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>>
}

// qnn.avg_pool2d needs equal parameters in and out: the input is requantized first.
// CHECK-LABEL: func.func @pool_to_new_params
// CHECK-NEXT:    %[[R:.*]] = qnn.requantize %x : (tensor<1x2x2x1x!quant.uniform<i8:f32, 5.000000e-02:-3>>) -> tensor<1x2x2x1x!quant.uniform<i8:f32, 1.000000e-01:5>>
// CHECK-NEXT:    qnn.avg_pool2d %[[R]] {kernel = array<i64: 2, 2>} : (tensor<1x2x2x1x!quant.uniform<i8:f32, 1.000000e-01:5>>) -> tensor<1x1x1x1x!quant.uniform<i8:f32, 1.000000e-01:5>>
func.func @pool_to_new_params(%x: tensor<1x2x2x1x!x>) -> tensor<1x1x1x1x!y> {
  %xf = quant.dcast %x : tensor<1x2x2x1x!x> to tensor<1x2x2x1xf32>
  %p = nn.avg_pool2d %xf {kernel = array<i64: 2, 2>} : (tensor<1x2x2x1xf32>) -> tensor<1x1x1x1xf32>
  %q = quant.qcast %p : tensor<1x1x1x1xf32> to tensor<1x1x1x1x!y>
  func.return %q : tensor<1x1x1x1x!y>
}

// A region whose qnn op would not verify stays in float (logistic's int8 output is fixed at 1/256, -128).
// CHECK-LABEL: func.func @would_not_verify
// CHECK:         nn.logistic
// CHECK-NEXT:    quant.qcast
func.func @would_not_verify(%x: tensor<4x!x>) -> tensor<4x!y> {
  %xf = quant.dcast %x : tensor<4x!x> to tensor<4xf32>
  %l = nn.logistic %xf : (tensor<4xf32>) -> tensor<4xf32>
  %q = quant.qcast %l : tensor<4xf32> to tensor<4x!y>
  func.return %q : tensor<4x!y>
}

// qcast(dcast(x)) is a requantize, or nothing between equal types.
// CHECK-LABEL: func.func @requantize
// CHECK-NEXT:    %[[R:.*]] = qnn.requantize %x : (tensor<4x!quant.uniform<i8:f32, 5.000000e-02:-3>>) -> tensor<4x!quant.uniform<i8:f32, 1.000000e-01:5>>
// CHECK-NEXT:    func.return %[[R]], %x
func.func @requantize(%x: tensor<4x!x>) -> (tensor<4x!y>, tensor<4x!x>) {
  %xf = quant.dcast %x : tensor<4x!x> to tensor<4xf32>
  %a = quant.qcast %xf : tensor<4xf32> to tensor<4x!y>
  %b = quant.qcast %xf : tensor<4xf32> to tensor<4x!x>
  func.return %a, %b : tensor<4x!y>, tensor<4x!x>
}
