// qd-import --float: a float32 model as a graph of nn ops, re-read by qd-opt.
// RUN: %qd-import --float %S/../../models/zoo/mlp_act_float.tflite | filecheck %s
// RUN: %qd-import --float %S/../../models/zoo/mlp_act_float.tflite | %qd-opt | filecheck %s
// RUN: %qd-import --float %S/../../models/zoo/cnn_small_float.tflite | filecheck %s --check-prefix=CNN
// RUN: not %qd-import --float %S/../../models/zoo/cnn_small.tflite 2>&1 | filecheck %s --check-prefix=QUANTIZED

// Weights and biases are f32 constants in hex; SSA names are the TFLite tensor names.
// CHECK: builtin.module @mlp_act_float {
// CHECK-NEXT: func.func @main(%input: tensor<1x64xf32> {tflite.name = "input_0"}) -> (tensor<1x10xf32> {tflite.name = "Identity"})
// CHECK-NEXT: %0 = nn.constant dense<"0x{{[0-9A-F]+}}"> : tensor<64x64xf32>
// CHECK-NEXT: %1 = nn.constant dense<"0x{{[0-9A-F]+}}"> : tensor<64xf32>
// CHECK-NEXT: %mlp_act_1_fc_tanh_1_MatMul = nn.fully_connected %input, %0, %1 : (tensor<1x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<1x64xf32>
// CHECK-NEXT: %mlp_act_1_fc_tanh_1_Tanh = nn.tanh %mlp_act_1_fc_tanh_1_MatMul
// CHECK: nn.logistic
// CHECK: %mlp_act_1_leaky_relu_1_LeakyRelu = nn.leaky_relu %mlp_act_1_fc3_1_MatMul {alpha = 0.20000000298023224 : f64}
// CHECK: %mlp_act_1_hard_swish_1_mul = nn.hard_swish %mlp_act_1_fc4_1_MatMul
// CHECK: func.return %Identity : tensor<1x10xf32>

// Fused relu is the real clamp act_min = 0.0; SAME padding is explicit; the
// Keras Flatten's shape arithmetic is folded into one nn.reshape.
// CNN: %cnn_small_1_conv1_1_Relu = nn.conv2d %input, %0, %1 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, act_min = 0.000000e+00 : f64} : (tensor<1x32x32x3xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x32x32x8xf32>
// CNN: nn.max_pool2d
// CNN: nn.avg_pool2d
// CNN: %cnn_small_1_flatten_1_Reshape = nn.reshape %cnn_small_1_avgpool_1_AvgPool : (tensor<1x8x8x16xf32>) -> tensor<1x1024xf32>
// CNN: nn.softmax {{.*}} {beta = 1.000000e+00 : f64}

// QUANTIZED: qd-import: error: {{.*}}cnn_small.tflite: this model has quantized tensors: it is already quantized (import it with qd-import), the float import reads float32 models
