// RUN: %qd-opt %s --split-input-file --verify-diagnostics
// RUN: not %qd-opt %s 2>&1 | filecheck %s --check-prefix=ONELINE

// One case per verifier rule; each diagnostic names the bad value.

// ONELINE: {{.*}}invalid.mlir:9:59: error: quant.uniform: scale 0.0 must be finite and > 0
// ONELINE-NOT: Traceback
// expected-error@+1 {{quant.uniform: scale 0.0 must be finite and > 0}}
func.func @zero_scale(%a: tensor<4x!quant.uniform<i8:f32, 0.0>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: scale -0.5 must be finite and > 0}}
func.func @negative_scale(%a: tensor<4x!quant.uniform<i8:f32, -0.5>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: scale 1.0e-50 is not representable in f32}}
func.func @underflowing_scale(%a: tensor<4x!quant.uniform<i8:f32, 1.0e-50>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: scale 1.0e+39 is not representable in f32}}
func.func @overflowing_scale(%a: tensor<4x!quant.uniform<i8:f32, 1.0e39>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: scale 70000.0 is not representable in f16}}
func.func @f16_scale(%a: tensor<4x!quant.uniform<i8:f16, 70000.0>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: scale (index 1 on axis 0) must be a float literal (add '.0')}}
func.func @integer_scale(%a: tensor<2x!quant.uniform<i8:f32:0, {0.5, 3}>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: zero point 200 is outside i8 [-128:127]}}
func.func @zero_point_high(%a: tensor<4x!quant.uniform<i8:f32, 0.5:200>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: zero point -1 is outside u8 [0:255]}}
func.func @zero_point_unsigned(%a: tensor<4x!quant.uniform<u8:f32, 0.5:-1>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: zero point -128 is outside i8 [-127:127]}}
func.func @zero_point_narrowed(%a: tensor<4x!quant.uniform<i8<-127:127>:f32, 0.5:-128>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: zero point 9 (index 2 on axis 0) is outside i4 [-8:7]}}
func.func @zero_point_per_axis(%a: tensor<3x!quant.uniform<i4:f32:0, {0.5, 0.5:1, 0.5:9}>>) { func.return }

// -----
// expected-error@+1 {{func.func: block argument 0: 2 per-axis scales but dimension 1 of tensor<3x4x!quant.uniform<i8:f32:1, {0.5, 0.25}>> has size 4}}
func.func @per_axis_length(%a: tensor<3x4x!quant.uniform<i8:f32:1, {0.5, 0.25}>>) { func.return }

// -----
// expected-error@+1 {{func.func: block argument 0: axis 2 is out of range for rank-2 tensor<3x4x!quant.uniform<i8:f32:2, {0.5}>>}}
func.func @axis_out_of_rank(%a: tensor<3x4x!quant.uniform<i8:f32:2, {0.5}>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: axis -1 is negative}}
func.func @negative_axis(%a: tensor<3x!quant.uniform<i8:f32:-1, {0.5}>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: storage range [-127:200] is outside i8 [-128:127]}}
func.func @range_outside(%a: tensor<4x!quant.uniform<i8<-127:200>:f32, 0.5>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: storage range [5:5] is empty}}
func.func @range_empty(%a: tensor<4x!quant.uniform<i8<5:5>:f32, 0.5>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: storage width 1 of 'i1' is outside 2..32}}
func.func @width_1(%a: tensor<4x!quant.uniform<i1:f32, 0.5>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: storage width 64 of 'u64' is outside 2..32}}
func.func @width_64(%a: tensor<4x!quant.uniform<u64:f32, 0.5>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: expected a storage type like i8 or u8}}
func.func @bad_storage(%a: tensor<4x!quant.uniform<si8:f32, 0.5>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: expressed type f64 is not one of f16, bf16, f32}}
func.func @bad_expressed(%a: tensor<4x!quant.uniform<i8:f64, 0.5>>) { func.return }

// -----
func.func @qcast_expressed(%a: tensor<4xf16>) {
  // expected-error@+1 {{quant.qcast: operand float type f16 is not the expressed type f32 of !quant.uniform<i8:f32, 0.5>}}
  %0 = quant.qcast %a : tensor<4xf16> to tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @dcast_expressed(%a: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{quant.dcast: result float type bf16 is not the expressed type f32 of !quant.uniform<i8:f32, 0.5>}}
  %0 = quant.dcast %a : tensor<4x!quant.uniform<i8:f32, 0.5>> to tensor<4xbf16>
  func.return
}

// -----
func.func @dcast_not_quantized(%a: tensor<4xf32>) {
  // expected-error@+1 {{quant.dcast: operand element type f32 is not quantized}}
  %0 = quant.dcast %a : tensor<4xf32> to tensor<4xf32>
  func.return
}

// -----
func.func @qcast_shape(%a: tensor<4xf32>) {
  // expected-error@+1 {{quant.qcast: operand type tensor<4xf32> and result type tensor<5x!quant.uniform<i8:f32, 0.5>> differ in shape}}
  %0 = quant.qcast %a : tensor<4xf32> to tensor<5x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @scast_width(%a: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{quant.scast: integer type i16 is not the storage type i8 of !quant.uniform<i8:f32, 0.5>}}
  %0 = quant.scast %a : tensor<4x!quant.uniform<i8:f32, 0.5>> to tensor<4xi16>
  func.return
}

// -----
func.func @scast_both(%a: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{quant.scast: exactly one of !quant.uniform<i8:f32, 0.5> and !quant.uniform<i8:f32, 0.5> must be quantized}}
  %0 = quant.scast %a : tensor<4x!quant.uniform<i8:f32, 0.5>> to tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return
}
