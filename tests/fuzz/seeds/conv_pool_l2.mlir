// L2 form of a small conv / depthwise / max pool / avg pool graph (GraphBuilder | qd-opt -p qnn-decompose), a fuzzing seed
builtin.module {
  func.func @main(%0: tensor<1x6x6x2xi8>) -> (tensor<1x1x4x3xi8>, tensor<1x2x5x3xi8>, tensor<1x2x3x3xi8>) {
    %1 = arith.constant dense<[[[[44, 78], [-122, 79], [-8, 4]], [[33, -55], [122, -114], [-57, -30]], [[18, -23], [-94, -116], [-127, -115]]], [[[-90, 127], [-79, 39], [64, -68]], [[-56, -17], [-60, 121], [-82, 101]], [[76, 88], [-98, -27], [33, -2]]], [[[42, 45], [42, -112], [117, 14]], [[103, -58], [-35, 97], [-80, -111]], [[-32, 46], [-96, 94], [-41, -70]]]]> : tensor<3x3x3x2xi8>
    %2 = arith.constant dense<[5, -7, 100]> : tensor<3xi32>
    %3 = qint.conv2d %0, %1 {input_zp = -3 : i64, weight_zp = 0 : i64, strides = array<i64: 2, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 1, 1, 1>} : (tensor<1x6x6x2xi8>, tensor<3x3x3x2xi8>) -> tensor<1x3x6x3xi32>
    %4 = qint.bias_add %3, %2 : (tensor<1x3x6x3xi32>, tensor<3xi32>) -> tensor<1x3x6x3xi32>
    %5 = qint.rescale %4 {mode = "double_round", multiplier = array<i64: 1717986944, 1717986944, 1288490240>, shift = array<i64: -2, -1, 0>, output_zp = 5 : i64, clamp_min = 5 : i64, clamp_max = 127 : i64} : (tensor<1x3x6x3xi32>) -> tensor<1x3x6x3xi8>
    %6 = arith.constant dense<[[[[11, 101, 98], [95, -49, -123], [71, 53, 69]], [[-127, -118, 1], [-42, -16, 110], [-76, 7, -45]], [[-52, 78, -88], [-47, -97, -89], [-56, 51, 20]]]]> : tensor<1x3x3x3xi8>
    %7 = arith.constant dense<[1, 2, 3]> : tensor<3xi32>
    %8 = qint.depthwise_conv2d %5, %6 {input_zp = 5 : i64, weight_zp = 0 : i64, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x3x6x3xi8>, tensor<1x3x3x3xi8>) -> tensor<1x1x4x3xi32>
    %9 = qint.bias_add %8, %7 : (tensor<1x1x4x3xi32>, tensor<3xi32>) -> tensor<1x1x4x3xi32>
    %10 = qint.rescale %9 {mode = "double_round", multiplier = array<i64: 1431655730, 1431655730, 1431655730>, shift = array<i64: -3, -4, -2>, output_zp = -1 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64} : (tensor<1x1x4x3xi32>) -> tensor<1x1x4x3xi8>
    %11 = qint.pool_max %5 {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x3x6x3xi8>) -> tensor<1x2x5x3xi8>
    %12 = qint.pool_sum %5 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 1, 0, 0>} : (tensor<1x3x6x3xi8>) -> tensor<1x2x3x3xi32>
    %13 = arith.constant dense<[[[[4], [4], [4]], [[2], [2], [2]]]]> : tensor<1x2x3x1xi32>
    %14 = qint.divide_round %12, %13 {rounding = "away"} : (tensor<1x2x3x3xi32>, tensor<1x2x3x1xi32>) -> tensor<1x2x3x3xi32>
    %15 = qint.rescale %14 {mode = "none", clamp_min = -128 : i64, clamp_max = 127 : i64} : (tensor<1x2x3x3xi32>) -> tensor<1x2x3x3xi8>
    func.return %10, %11, %15 : tensor<1x1x4x3xi8>, tensor<1x2x5x3xi8>, tensor<1x2x3x3xi8>
  }
}

