// RUN: %qd-opt %s -p qnn-raise | filecheck %s

// Float constants quantized by a qcast are quantized now; a float bias is
// quantized to i32 at scale input_scale * weight_scale (TFLite's converter).

!x = !quant.uniform<i8:f32, 0.05:-3>
!y = !quant.uniform<i8:f32, 0.1:5>

// weights [1.0, -0.5, 0.25] / 0.0125 = [80, -40, 20]; bias 0.01 / (0.05 * 0.0125) = 16.
// CHECK-LABEL: func.func @float_weights_and_bias
// CHECK-NEXT:    %[[W:.*]] = qnn.constant dense<"0x50D814"> : tensor<1x3x!quant.uniform<i8:f32, 1.250000e-02>>
// CHECK-NEXT:    %[[B:.*]] = qnn.constant dense<"0x10000000"> : tensor<1x!quant.uniform<i32:f32:0, {6.2500000000000012E-4}>>
// CHECK-NEXT:    qnn.fully_connected %x, %[[W]], %[[B]] : (tensor<1x3x!quant.uniform<i8:f32, 5.000000e-02:-3>>, tensor<1x3x!quant.uniform<i8:f32, 1.250000e-02>>, tensor<1x!quant.uniform<i32:f32:0, {6.2500000000000012E-4}>>) -> tensor<1x1x!quant.uniform<i8:f32, 1.000000e-01:5>>
func.func @float_weights_and_bias(%x: tensor<1x3x!x>) -> tensor<1x1x!y> {
  %xf = quant.dcast %x : tensor<1x3x!x> to tensor<1x3xf32>
  %w = nn.constant dense<"0x0000803F000000BF0000803E"> : tensor<1x3xf32>
  %wq = quant.qcast %w : tensor<1x3xf32> to tensor<1x3x!quant.uniform<i8:f32, 0.0125>>
  %wf = quant.dcast %wq : tensor<1x3x!quant.uniform<i8:f32, 0.0125>> to tensor<1x3xf32>
  %b = nn.constant dense<"0x0AD7233C"> : tensor<1xf32>
  %f = nn.fully_connected %xf, %wf, %b : (tensor<1x3xf32>, tensor<1x3xf32>, tensor<1xf32>) -> tensor<1x1xf32>
  %q = quant.qcast %f : tensor<1x1xf32> to tensor<1x1x!y>
  func.return %q : tensor<1x1x!y>
}
