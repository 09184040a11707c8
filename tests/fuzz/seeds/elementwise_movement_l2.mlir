// L2 form of models/zoo/elementwise_movement.tflite (qd-import | qd-opt -p qnn-decompose), a fuzzing seed
builtin.module @elementwise_movement {
  func.func @main(%0: tensor<1x6x8x4xi8> {tflite.name = "input_0"}, %1: tensor<1x6x8x4xi8> {tflite.name = "input_1"}) -> (tensor<1x20xi8> {tflite.name = "Identity"}, tensor<1x6x14x20xi8> {tflite.name = "Identity_1"}) {
    %2 = qint.rescale %0 {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 0>, input_zp = 12 : i64, left_shift = 20 : i64} : (tensor<1x6x8x4xi8>) -> tensor<1x6x8x4xi32>
    %3 = qint.rescale %1 {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 0>, input_zp = 12 : i64, left_shift = 20 : i64} : (tensor<1x6x8x4xi8>) -> tensor<1x6x8x4xi32>
    %4 = qint.add %2, %3 : (tensor<1x6x8x4xi32>, tensor<1x6x8x4xi32>) -> tensor<1x6x8x4xi32>
    %5 = qint.rescale %4 {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: -18>, output_zp = 12 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64} : (tensor<1x6x8x4xi32>) -> tensor<1x6x8x4xi8>
    %6 = qint.maximum %0, %1 : (tensor<1x6x8x4xi8>, tensor<1x6x8x4xi8>) -> tensor<1x6x8x4xi8>
    %7 = qint.minimum %0, %1 : (tensor<1x6x8x4xi8>, tensor<1x6x8x4xi8>) -> tensor<1x6x8x4xi8>
    %8 = qint.mul %0, %1 {lhs_zp = 12 : i64, rhs_zp = 12 : i64} : (tensor<1x6x8x4xi8>, tensor<1x6x8x4xi8>) -> tensor<1x6x8x4xi32>
    %9 = qint.rescale %8 {mode = "double_round", multiplier = array<i64: 1491976704>, shift = array<i64: -3>, output_zp = 12 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64} : (tensor<1x6x8x4xi32>) -> tensor<1x6x8x4xi8>
    %10 = qint.rescale %0 {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 0>, input_zp = 12 : i64, left_shift = 20 : i64} : (tensor<1x6x8x4xi8>) -> tensor<1x6x8x4xi32>
    %11 = qint.rescale %1 {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 0>, input_zp = 12 : i64, left_shift = 20 : i64} : (tensor<1x6x8x4xi8>) -> tensor<1x6x8x4xi32>
    %12 = qint.sub %10, %11 : (tensor<1x6x8x4xi32>, tensor<1x6x8x4xi32>) -> tensor<1x6x8x4xi32>
    %13 = qint.rescale %12 {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: -18>, output_zp = 12 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64} : (tensor<1x6x8x4xi32>) -> tensor<1x6x8x4xi8>
    %14 = tensor.concat dim(3) %5, %13, %9, %6, %7 : (tensor<1x6x8x4xi8>, tensor<1x6x8x4xi8>, tensor<1x6x8x4xi8>, tensor<1x6x8x4xi8>, tensor<1x6x8x4xi8>) -> tensor<1x6x8x20xi8>
    %15 = arith.constant dense<[127, -9, 115, -36, -23, -69, -40, -23, 124, -35, 5, 43, 101, 101, 58, 55, 72, -45, -56, 103]> : tensor<20xi8>
    %16 = qint.mul %14, %15 {lhs_zp = 12 : i64, rhs_zp = -128 : i64} : (tensor<1x6x8x20xi8>, tensor<20xi8>) -> tensor<1x6x8x20xi32>
    %17 = qint.rescale %16 {mode = "double_round", multiplier = array<i64: 2111951232>, shift = array<i64: -7>, output_zp = 12 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64} : (tensor<1x6x8x20xi32>) -> tensor<1x6x8x20xi8>
    %18 = tensor.collapse_shape %17 [[0 : i64, 1 : i64, 2 : i64, 3 : i64]] : tensor<1x6x8x20xi8> into tensor<960xi8>
    %19 = tensor.expand_shape %18 [[0 : i64, 1 : i64, 2 : i64, 3 : i64]] output_shape [1, 12, 4, 20] : tensor<960xi8> into tensor<1x12x4x20xi8>
    %20 = tensor.empty() : tensor<1x4x12x20xi8>
    %21 = linalg.transpose ins(%19:tensor<1x12x4x20xi8>) outs(%20:tensor<1x4x12x20xi8>) permutation = [0, 2, 1, 3]
    %22 = arith.constant 12 : i8
    %23 = tensor.pad %21 low[0, 1, 2, 0] high[0, 1, 0, 0] {
    ^bb0(%24: index, %25: index, %26: index, %27: index):
      tensor.yield %22 : i8
    } : tensor<1x4x12x20xi8> to tensor<1x6x14x20xi8>
    %28 = qint.reduce_sum %23 {axes = array<i64: 1, 2>, keep_dims = false} : (tensor<1x6x14x20xi8>) -> tensor<1x20xi32>
    %29 = qint.rescale %28 {mode = "double_round", multiplier = array<i64: 1231795121>, shift = array<i64: -2>, input_zp = 1008 : i64, output_zp = -5 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64} : (tensor<1x20xi32>) -> tensor<1x20xi8>
    func.return %29, %23 : tensor<1x20xi8>, tensor<1x6x14x20xi8>
  }
}

