// RUN: %qd-opt %s -p qnn-lower-simulated-quantize 2>&1 | filecheck %s

// qnn.simulated_quantize becomes the casts it stands for.

// A wrapping accumulator is reported (stderr, before the module).
// CHECK: remark: qnn-lower-simulated-quantize: qnn.simulated_quantize with acc = i16, acc_overflow = wrap has no quant.qcast spelling; left for the interpreter

// The default rounding (TFLite's, half away from zero) is quant.qcast's.
// CHECK-LABEL: func.func @casts
// CHECK-NEXT:    %a = quant.qcast %x : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 5.000000e-02:-3>>
// CHECK-NEXT:    %a_1 = quant.dcast %a : tensor<4x!quant.uniform<i8:f32, 5.000000e-02:-3>> to tensor<4xf32>
// Another rounding: qnn.quantize with that knob.
// CHECK-NEXT:    %b = qnn.quantize %x {rounding = "half_even"} : (tensor<4xf32>) -> tensor<4x!quant.uniform<u8:f32, 5.000000e-02:128>>
// CHECK-NEXT:    %b_1 = quant.dcast %b : tensor<4x!quant.uniform<u8:f32, 5.000000e-02:128>> to tensor<4xf32>
// A saturating i16 accumulator: the accumulator's width as storage.
// CHECK-NEXT:    %c = quant.qcast %x : tensor<4xf32> to tensor<4x!quant.uniform<i16:f32, 1.000000e-03>>
// CHECK-NEXT:    %c_1 = quant.dcast %c : tensor<4x!quant.uniform<i16:f32, 1.000000e-03>> to tensor<4xf32>
// A wrapping accumulator has no cast spelling: it stays.
// CHECK-NEXT:    %d = qnn.simulated_quantize %x {qtype = !quant.uniform<i32:f32, 1.000000e-03>, acc = "i16"} : (tensor<4xf32>) -> tensor<4xf32>
// Passthrough is the operand itself.
// CHECK-NEXT:    func.return %a_1, %b_1, %c_1, %d, %x : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
func.func @casts(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = qnn.simulated_quantize %x {qtype = !quant.uniform<i8:f32, 0.05:-3>} : (tensor<4xf32>) -> tensor<4xf32>
  %b = qnn.simulated_quantize %x {qtype = !quant.uniform<u8:f32, 0.05:128>, rounding = "half_even"} : (tensor<4xf32>) -> tensor<4xf32>
  %c = qnn.simulated_quantize %x {qtype = !quant.uniform<i32:f32, 0.001>, acc = "i16", acc_overflow = "saturate"} : (tensor<4xf32>) -> tensor<4xf32>
  %d = qnn.simulated_quantize %x {qtype = !quant.uniform<i32:f32, 0.001>, acc = "i16"} : (tensor<4xf32>) -> tensor<4xf32>
  %e = qnn.simulated_quantize %x {qtype = !quant.uniform<i8:f32, 0.05>, mode = "passthrough"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a, %b, %c, %d, %e : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
