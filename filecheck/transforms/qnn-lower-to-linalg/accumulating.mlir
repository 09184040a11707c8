// REQUIRES: mlir-opt
// RUN: %qd-opt %s -p qnn-lower-to-linalg | filecheck %s
// RUN: %qd-opt %s -p qnn-lower-to-linalg | %mlir-opt --verify-each | filecheck %s --check-prefix=MLIR

// Accumulating qint ops -> linalg.  The second RUN line has MLIR 22's own mlir-opt verify the L3.

// Constant weights with zero point 0: the input is padded with its zero point (padding
// [top 0, bottom 1, left 0, right 1] -> low [0, 0, 0, 0], high [0, 1, 1, 0]), the named
// linalg.conv_2d_nhwc_fhwc sums x * w in i32, and a generic subtracts input_zp * sum(w[o]):
// -3 * (1 + ... + 12) = -234 for filter 0 and +234 for filter 1.  With input_zp 0 there is no
// correction; dilations go to the named op.
// CHECK-LABEL: func.func @conv_named
// CHECK:         %[[ZP:.*]] = arith.constant -3 : i8
// CHECK-NEXT:    %[[P:.*]] = tensor.pad %{{.*}} low[0, 0, 0, 0] high[0, 1, 1, 0] {
// CHECK:           tensor.yield %[[ZP]] : i8
// CHECK-NEXT:    } : tensor<1x4x4x3xi8> to tensor<1x5x5x3xi8>
// CHECK:         %[[INIT:.*]] = linalg.fill ins(%{{.*}} : i32)
// CHECK-NEXT:    %[[CONV:.*]] = linalg.conv_2d_nhwc_fhwc {strides = dense<2> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%[[P]], %{{.*}} : tensor<1x5x5x3xi8>, tensor<2x2x2x3xi8>) outs(%[[INIT]] : tensor<1x2x2x2xi32>) -> tensor<1x2x2x2xi32>
// CHECK-NEXT:    %[[CORR:.*]] = arith.constant dense<[-234, 234]> : tensor<2xi64>
// CHECK-NEXT:    tensor.empty() : tensor<1x2x2x2xi32>
// CHECK-NEXT:    %[[R:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[CONV]], %[[CORR]] : tensor<1x2x2x2xi32>, tensor<2xi64>)
// CHECK-NEXT:    ^bb0(%[[A:.*]]: i32, %[[C:.*]]: i64, %{{.*}}: i32):
// CHECK-NEXT:      %[[A64:.*]] = arith.extsi %[[A]] : i32 to i64
// CHECK-NEXT:      %[[D:.*]] = arith.subi %[[A64]], %[[C]] : i64
// CHECK-NEXT:      %[[T:.*]] = arith.trunci %[[D]] : i64 to i32
// CHECK-NEXT:      linalg.yield %[[T]] : i32
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : i8
// CHECK-NEXT:    tensor.pad %{{.*}} low[0, 1, 1, 0] high[0, 0, 0, 0]
// CHECK:         %[[DIL:.*]] = linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<2> : tensor<2xi64>}
// CHECK-NEXT:    func.return %[[R]], %[[DIL]]
// MLIR-LABEL:  func.func @conv_named
// MLIR:          tensor.pad
// MLIR:          linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// MLIR:          linalg.conv_2d_nhwc_fhwc {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
func.func @conv_named(%x: tensor<1x4x4x3xi8>) -> (tensor<1x2x2x2xi32>, tensor<1x3x3x2xi32>) {
  %w = arith.constant dense<[[[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]], [[[-1, -2, -3], [-4, -5, -6]], [[-7, -8, -9], [-10, -11, -12]]]]> : tensor<2x2x2x3xi8>
  %0 = qint.conv2d %x, %w {input_zp = -3 : i64, weight_zp = 0 : i64, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 1, 0, 1>} : (tensor<1x4x4x3xi8>, tensor<2x2x2x3xi8>) -> tensor<1x2x2x2xi32>
  %1 = qint.conv2d %x, %w {input_zp = 0 : i64, weight_zp = 0 : i64, dilations = array<i64: 2, 2>, padding = array<i64: 1, 0, 1, 0>} : (tensor<1x4x4x3xi8>, tensor<2x2x2x3xi8>) -> tensor<1x3x3x2xi32>
  func.return %0, %1 : tensor<1x2x2x2xi32>, tensor<1x3x3x2xi32>
}

// The same convolution whose only user is a bias_add of a constant bias: the correction folds
// into the bias, one generic adding bias - input_zp * sum(w[o]) wrapped to i32 (both wrap modulo
// 2^32, so every sum is the same): [100 - (-234), -2^31 - 234 + 2^32] = [334, 2147483414].  The
// bias_add's result is that generic's; the bias constant, read by nothing else, is gone.
// CHECK-LABEL: func.func @conv_bias
// CHECK-NOT:     dense<[100, -2147483648]>
// CHECK:         %[[CONV:.*]] = linalg.conv_2d_nhwc_fhwc
// CHECK-NEXT:    %[[SUM:.*]] = arith.constant dense<[334, 2147483414]> : tensor<2xi32>
// CHECK-NEXT:    tensor.empty() : tensor<1x2x2x2xi32>
// CHECK-NEXT:    %[[R:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[CONV]], %[[SUM]] : tensor<1x2x2x2xi32>, tensor<2xi32>)
// CHECK-NEXT:    ^bb0(%[[A:.*]]: i32, %[[B:.*]]: i32, %{{.*}}: i32):
// CHECK-NEXT:      %[[S:.*]] = arith.addi %[[A]], %[[B]] : i32
// CHECK-NEXT:      linalg.yield %[[S]] : i32
// CHECK:         func.return %[[R]] : tensor<1x2x2x2xi32>
// MLIR-LABEL:  func.func @conv_bias
// MLIR:          linalg.conv_2d_nhwc_fhwc
// MLIR:          arith.addi
func.func @conv_bias(%x: tensor<1x4x4x3xi8>) -> tensor<1x2x2x2xi32> {
  %w = arith.constant dense<[[[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]], [[[-1, -2, -3], [-4, -5, -6]], [[-7, -8, -9], [-10, -11, -12]]]]> : tensor<2x2x2x3xi8>
  %b = arith.constant dense<[100, -2147483648]> : tensor<2xi32>
  %0 = qint.conv2d %x, %w {input_zp = -3 : i64, weight_zp = 0 : i64, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 1, 0, 1>} : (tensor<1x4x4x3xi8>, tensor<2x2x2x3xi8>) -> tensor<1x2x2x2xi32>
  %1 = qint.bias_add %0, %b : (tensor<1x2x2x2xi32>, tensor<2xi32>) -> tensor<1x2x2x2xi32>
  func.return %1 : tensor<1x2x2x2xi32>
}

// Weights that are not a constant (or a weight zero point): one generic over (n, y, x, o, ky, kx, i)
// with both zero points subtracted in the body, here in the i16 accumulator type (wrapping in i16
// is the same as the exact sum wrapped).
// CHECK-LABEL: func.func @conv_generic
// CHECK:         %[[INIT:.*]] = linalg.fill ins(%{{.*}} : i16) outs(%{{.*}} : tensor<1x3x3x2xi16>)
// CHECK-NEXT:    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, (d1 + d4), (d2 + d5), d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d3, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<1x4x4x3xi8>, tensor<2x2x2x3xi8>) outs(%[[INIT]] : tensor<1x3x3x2xi16>)
// CHECK-NEXT:    ^bb0(%[[X:.*]]: i8, %[[W:.*]]: i8, %[[ACC:.*]]: i16):
// CHECK-NEXT:      %[[X16:.*]] = arith.extsi %[[X]] : i8 to i16
// CHECK-NEXT:      %[[IZP:.*]] = arith.constant 5 : i16
// CHECK-NEXT:      %[[XC:.*]] = arith.subi %[[X16]], %[[IZP]] : i16
// CHECK-NEXT:      %[[W16:.*]] = arith.extsi %[[W]] : i8 to i16
// CHECK-NEXT:      %[[WZP:.*]] = arith.constant 2 : i16
// CHECK-NEXT:      %[[WC:.*]] = arith.subi %[[W16]], %[[WZP]] : i16
// CHECK-NEXT:      %[[P:.*]] = arith.muli %[[XC]], %[[WC]] : i16
// CHECK-NEXT:      %[[S:.*]] = arith.addi %[[ACC]], %[[P]] : i16
// CHECK-NEXT:      linalg.yield %[[S]] : i16
// MLIR-LABEL:  func.func @conv_generic
// MLIR:          linalg.generic
func.func @conv_generic(%x: tensor<1x4x4x3xi8>, %w: tensor<2x2x2x3xi8>) -> tensor<1x3x3x2xi16> {
  %0 = qint.conv2d %x, %w {input_zp = 5 : i64, weight_zp = 2 : i64} : (tensor<1x4x4x3xi8>, tensor<2x2x2x3xi8>) -> tensor<1x3x3x2xi16>
  func.return %0 : tensor<1x3x3x2xi16>
}

// Depthwise with channel multiplier M = 2 (C = 2 inputs, 4 outputs): the weights [1, KH, KW, C*M]
// are reshaped to [KH, KW, C, M], the generic runs over (n, y, x, c, m, ky, kx) into [N, OH, OW, C, M],
// and output channel c*M + m comes back by collapsing the last two dims.
// CHECK-LABEL: func.func @depthwise
// CHECK:         %[[W4:.*]] = tensor.expand_shape %{{.*}} output_shape [2, 2, 2, 2] : tensor<16xi8> into tensor<2x2x2x2xi8>
// CHECK:         %[[ACC:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, (d1 + d5), (d2 + d6), d3)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d5, d6, d3, d4)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}}, %[[W4]] : tensor<1x3x3x2xi8>, tensor<2x2x2x2xi8>) outs(%{{.*}} : tensor<1x2x2x2x2xi32>)
// CHECK:           arith.constant -3 : i32
// CHECK:         tensor.collapse_shape %[[ACC]] {{\[\[}}0 : i64], [1 : i64], [2 : i64], [3 : i64, 4 : i64]] : tensor<1x2x2x2x2xi32> into tensor<1x2x2x4xi32>
// MLIR-LABEL:  func.func @depthwise
// MLIR:          tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2], [3, 4]] : tensor<1x2x2x2x2xi32> into tensor<1x2x2x4xi32>
func.func @depthwise(%x: tensor<1x3x3x2xi8>) -> tensor<1x2x2x4xi32> {
  %w = arith.constant dense<[[[[1, 2, 3, 4], [5, 6, 7, 8]], [[9, 10, 11, 12], [13, 14, 15, 16]]]]> : tensor<1x2x2x4xi8>
  %0 = qint.depthwise_conv2d %x, %w {input_zp = -3 : i64, weight_zp = 0 : i64, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x3x3x2xi8>, tensor<1x2x2x4xi8>) -> tensor<1x2x2x4xi32>
  func.return %0 : tensor<1x2x2x4xi32>
}

// Depthwise with M = 1, stride 2: no reshapes; the generic runs over (n, y, x, c, ky, kx) straight
// into the NHWC result, reading input row 2y + ky, column 2x + kx, and the [1, KH, KW, C] weights
// in place at (0, ky, kx, c).
// CHECK-LABEL: func.func @depthwise_m1
// CHECK-NOT:     tensor.expand_shape
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, ((d1 * 2) + d4), ((d2 * 2) + d5), d3)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (0, d4, d5, d3)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<1x5x5x2xi8>, tensor<1x3x3x2xi8>) outs(%{{.*}} : tensor<1x2x2x2xi32>)
// CHECK-NOT:     tensor.collapse_shape
// CHECK:         func.return
// MLIR-LABEL:  func.func @depthwise_m1
func.func @depthwise_m1(%x: tensor<1x5x5x2xi8>, %w: tensor<1x3x3x2xi8>) -> tensor<1x2x2x2xi32> {
  %0 = qint.depthwise_conv2d %x, %w {input_zp = 0 : i64, weight_zp = 0 : i64, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x5x5x2xi8>, tensor<1x3x3x2xi8>) -> tensor<1x2x2x2xi32>
  func.return %0 : tensor<1x2x2x2xi32>
}

// Depthwise with M = 1, constant int8 weights and input zero point -3: as for conv2d, the
// reduction has no subtraction in the inner loop, and one elementwise generic subtracts a
// per-channel constant.  The reduction reads x + 128 = x xor 0x80 as an unsigned byte (a
// zero-extended factor lets a vector compiler use a 16-bit multiply-add), so the constant is
// (-3 + 128) * (per-channel tap sums 1 + 3 - 5 + 7 = 6 and -2 + 4 + 6 - 8 = 0) = [750, 0]
// (mod 2^32, exactly sum((x + 3) * w)).
// CHECK-LABEL: func.func @depthwise_m1_zp
// CHECK:         %[[ACC:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[W:.*]] : tensor<1x3x3x2xi8>, tensor<1x2x2x2xi8>) outs(%{{.*}} : tensor<1x2x2x2xi32>)
// CHECK-NEXT:    ^bb0(%[[A:.*]]: i8, %[[B:.*]]: i8, %[[S:.*]]: i32):
// CHECK-NEXT:      %[[C128:.*]] = arith.constant -128 : i8
// CHECK-NEXT:      %[[XU:.*]] = arith.xori %[[A]], %[[C128]] : i8
// CHECK-NEXT:      %[[A32:.*]] = arith.extui %[[XU]] : i8 to i32
// CHECK-NEXT:      %[[B32:.*]] = arith.extsi %[[B]] : i8 to i32
// CHECK-NEXT:      %[[P:.*]] = arith.muli %[[A32]], %[[B32]] : i32
// CHECK-NEXT:      %[[SUM:.*]] = arith.addi %[[S]], %[[P]] : i32
// CHECK-NEXT:      linalg.yield %[[SUM]] : i32
// CHECK:         %[[CORR:.*]] = arith.constant dense<[750, 0]> : tensor<2xi64>
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[ACC]], %[[CORR]] : tensor<1x2x2x2xi32>, tensor<2xi64>)
// CHECK-NEXT:    ^bb0(%[[V:.*]]: i32, %[[C:.*]]: i64, %{{.*}}: i32):
// CHECK-NEXT:      %[[V64:.*]] = arith.extsi %[[V]] : i32 to i64
// CHECK-NEXT:      %[[D:.*]] = arith.subi %[[V64]], %[[C]] : i64
// CHECK-NEXT:      arith.trunci %[[D]] : i64 to i32
// MLIR-LABEL:  func.func @depthwise_m1_zp
func.func @depthwise_m1_zp(%x: tensor<1x3x3x2xi8>) -> tensor<1x2x2x2xi32> {
  %w = arith.constant dense<[[[[1, -2], [3, 4]], [[-5, 6], [7, -8]]]]> : tensor<1x2x2x2xi8>
  %0 = qint.depthwise_conv2d %x, %w {input_zp = -3 : i64, weight_zp = 0 : i64, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x3x3x2xi8>, tensor<1x2x2x2xi8>) -> tensor<1x2x2x2xi32>
  func.return %0 : tensor<1x2x2x2xi32>
}

// fully_connected with constant weights and no weight zero point: a 1x1 convolution of the 1 x B
// "image" of K channels ([B, K] -> [1, 1, B, K], weights [O, K] -> [O, 1, 1, K]), the same named op
// as conv2d, collapsed back to [B, O]; the input zero point -3 becomes -3 * (row sums 10, -10, 2).
// CHECK-LABEL: func.func @fc_const
// CHECK:         %[[X4:.*]] = tensor.expand_shape %{{.*}} output_shape [1, 1, 2, 4] : tensor<2x4xi8> into tensor<1x1x2x4xi8>
// CHECK-NEXT:    %[[W4:.*]] = arith.constant dense<{{\[\[\[\[}}1, 2, 3, 4]]], {{\[\[\[}}-1, -2, -3, -4]]], {{\[\[\[}}0, 1, 0, 1]]]]> : tensor<3x1x1x4xi8>
// CHECK:         %[[C:.*]] = linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%[[X4]], %[[W4]] : tensor<1x1x2x4xi8>, tensor<3x1x1x4xi8>)
// CHECK-NEXT:    %[[ACC:.*]] = tensor.collapse_shape %[[C]] {{\[\[}}0 : i64, 1 : i64, 2 : i64], [3 : i64]] : tensor<1x1x2x3xi32> into tensor<2x3xi32>
// CHECK-NEXT:    %[[CORR:.*]] = arith.constant dense<[-30, 30, -6]> : tensor<3xi64>
// CHECK:         linalg.generic {{.*}} ins(%[[ACC]], %[[CORR]] : tensor<2x3xi32>, tensor<3xi64>)
// CHECK:           arith.subi
// MLIR-LABEL:  func.func @fc_const
func.func @fc_const(%x: tensor<2x4xi8>) -> tensor<2x3xi32> {
  %w = arith.constant dense<[[1, 2, 3, 4], [-1, -2, -3, -4], [0, 1, 0, 1]]> : tensor<3x4xi8>
  %0 = qint.fully_connected %x, %w {input_zp = -3 : i64, weight_zp = 0 : i64} : (tensor<2x4xi8>, tensor<3x4xi8>) -> tensor<2x3xi32>
  func.return %0 : tensor<2x3xi32>
}

// fully_connected: a reduction generic over (b, o, k) with both zero points; bias_add broadcasts the
// [O] bias through the map (d0, d1) -> (d1), sign-extended to the i64 accumulator.
// CHECK-LABEL: func.func @fc
// CHECK:         %[[ACC:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<2x4xi8>, tensor<3x4xi8>) outs(%{{.*}} : tensor<2x3xi64>)
// CHECK:           arith.constant -3 : i64
// CHECK:           arith.constant 1 : i64
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%[[ACC]], %{{.*}} : tensor<2x3xi64>, tensor<3xi32>)
// CHECK-NEXT:    ^bb0(%[[A:.*]]: i64, %[[B:.*]]: i32, %{{.*}}: i64):
// CHECK-NEXT:      %[[B64:.*]] = arith.extsi %[[B]] : i32 to i64
// CHECK-NEXT:      %[[S:.*]] = arith.addi %[[A]], %[[B64]] : i64
// CHECK-NEXT:      linalg.yield %[[S]] : i64
// MLIR-LABEL:  func.func @fc
func.func @fc(%x: tensor<2x4xi8>, %w: tensor<3x4xi8>, %b: tensor<3xi32>) -> tensor<2x3xi64> {
  %0 = qint.fully_connected %x, %w {input_zp = -3 : i64, weight_zp = 1 : i64} : (tensor<2x4xi8>, tensor<3x4xi8>) -> tensor<2x3xi64>
  %1 = qint.bias_add %0, %b : (tensor<2x3xi64>, tensor<3xi32>) -> tensor<2x3xi64>
  func.return %1 : tensor<2x3xi64>
}

// batch_matmul broadcasts a batch of 1 with a constant 0 in its map.
// CHECK-LABEL: func.func @bmm
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK:           arith.constant 1 : i32
// CHECK:           arith.constant -2 : i32
// MLIR-LABEL:  func.func @bmm
func.func @bmm(%a: tensor<2x3x4xi8>, %b: tensor<1x4x5xi8>) -> tensor<2x3x5xi32> {
  %0 = qint.batch_matmul %a, %b {lhs_zp = 1 : i64, rhs_zp = -2 : i64} : (tensor<2x3x4xi8>, tensor<1x4x5xi8>) -> tensor<2x3x5xi32>
  func.return %0 : tensor<2x3x5xi32>
}
