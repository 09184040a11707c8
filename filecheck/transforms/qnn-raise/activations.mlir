// RUN: %qd-opt %s -p qnn-raise | filecheck %s

// relu / relu6 / clip, and relu spelled as max with the zero point, end in
// the producer's clamp bounds.

!x = !quant.uniform<i8:f32, 0.05:-3>
!y = !quant.uniform<i8:f32, 0.1:5>

// A float relu6 after a float add folds into its fused clamp first.
// CHECK-LABEL: func.func @relu6_after_float_add
// CHECK-NEXT:    %[[A:.*]] = qnn.add %x, %x {act_min = 5 : i64, act_max = 65 : i64}
// CHECK-NEXT:    func.return %[[A]]
func.func @relu6_after_float_add(%x: tensor<4x!x>) -> tensor<4x!y> {
  %xf = quant.dcast %x : tensor<4x!x> to tensor<4xf32>
  %a = nn.add %xf, %xf : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r = nn.clip %a {min = 0.0 : f64, max = 6.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  %q = quant.qcast %r : tensor<4xf32> to tensor<4x!y>
  func.return %q : tensor<4x!y>
}

// max(x, 0) with 0 spelled as a dequantized constant holding the zero point.
// CHECK-LABEL: func.func @max_with_zero_point
// CHECK-NEXT:    %[[A:.*]] = qnn.add %x, %x {act_min = 5 : i64}
// CHECK-NEXT:    func.return %[[A]]
func.func @max_with_zero_point(%x: tensor<1x4x!x>) -> tensor<1x4x!y> {
  %xf = quant.dcast %x : tensor<1x4x!x> to tensor<1x4xf32>
  %a = nn.add %xf, %xf : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  %z = qnn.constant dense<"0x05"> : tensor<1x!y>
  %zf = quant.dcast %z : tensor<1x!y> to tensor<1xf32>
  %m = nn.maximum %a, %zf : (tensor<1x4xf32>, tensor<1xf32>) -> tensor<1x4xf32>
  %q = quant.qcast %m : tensor<1x4xf32> to tensor<1x4x!y>
  func.return %q : tensor<1x4x!y>
}

// A relu region after an already-quantized op: qnn.clamp, then folded into that op.
// CHECK-LABEL: func.func @relu_after_qnn_op
// CHECK-NEXT:    %[[A:.*]] = qnn.add %x, %x {act_min = 5 : i64}
// CHECK-NEXT:    func.return %[[A]]
func.func @relu_after_qnn_op(%x: tensor<4x!y>) -> tensor<4x!y> {
  %a = qnn.add %x, %x : (tensor<4x!y>, tensor<4x!y>) -> tensor<4x!y>
  %af = quant.dcast %a : tensor<4x!y> to tensor<4xf32>
  %r = nn.relu %af : (tensor<4xf32>) -> tensor<4xf32>
  %q = quant.qcast %r : tensor<4xf32> to tensor<4x!y>
  func.return %q : tensor<4x!y>
}

// min with a float constant: a clamp from above (6.0 / 0.1 + 5 = 65).
// CHECK-LABEL: func.func @min_with_float_constant
// CHECK-NEXT:    qnn.clamp %x {act_max = 65 : i64} : (tensor<4x!quant.uniform<i8:f32, 1.000000e-01:5>>) -> tensor<4x!quant.uniform<i8:f32, 1.000000e-01:5>>
func.func @min_with_float_constant(%x: tensor<4x!y>) -> tensor<4x!y> {
  %xf = quant.dcast %x : tensor<4x!y> to tensor<4xf32>
  %c = nn.constant dense<"0x0000C040"> : tensor<1xf32>
  %m = nn.minimum %c, %xf : (tensor<1xf32>, tensor<4xf32>) -> tensor<4xf32>
  %q = quant.qcast %m : tensor<4xf32> to tensor<4x!y>
  func.return %q : tensor<4x!y>
}

// A clip marked as coming from a requantize raises to qnn.requantize.
// CHECK-LABEL: func.func @clip_from_requantize
// CHECK-NEXT:    qnn.requantize %x {act_min = 10 : i64} : (tensor<4x!quant.uniform<i8:f32, 5.000000e-02:-3>>) -> tensor<4x!quant.uniform<i8:f32, 1.000000e-01:5>>
func.func @clip_from_requantize(%x: tensor<4x!x>) -> tensor<4x!y> {
  %xf = quant.dcast %x : tensor<4x!x> to tensor<4xf32>
  %c = nn.clip %xf {min = 0.5 : f64, qnn.requantize} : (tensor<4xf32>) -> tensor<4xf32>
  %q = quant.qcast %c : tensor<4xf32> to tensor<4x!y>
  func.return %q : tensor<4x!y>
}
