// RUN: %qd-opt %s -p qnn-decompose | filecheck %s

// Pools, reductions and softmax.

!a = !quant.uniform<i8:f32, 0.5:-3>
!o = !quant.uniform<i8:f32, 0.25:5>

// AVERAGE_POOL sums the stored values of each window's in-bounds taps and divides by their
// count, rounding half away from zero.  3x3 windows, stride 2, padding bottom/right 1 on 6x6:
// windows starting at rows/cols 0, 2 see 3 taps, the one at 4 sees 2, so the counts are
// 9 9 6 / 9 9 6 / 6 6 4.  half_even divides with ties to even; a fused clamp on a max pool
// is a rescale of mode none.
// CHECK-LABEL: func.func @pools(%{{.*}}: tensor<1x6x6x2xi8>)
// CHECK-NEXT:    %[[S:.*]] = qint.pool_sum %{{.*}} {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 0, 1, 0, 1>} : (tensor<1x6x6x2xi8>) -> tensor<1x3x3x2xi32>
// CHECK-NEXT:    %[[N:.*]] = arith.constant dense<{{\[\[\[\[}}9], [9], [6]], {{\[\[}}9], [9], [6]], {{\[\[}}6], [6], [4]]]]> : tensor<1x3x3x1xi32>
// CHECK-NEXT:    %[[Q:.*]] = qint.divide_round %[[S]], %[[N]] {rounding = "away"} : (tensor<1x3x3x2xi32>, tensor<1x3x3x1xi32>) -> tensor<1x3x3x2xi32>
// CHECK-NEXT:    %[[AVG:.*]] = qint.rescale %[[Q]] {mode = "none", clamp_min = -128 : i64, clamp_max = 127 : i64} : (tensor<1x3x3x2xi32>) -> tensor<1x3x3x2xi8>
// CHECK-NEXT:    %[[MAX:.*]] = qint.pool_max %{{.*}} {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x6x6x2xi8>) -> tensor<1x3x3x2xi8>
// CHECK-NEXT:    qint.pool_sum
// CHECK-NEXT:    %[[N4:.*]] = arith.constant dense<4> : tensor<1x3x3x1xi32>
// CHECK-NEXT:    qint.divide_round %{{.*}}, %[[N4]] {rounding = "half_even"}
// CHECK-NEXT:    qint.rescale
// CHECK-NEXT:    %[[M:.*]] = qint.pool_max
// CHECK-NEXT:    qint.rescale %[[M]] {mode = "none", clamp_min = 0 : i64, clamp_max = 127 : i64} : (tensor<1x3x3x2xi8>) -> tensor<1x3x3x2xi8>
func.func @pools(%x: tensor<1x6x6x2x!a>) -> (tensor<1x3x3x2x!a>, tensor<1x3x3x2x!a>, tensor<1x3x3x2x!a>, tensor<1x3x3x2x!a>) {
  %0 = qnn.avg_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 0, 1, 0, 1>} : (tensor<1x6x6x2x!a>) -> tensor<1x3x3x2x!a>
  %1 = qnn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x6x6x2x!a>) -> tensor<1x3x3x2x!a>
  %2 = qnn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, rounding = "half_even"} : (tensor<1x6x6x2x!a>) -> tensor<1x3x3x2x!a>
  %3 = qnn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, act_min = 0 : i64} : (tensor<1x6x6x2x!a>) -> tensor<1x3x3x2x!a>
  func.return %0, %1, %2, %3 : tensor<1x3x3x2x!a>, tensor<1x3x3x2x!a>, tensor<1x3x3x2x!a>, tensor<1x3x3x2x!a>
}

// MEAN / SUM (reduce.h QuantizedMeanOrSum): an i32 sum, input zero point times the count
// (-3 * 36 = -108) subtracted, then 0.5 / 0.25 = 2 -> (2^30, 2).  MEAN folds 1/36 into the
// multiplier: shift k = floor(log2 36) = 5, multiplier (2^30 << 5) / 36 = 954437176, shift 2 - 5 = -3
// (to the input's own parameters: ratio 1 -> shift 1 - 5 = -4).  reduce_max / reduce_min keep the type.
// CHECK-LABEL: func.func @reductions
// CHECK-NEXT:    %[[S:.*]] = qint.reduce_sum %{{.*}} {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<1x6x6x2xi8>) -> tensor<1x1x1x2xi32>
// CHECK-NEXT:    qint.rescale %[[S]] {mode = "double_round", multiplier = array<i64: 954437176>, shift = array<i64: -3>, input_zp = -108 : i64, output_zp = 5 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64} : (tensor<1x1x1x2xi32>) -> tensor<1x1x1x2xi8>
// CHECK-NEXT:    %[[T:.*]] = qint.reduce_sum %{{.*}} {axes = array<i64: 1, -2>, keep_dims = false} : (tensor<1x6x6x2xi8>) -> tensor<1x2xi32>
// CHECK-NEXT:    qint.rescale %[[T]] {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 2>, input_zp = -108 : i64, output_zp = 5 : i64
// CHECK-NEXT:    qint.reduce_max %{{.*}} {axes = array<i64: 3>, keep_dims = false} : (tensor<1x6x6x2xi8>) -> tensor<1x6x6xi8>
// CHECK-NEXT:    qint.reduce_min %{{.*}} {axes = array<i64: 0>, keep_dims = false} : (tensor<1x6x6x2xi8>) -> tensor<6x6x2xi8>
// CHECK-NEXT:    qint.reduce_sum
// CHECK-NEXT:    qint.rescale %{{.*}} {mode = "double_round", multiplier = array<i64: 954437176>, shift = array<i64: -4>, input_zp = -108 : i64, output_zp = -3 : i64
// CHECK-NEXT:    qint.reduce_max %{{.*}} {axes = array<i64: 3>, keep_dims = true} : (tensor<1x6x6x2xi8>) -> tensor<1x6x6x1xi8>
// CHECK-NEXT:    func.return
func.func @reductions(%x: tensor<1x6x6x2x!a>) -> (tensor<1x1x1x2x!o>, tensor<1x2x!o>, tensor<1x6x6x!a>, tensor<6x6x2x!a>, tensor<1x1x1x2x!a>, tensor<1x6x6x1x!a>) {
  %0 = qnn.mean %x {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<1x6x6x2x!a>) -> tensor<1x1x1x2x!o>
  %1 = qnn.sum %x {axes = array<i64: 1, -2>} : (tensor<1x6x6x2x!a>) -> tensor<1x2x!o>
  %2 = qnn.reduce_max %x {axes = array<i64: 3>} : (tensor<1x6x6x2x!a>) -> tensor<1x6x6x!a>
  %3 = qnn.reduce_min %x {axes = array<i64: 0>} : (tensor<1x6x6x2x!a>) -> tensor<6x6x2x!a>
  %4 = qnn.mean %x {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<1x6x6x2x!a>) -> tensor<1x1x1x2x!a>
  %5 = qnn.reduce_max %x {axes = array<i64: 3>, keep_dims = true} : (tensor<1x6x6x2x!a>) -> tensor<1x6x6x1x!a>
  func.return %0, %1, %2, %3, %4, %5 : tensor<1x1x1x2x!o>, tensor<1x2x!o>, tensor<1x6x6x!a>, tensor<6x6x2x!a>, tensor<1x1x1x2x!a>, tensor<1x6x6x1x!a>
}

// SOFTMAX, 8 bit (PreprocessSoftmaxScaling with 5 integer bits): beta * 0.5 * 2^26 = 2^25 = 0.5 * 2^26
// -> (2^30, 26), diff_min = -floor(31 * 2^26 / 2^26) = -31; beta 0.5 halves both: (2^30, 25), -62,
// single rounding says so.  16 bit: 0.001f * beta / (10 / 65535) = 6.5535 = 0.81919 * 2^3 -> (1759191844, 3).
// CHECK-LABEL: func.func @softmax(%{{.*}}: tensor<2x5xi8>, %{{.*}}: tensor<2x5xi16>)
// CHECK-NEXT:    qint.softmax %{{.*}} {input_multiplier = 1073741824 : i64, input_shift = 26 : i64, diff_min = -31 : i64} : (tensor<2x5xi8>) -> tensor<2x5xi8>
// CHECK-NEXT:    qint.softmax %{{.*}} {input_multiplier = 1073741824 : i64, input_shift = 25 : i64, diff_min = -62 : i64, mode = "single_round"} : (tensor<2x5xi8>) -> tensor<2x5xi8>
// CHECK-NEXT:    qint.softmax %{{.*}} {input_multiplier = 1759191844 : i64, input_shift = 3 : i64} : (tensor<2x5xi16>) -> tensor<2x5xi16>
func.func @softmax(%x: tensor<2x5x!a>, %h: tensor<2x5x!quant.uniform<i16:f32, 0.001>>) -> (tensor<2x5x!quant.uniform<i8:f32, 0.00390625:-128>>, tensor<2x5x!quant.uniform<i8:f32, 0.00390625:-128>>, tensor<2x5x!quant.uniform<i16:f32, 3.0517578125e-05>>) {
  %0 = qnn.softmax %x {beta = 1.0 : f64} : (tensor<2x5x!a>) -> tensor<2x5x!quant.uniform<i8:f32, 0.00390625:-128>>
  %1 = qnn.softmax %x {beta = 0.5 : f64, rounding = "single"} : (tensor<2x5x!a>) -> tensor<2x5x!quant.uniform<i8:f32, 0.00390625:-128>>
  %2 = qnn.softmax %h : (tensor<2x5x!quant.uniform<i16:f32, 0.001>>) -> tensor<2x5x!quant.uniform<i16:f32, 3.0517578125e-05>>
  func.return %0, %1, %2 : tensor<2x5x!quant.uniform<i8:f32, 0.00390625:-128>>, tensor<2x5x!quant.uniform<i8:f32, 0.00390625:-128>>, tensor<2x5x!quant.uniform<i16:f32, 3.0517578125e-05>>
}
