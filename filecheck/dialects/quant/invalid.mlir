// RUN: %qd-opt %s --split-input-file --verify-diagnostics
// RUN: not %qd-opt %s 2>&1 | filecheck %s --check-prefix=ONELINE

// One case per rule of MLIR 22's quant dialect that we share; each diagnostic names the bad
// value.  (Zero points outside the storage range, i1 storage and f64 expressed types are valid
// types, as in MLIR: the qnn ops refuse them, see ../qnn/invalid.mlir.)

// ONELINE: {{.*}}invalid.mlir:11:59: error: quant.uniform: scale 0.000000e+00 out of expressed type range [1.401298e-45, 3.402823e+38] of f32
// ONELINE-NOT: Traceback
// expected-error@+1 {{quant.uniform: scale 0.000000e+00 out of expressed type range [1.401298e-45, 3.402823e+38] of f32}}
func.func @zero_scale(%a: tensor<4x!quant.uniform<i8:f32, 0.0>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: scale -5.000000e-01 out of expressed type range [1.401298e-45, 3.402823e+38] of f32}}
func.func @negative_scale(%a: tensor<4x!quant.uniform<i8:f32, -0.5>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: scale 1.000000e-50 out of expressed type range [1.401298e-45, 3.402823e+38] of f32}}
func.func @tiny_scale(%a: tensor<4x!quant.uniform<i8:f32, 1.0e-50>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: scale 1.000000e+39 out of expressed type range [1.401298e-45, 3.402823e+38] of f32}}
func.func @huge_scale(%a: tensor<4x!quant.uniform<i8:f32, 1.0e39>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: scale 7.000000e+04 out of expressed type range [5.960464e-08, 6.550400e+04] of f16}}
func.func @f16_scale(%a: tensor<4x!quant.uniform<i8:f16, 70000.0>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: scale 5.800000e-08 out of expressed type range [5.960464e-08, 6.550400e+04] of f16}}
func.func @f16_subnormal_scale(%a: tensor<4x!quant.uniform<i8:f16, 5.8e-8>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: scale (element 1) must be a float literal (add '.0')}}
func.func @integer_scale(%a: tensor<3x!quant.uniform<i8:f32:0, {0.5, 1, 0.5}>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: illegal quantized dimension: -1 (negative axis)}}
func.func @negative_axis(%a: tensor<2x!quant.uniform<i8:f32:-1, {0.5, 0.5}>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: illegal storage type maximum: 200 is above i8's 127}}
func.func @range_outside(%a: tensor<4x!quant.uniform<i8<-127:200>:f32, 0.5>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: illegal storage min and storage max: (5:5) is an empty range}}
func.func @range_empty(%a: tensor<4x!quant.uniform<i8<5:5>:f32, 0.5>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: illegal storage type size: 64 ('u64'; MLIR takes 1..32 bits)}}
func.func @width_too_big(%a: tensor<4x!quant.uniform<u64:f32, 0.5>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: illegal storage type prefix: expected iN, uN, siN or uiN, got 'int8'}}
func.func @bad_storage(%a: tensor<4x!quant.uniform<int8:f32, 0.5>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: expressed type i32 is not a float type}}
func.func @bad_expressed(%a: tensor<4x!quant.uniform<i8:i32, 0.5>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: illegal block size: 0 for axis 1 (must be > 0)}}
func.func @zero_block(%a: tensor<2x4x!quant.uniform<i8:f32:{1:0}, {{0.5}}>>) { func.return }

// -----
// expected-error@+1 {{quant.uniform: tensor literal is invalid; ranks are not consistent between elements}}
func.func @ragged_scales(%a: tensor<2x4x!quant.uniform<i8:f32:{}, {{0.5}, 0.5}>>) { func.return }

// -----
// expected-error@+1 {{unknown quantized type foobar}}
func.func @unknown_type(%a: tensor<4x!quant.foobar<i8>>) { func.return }

// -----
// expected-error@+1 {{quant.calibrated: illegal min and max: (1.000000e+00:-1.000000e+00) (max must exceed min)}}
func.func @calibrated_empty(%a: tensor<4x!quant.calibrated<f32<1.0:-1.0>>>) { func.return }

// -----
// expected-error@+1 {{quant.any: illegal storage type size: 33 ('i33'; MLIR takes 1..32 bits)}}
func.func @any_width(%a: tensor<4x!quant.any<i33:f32>>) { func.return }

// -----
func.func @dcast_f64(%a: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{quant.dcast: result float type f64 is not the expressed type f32 of !quant.uniform<i8:f32, 5.000000e-01>}}
  %0 = quant.dcast %a : tensor<4x!quant.uniform<i8:f32, 0.5>> to tensor<4xf64>
  func.return
}

// -----
func.func @dcast_per_axis_scalar(%a: !quant.uniform<i8:f32:0, {0.5, 0.25}>) {
  // expected-error@+1 {{quant.dcast operand: scalar types may not use per-axis quantization: !quant.uniform<i8:f32:0, {5.000000e-01,2.500000e-01}> is not a tensor}}
  %0 = quant.dcast %a : !quant.uniform<i8:f32:0, {0.5, 0.25}> to f32
  func.return
}

// -----
func.func @qcast_blocks(%a: tensor<2x6xf32>) {
  // expected-error@+1 {{quant.qcast result: tensor dimension size 6 at axis 1 must be divisible by the corresponding block size 4}}
  %0 = quant.qcast %a : tensor<2x6xf32> to tensor<2x6x!quant.uniform<i8:f32:{0:1, 1:4}, {{0.5}, {0.25}}>>
  func.return
}

// -----
func.func @qcast_expressed(%a: tensor<4xf16>) {
  // expected-error@+1 {{quant.qcast: operand float type f16 is not the expressed type f32 of !quant.uniform<i8:f32, 5.000000e-01>}}
  %0 = quant.qcast %a : tensor<4xf16> to tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @dcast_expressed(%a: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{quant.dcast: result float type bf16 is not the expressed type f32 of !quant.uniform<i8:f32, 5.000000e-01>}}
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
  // expected-error@+1 {{quant.qcast: operand type tensor<4xf32> and result type tensor<5x!quant.uniform<i8:f32, 5.000000e-01>> differ in shape}}
  %0 = quant.qcast %a : tensor<4xf32> to tensor<5x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----
func.func @scast_width(%a: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{quant.scast: integer type i16 is not the storage type i8 of !quant.uniform<i8:f32, 5.000000e-01>}}
  %0 = quant.scast %a : tensor<4x!quant.uniform<i8:f32, 0.5>> to tensor<4xi16>
  func.return
}

// -----
func.func @scast_both(%a: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error@+1 {{quant.scast: exactly one of !quant.uniform<i8:f32, 5.000000e-01> and !quant.uniform<i8:f32, 5.000000e-01> must be quantized}}
  %0 = quant.scast %a : tensor<4x!quant.uniform<i8:f32, 0.5>> to tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return
}
