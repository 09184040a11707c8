// RUN: %qd-opt %s | %qd-opt | filecheck %s

// qnn.simulated_quantize: quantize-dequantize in float; the parameters are the qtype attribute.

// CHECK-LABEL: func.func @sim
// CHECK-NEXT:    %a = qnn.simulated_quantize %x {qtype = !quant.uniform<i8:f32, 5.000000e-02:-3>} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %b = qnn.simulated_quantize %x {qtype = !quant.uniform<i8:f32, 5.000000e-02:-3>, rounding = "half_even", mode = "passthrough"} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %c = qnn.simulated_quantize %x {qtype = !quant.uniform<i32:f32, 1.000000e-03>, acc = "i16", acc_overflow = "saturate"} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %d = qnn.simulated_quantize %w {qtype = !quant.uniform<i8<-127:127>:f32:0, {1.000000e-01,2.000000e-01}>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @sim(%x: tensor<4xf32>, %w: tensor<2x3xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x3xf32>) {
  %a = qnn.simulated_quantize %x {qtype = !quant.uniform<i8:f32, 0.05:-3>} : (tensor<4xf32>) -> tensor<4xf32>
  %b = qnn.simulated_quantize %x {qtype = !quant.uniform<i8:f32, 0.05:-3>, rounding = "half_even", mode = "passthrough"} : (tensor<4xf32>) -> tensor<4xf32>
  %c = qnn.simulated_quantize %x {qtype = !quant.uniform<i32:f32, 0.001>, acc = "i16", acc_overflow = "saturate"} : (tensor<4xf32>) -> tensor<4xf32>
  %d = qnn.simulated_quantize %w {qtype = !quant.uniform<i8<-127:127>:f32:0, {0.1, 0.2}>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %a, %b, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x3xf32>
}
