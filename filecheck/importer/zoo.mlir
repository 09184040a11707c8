// qd-import on the model zoo: the printed L1 module, re-read by qd-opt.
// RUN: %qd-import %S/../../models/zoo/mobilenetv2_tiny.tflite | filecheck %s --check-prefix=MBV2
// RUN: %qd-import %S/../../models/zoo/mobilenetv2_tiny.tflite | %qd-opt | filecheck %s --check-prefix=MBV2
// RUN: %qd-import %S/../../models/zoo/cnn_small.tflite --batch 4 | filecheck %s --check-prefix=CNN
// RUN: %qd-import %S/../../models/zoo/cnn_small_uint8.tflite | filecheck %s --check-prefix=U8
// RUN: %qd-import %S/../../models/zoo/cnn_small_16x8.tflite | filecheck %s --check-prefix=I16
// RUN: not %qd-import %S/../../models/zoo/cnn_small_float.tflite 2>&1 | filecheck %s --check-prefix=FLOAT
// RUN: not %qd-import %s 2>&1 | filecheck %s --check-prefix=NOTTFLITE

// MBV2: builtin.module @mobilenetv2_tiny {
// MBV2-NEXT: func.func @main(%{{.*}}: tensor<1x48x48x3x!quant.uniform<i8:f32, 0.0078431377187371254:-1>> {tflite.name = "input_0"}) -> (tensor<1x10x!quant.uniform<i8:f32, 3.906250e-03:-128>> {tflite.name = "Identity"})
// Weights are per-channel constants in hex, the bias is i32 with scale in_s * w_s[c].
// MBV2: qnn.constant dense<"0x{{[0-9A-F]+}}"> : tensor<16x3x3x3x!quant.uniform<i8:f32:0, {0.010987777262926102,
// MBV2: qnn.constant dense<"0x{{[0-9A-F]+}}"> : tensor<16x!quant.uniform<i32:f32:0, {8.6178653873503208E-5,
// Stride-2 SAME on an even input: the extra padding row/column goes after.
// MBV2: qnn.conv2d %{{.*}} {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 1, 0, 1>, act_min = -128 : i64, act_max = 127 : i64}
// MBV2: qnn.depthwise_conv2d %{{.*}} {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, act_min = -128 : i64, act_max = 127 : i64} : ({{.*}}tensor<1x3x3x16x!quant.uniform<i8:f32:3,
// Linear bottleneck: no fused activation, no clamp attributes.
// MBV2: qnn.conv2d %{{.*}} {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} :
// MBV2: qnn.add
// MBV2: qnn.mean %{{.*}} {axes = array<i64: 1, 2>, keep_dims = false}
// MBV2: qnn.fully_connected
// MBV2: qnn.softmax %{{.*}} {beta = 1.000000e+00 : f64} : (tensor<1x10x!quant.uniform<i8:f32, {{.*}}>>) -> tensor<1x10x!quant.uniform<i8:f32, 3.906250e-03:-128>>
// MBV2-NEXT: func.return

// The Keras Flatten (SHAPE, STRIDED_SLICE, PACK) folds away for the chosen batch.
// CNN: func.func @main(%{{.*}}: tensor<4x32x32x3x!quant.uniform<i8:f32, 0.0039215688593685627:-128>> {tflite.name = "input_0"}) -> (tensor<4x10x
// CNN: qnn.avg_pool2d
// CNN-NEXT: qnn.reshape %{{.*}} : (tensor<4x8x8x16x!quant.uniform<i8:f32, 0.0070829461328685284:-128>>) -> tensor<4x1024x!quant.uniform<i8:f32, 0.0070829461328685284:-128>>
// CNN-NOT: qnn.slice

// QUANTIZE between uint8 and int8 at the edges is a requantize.
// U8: func.func @main(%[[X:.*]]: tensor<1x32x32x3x!quant.uniform<u8:f32, 0.0039215688593685627>>
// U8-NEXT: qnn.requantize %[[X]] : (tensor<1x32x32x3x!quant.uniform<u8:f32, 0.0039215688593685627>>) -> tensor<1x32x32x3x!quant.uniform<i8:f32, 0.0039215688593685627:-128>>
// U8: qnn.requantize %{{.*}} -> tensor<1x10x!quant.uniform<u8:f32, 3.906250e-03>>

// 16x8: int16 activations, int64 bias as a plain i64 tensor, int64 accumulator.
// I16: qnn.constant dense<"0x{{[0-9A-F]+}}"> : tensor<8xi64>
// I16: qnn.conv2d %{{.*}} {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, act_min = 0 : i64, act_max = 32767 : i64, acc = "i64"} : (tensor<1x32x32x3x!quant.uniform<i16:f32, {{.*}}>>, tensor<8x3x3x3x!quant.uniform<i8:f32:0, {{.*}}>>, tensor<8xi64>)

// FLOAT: qd-import: error: {{.*}}cnn_small_float.tflite: this model is float32 (no quantized tensors): qd-import needs a fully integer-quantized model; float import arrives with qd-quantize
// NOTTFLITE: qd-import: error: {{.*}}zoo.mlir: not a TFLite model: flatbuffer identifier
