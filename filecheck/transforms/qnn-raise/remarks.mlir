// RUN: %qd-opt %s -p qnn-raise 2>&1 | filecheck %s

// Regions left in float are remarks on stderr, one per op, saying why; the IR is still printed.

!x = !quant.uniform<i8:f32, 0.05:-3>
!y = !quant.uniform<i8:f32, 0.1:5>

// CHECK-DAG: remark: qnn-raise: @left: nn.add (%a) left in float: operand 1 (rhs) is a float value not produced by quant.dcast
// CHECK-DAG: remark: qnn-raise: @left: nn.tanh (%t) left in float: its result is used in float by nn.logistic, not only by quant.qcast
// CHECK-DAG: remark: qnn-raise: @left: nn.logistic (%l) left in float: operand 0 (input) is a float value not produced by quant.dcast
// CHECK-DAG: remark: qnn-raise: @left: nn.sub (%s) left in float: its result is quantized to 2 different types
// CHECK-DAG: remark: qnn-raise: @left: nn.softmax (%m) left in float: the qnn op would not verify: qnn.softmax: result for i8 must have scale 0.00390625 and zero point -128 (fixed by TFLite), got !quant.uniform<i8:f32, 1.000000e-01:5>
// CHECK-LABEL: func.func @left
// CHECK:         nn.add
// CHECK:         nn.tanh
func.func @left(%x: tensor<1x4x!x>) -> (tensor<1x4x!y>, tensor<1x4x!y>, tensor<1x4x!y>, tensor<1x4x!x>, tensor<1x4x!y>) {
  %xf = quant.dcast %x : tensor<1x4x!x> to tensor<1x4xf32>
  %c = nn.constant dense<"0x0000803F0000803F0000803F0000803F"> : tensor<1x4xf32>
  %a = nn.add %xf, %c : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  %aq = quant.qcast %a : tensor<1x4xf32> to tensor<1x4x!y>
  %t = nn.tanh %xf : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %l = nn.logistic %t : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %lq = quant.qcast %l : tensor<1x4xf32> to tensor<1x4x!y>
  %s = nn.sub %xf, %xf : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  %s1 = quant.qcast %s : tensor<1x4xf32> to tensor<1x4x!y>
  %s2 = quant.qcast %s : tensor<1x4xf32> to tensor<1x4x!x>
  %m = nn.softmax %xf : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %mq = quant.qcast %m : tensor<1x4xf32> to tensor<1x4x!y>
  func.return %aq, %lq, %s1, %s2, %mq : tensor<1x4x!y>, tensor<1x4x!y>, tensor<1x4x!y>, tensor<1x4x!x>, tensor<1x4x!y>
}
