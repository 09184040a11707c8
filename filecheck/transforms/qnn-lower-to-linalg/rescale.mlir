// REQUIRES: mlir-opt
// RUN: %qd-opt %s -p qnn-lower-to-linalg | filecheck %s
// RUN: %qd-opt %s -p qnn-lower-to-linalg | %mlir-opt --verify-each | filecheck %s --check-prefix=MLIR

// qint.rescale -> one elementwise linalg.generic whose body is the integer recipe of its mode,
// in i64 arith: centre (x - input_zp), left shift, wrap to 32 bits, apply the multiplier,
// add output_zp, clamp, truncate.  Per-channel parameters are 1-D i64 constants read through
// the map of the channel axis; equal parameters are literals in the body.

// double_round = TFLite MultiplyByQuantizedMultiplier:
//   RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(a, M), e), a = v << max(s, 0), e = max(-s, 0).
// SRDHM: gemmlowp's trunc((a*M + nudge) / 2^31) with nudge = 2^30 or 1 - 2^30 by the product's
// sign is floor((a*M + 2^30) / 2^31) for every product.  RDBPOT(q, e) is floor((q + 2^(e-1) -
// [q < 0]) / 2^e) for e >= 1, and nested floors compose, so the whole is one add and one shift:
// (a*M + 2^30 + 2^(30+e) - [a*M < -2^30] * 2^31) >> (31 + e).  Multipliers are in [0, 2^31)
// (the verifier says so), so SRDHM's one saturating case (both INT32_MIN) cannot happen.
// (1374389504 = 0.64 * 2^31, shift 2): left 2, right 0.  v = x + 3 lies in [-125, 130], so
// v << 2 cannot wrap at 32 bits and the left shift folds into the final one: a*M + 2^30 =
// 4 * (v*M + 2^28), and floor(4u / 2^31) = floor(u / 2^29): v*M + 2^28 (= 268435456) >> 29;
// with e = 0 no sign term.
// The result fits int32, so the clamp runs on i32 (twice the SIMD lanes of i64):
// clamp(r + 5, -100, 100) is written clamp(r, -105, 95) + 5 so the add cannot overflow.
// CHECK-LABEL: func.func @double_round
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : tensor<2x3xi8>) outs(%{{.*}} : tensor<2x3xi8>)
// CHECK-NEXT:    ^bb0(%[[X:.*]]: i8, %{{.*}}: i8):
// CHECK-NEXT:      %[[X64:.*]] = arith.extsi %[[X]] : i8 to i64
// CHECK-NEXT:      %[[IZP:.*]] = arith.constant -3 : i64
// CHECK-NEXT:      %[[V:.*]] = arith.subi %[[X64]], %[[IZP]] : i64
// CHECK-NEXT:      %[[M:.*]] = arith.constant 1374389504 : i64
// CHECK-NEXT:      %[[T:.*]] = arith.muli %[[V]], %[[M]] : i64
// CHECK-NEXT:      %[[B:.*]] = arith.constant 268435456 : i64
// CHECK-NEXT:      %[[SUM:.*]] = arith.addi %[[T]], %[[B]] : i64
// CHECK-NEXT:      %[[C29:.*]] = arith.constant 29 : i64
// CHECK-NEXT:      %[[R64:.*]] = arith.shrsi %[[SUM]], %[[C29]] : i64
// CHECK-NEXT:      %[[R:.*]] = arith.trunci %[[R64]] : i64 to i32
// CHECK-NEXT:      %[[LO:.*]] = arith.constant -105 : i32
// CHECK-NEXT:      %[[C1:.*]] = arith.maxsi %[[R]], %[[LO]] : i32
// CHECK-NEXT:      %[[HI:.*]] = arith.constant 95 : i32
// CHECK-NEXT:      %[[C2:.*]] = arith.minsi %[[C1]], %[[HI]] : i32
// CHECK-NEXT:      %[[OZP:.*]] = arith.constant 5 : i32
// CHECK-NEXT:      %[[RZ:.*]] = arith.addi %[[C2]], %[[OZP]] : i32
// CHECK-NEXT:      %[[OUT:.*]] = arith.trunci %[[RZ]] : i32 to i8
// CHECK-NEXT:      linalg.yield %[[OUT]] : i8
// MLIR-LABEL:  func.func @double_round
// MLIR:          arith.shrsi
func.func @double_round(%x: tensor<2x3xi8>) -> tensor<2x3xi8> {
  %0 = qint.rescale %x {mode = "double_round", multiplier = array<i64: 1374389504>, shift = array<i64: 2>, input_zp = -3 : i64, output_zp = 5 : i64, clamp_min = -100 : i64, clamp_max = 100 : i64} : (tensor<2x3xi8>) -> tensor<2x3xi8>
  func.return %0 : tensor<2x3xi8>
}

// The same with the multiplier 2^30: (v * 2^30 + 2^28) >> 29.  The product is a multiple of
// 2^29 and the added 2^28 is below 2^29, so the floor drops it: the whole is v << 1, and
// neither the multiply nor the add is built (TFLite ADD's input of the larger scale always
// has the multiplier 2^30: half its real multiplier 1/2).
// CHECK-LABEL: func.func @double_round_power_of_two
// CHECK:           ^bb0(%[[X:.*]]: i8, %{{.*}}: i8):
// CHECK-NEXT:      %[[X64:.*]] = arith.extsi %[[X]] : i8 to i64
// CHECK-NEXT:      %[[IZP:.*]] = arith.constant -3 : i64
// CHECK-NEXT:      %[[V:.*]] = arith.subi %[[X64]], %[[IZP]] : i64
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-NEXT:      %[[S:.*]] = arith.shli %[[V]], %[[ONE]] : i64
// CHECK-NEXT:      %[[R:.*]] = arith.trunci %[[S]] : i64 to i32
// CHECK-NEXT:      %[[LO:.*]] = arith.constant -105 : i32
// CHECK-NEXT:      %[[C1:.*]] = arith.maxsi %[[R]], %[[LO]] : i32
// CHECK-NEXT:      %[[HI:.*]] = arith.constant 95 : i32
// CHECK-NEXT:      %[[C2:.*]] = arith.minsi %[[C1]], %[[HI]] : i32
// CHECK-NEXT:      %[[OZP:.*]] = arith.constant 5 : i32
// CHECK-NEXT:      %[[RZ:.*]] = arith.addi %[[C2]], %[[OZP]] : i32
// CHECK-NEXT:      %[[OUT:.*]] = arith.trunci %[[RZ]] : i32 to i8
// CHECK-NEXT:      linalg.yield %[[OUT]] : i8
// MLIR-LABEL:  func.func @double_round_power_of_two
// MLIR:          arith.shli
func.func @double_round_power_of_two(%x: tensor<2x3xi8>) -> tensor<2x3xi8> {
  %0 = qint.rescale %x {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 2>, input_zp = -3 : i64, output_zp = 5 : i64, clamp_min = -100 : i64, clamp_max = 100 : i64} : (tensor<2x3xi8>) -> tensor<2x3xi8>
  func.return %0 : tensor<2x3xi8>
}

// Per-channel: multipliers [1374389504, 1374389504, 2^30] and shifts [-7, 1, -6] become
// constants: the multipliers as i32 (extended in the body, so the i64 product is of two
// sign-extended i32 values: one vpmuldq on AVX-512), the left shifts max(s, 0) = [0, 1, 0]
// (an i32 input can wrap when shifted: no fold), and for right shifts e = [7, 0, 6] the two
// added constants 2^30 + 2^(30+e) = [2^30 + 2^37, 2^30, 2^30 + 2^36] =
// [138512695296, 1073741824, 69793218560], the same minus 2^31 where e >= 1 (taken when
// a*M < -2^30) = [136365211648, 1073741824, 67645734912], and the shifts 31 + e = [38, 31, 37],
// each read with the channel map (d3).  No clamp bounds given: the i8 range [-128, 127] minus
// the zero point 5.
// CHECK-LABEL: func.func @double_round_per_channel
// CHECK-NEXT:    %[[M:.*]] = arith.constant dense<[1374389504, 1374389504, 1073741824]> : tensor<3xi32>
// CHECK-NEXT:    %[[L:.*]] = arith.constant dense<[0, 1, 0]> : tensor<3xi64>
// CHECK-NEXT:    %[[POS:.*]] = arith.constant dense<[138512695296, 1073741824, 69793218560]> : tensor<3xi64>
// CHECK-NEXT:    %[[NEG:.*]] = arith.constant dense<[136365211648, 1073741824, 67645734912]> : tensor<3xi64>
// CHECK-NEXT:    %[[RT:.*]] = arith.constant dense<[38, 31, 37]> : tensor<3xi64>
// CHECK-NEXT:    tensor.empty() : tensor<1x2x2x3xi8>
// CHECK-NEXT:    linalg.generic {{.*}} ins(%{{.*}}, %[[M]], %[[L]], %[[POS]], %[[NEG]], %[[RT]] : tensor<1x2x2x3xi32>, tensor<3xi32>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>)
// CHECK-NEXT:    ^bb0(%[[X:.*]]: i32, %[[BM:.*]]: i32, %[[BL:.*]]: i64, %[[BP:.*]]: i64, %[[BN:.*]]: i64, %[[BR:.*]]: i64, %{{.*}}: i8):
// CHECK-NEXT:      %[[X64:.*]] = arith.extsi %[[X]] : i32 to i64
// CHECK-NEXT:      %[[SH:.*]] = arith.shli %[[X64]], %[[BL]] : i64
// CHECK-NEXT:      %[[W32:.*]] = arith.trunci %[[SH]] : i64 to i32
// CHECK-NEXT:      %[[A:.*]] = arith.extsi %[[W32]] : i32 to i64
// CHECK-NEXT:      %[[M64:.*]] = arith.extsi %[[BM]] : i32 to i64
// CHECK-NEXT:      %[[T:.*]] = arith.muli %[[A]], %[[M64]] : i64
// CHECK-NEXT:      %[[THR:.*]] = arith.constant -1073741824 : i64
// CHECK-NEXT:      %[[ISNEG:.*]] = arith.cmpi slt, %[[T]], %[[THR]] : i64
// CHECK-NEXT:      %[[B:.*]] = arith.select %[[ISNEG]], %[[BN]], %[[BP]] : i64
// CHECK-NEXT:      %[[SUM:.*]] = arith.addi %[[T]], %[[B]] : i64
// CHECK-NEXT:      %[[R64:.*]] = arith.shrsi %[[SUM]], %[[BR]] : i64
// CHECK-NEXT:      %[[R:.*]] = arith.trunci %[[R64]] : i64 to i32
// CHECK-NEXT:      arith.constant -133 : i32
// CHECK:           arith.constant 122 : i32
// MLIR-LABEL:  func.func @double_round_per_channel
func.func @double_round_per_channel(%x: tensor<1x2x2x3xi32>) -> tensor<1x2x2x3xi8> {
  %0 = qint.rescale %x {mode = "double_round", multiplier = array<i64: 1374389504, 1374389504, 1073741824>, shift = array<i64: -7, 1, -6>, output_zp = 5 : i64} : (tensor<1x2x2x3xi32>) -> tensor<1x2x2x3xi8>
  func.return %0 : tensor<1x2x2x3xi8>
}

// A total shift 31 + e of 32 or more (every channel here: e = [7, 6]) is taken as the high 32
// bits of the i64 sum, then an i32 shift by the rest, (31 + e) - 32 = [6, 5]:
// floor(floor(u / 2^32) / 2^(e-1)) = floor(u / 2^(31+e)), and AVX2 has no 64-bit arithmetic
// shift while `trunci(shrsi(u, 32))` is a shuffle.  The i32 input shifted by 0 cannot wrap, so
// there is no left-shift operand; the added constants are 2^30 + 2^(30+e) =
// [2^30 + 2^37, 2^30 + 2^36] = [138512695296, 69793218560], minus 2^31 for a*M < -2^30:
// [136365211648, 67645734912].
// CHECK-LABEL: func.func @double_round_high_half
// CHECK-NEXT:    %[[M:.*]] = arith.constant dense<[1374389504, 1073741824]> : tensor<2xi32>
// CHECK-NEXT:    %[[POS:.*]] = arith.constant dense<[138512695296, 69793218560]> : tensor<2xi64>
// CHECK-NEXT:    %[[NEG:.*]] = arith.constant dense<[136365211648, 67645734912]> : tensor<2xi64>
// CHECK-NEXT:    %[[RT:.*]] = arith.constant dense<[6, 5]> : tensor<2xi32>
// CHECK-NEXT:    tensor.empty() : tensor<1x3x2xi8>
// CHECK-NEXT:    linalg.generic {{.*}} ins(%{{.*}}, %[[M]], %[[POS]], %[[NEG]], %[[RT]] : tensor<1x3x2xi32>, tensor<2xi32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi32>)
// CHECK-NEXT:    ^bb0(%[[X:.*]]: i32, %[[BM:.*]]: i32, %[[BP:.*]]: i64, %[[BN:.*]]: i64, %[[BR:.*]]: i32, %{{.*}}: i8):
// CHECK-NEXT:      %[[X64:.*]] = arith.extsi %[[X]] : i32 to i64
// CHECK-NEXT:      %[[M64:.*]] = arith.extsi %[[BM]] : i32 to i64
// CHECK-NEXT:      %[[T:.*]] = arith.muli %[[X64]], %[[M64]] : i64
// CHECK-NEXT:      %[[THR:.*]] = arith.constant -1073741824 : i64
// CHECK-NEXT:      %[[ISNEG:.*]] = arith.cmpi slt, %[[T]], %[[THR]] : i64
// CHECK-NEXT:      %[[B:.*]] = arith.select %[[ISNEG]], %[[BN]], %[[BP]] : i64
// CHECK-NEXT:      %[[SUM:.*]] = arith.addi %[[T]], %[[B]] : i64
// CHECK-NEXT:      %[[C32:.*]] = arith.constant 32 : i64
// CHECK-NEXT:      %[[H64:.*]] = arith.shrsi %[[SUM]], %[[C32]] : i64
// CHECK-NEXT:      %[[H:.*]] = arith.trunci %[[H64]] : i64 to i32
// CHECK-NEXT:      %[[R:.*]] = arith.shrsi %[[H]], %[[BR]] : i32
// CHECK-NEXT:      arith.constant -133 : i32
// CHECK-NEXT:      arith.maxsi %[[R]], %{{.*}} : i32
// MLIR-LABEL:  func.func @double_round_high_half
// MLIR:          arith.trunci
func.func @double_round_high_half(%x: tensor<1x3x2xi32>) -> tensor<1x3x2xi8> {
  %0 = qint.rescale %x {mode = "double_round", multiplier = array<i64: 1374389504, 1073741824>, shift = array<i64: -7, -6>, output_zp = 5 : i64, axis = 2 : i64} : (tensor<1x3x2xi32>) -> tensor<1x3x2xi8>
  func.return %0 : tensor<1x3x2xi8>
}

// ADD's input rescale: (x + 5) << 20 with x int8 lies in [-123 * 2^20, 132 * 2^20], so it cannot
// wrap and L = 20 folds: with t = (x + 5) * 2^30 and e = 3 the one-shift form is
// (t + 2^10 + 2^13 - [t < -2^10] * 2^11) >> (31 - 20 + 3): added constants 9216 or 7168, shift 14.
// The i32 result needs no clamp (its bounds are the i32 range).
// CHECK-LABEL: func.func @double_round_add_input
// CHECK:         ^bb0(%[[X:.*]]: i8, %{{.*}}: i32):
// CHECK-NEXT:      %[[X64:.*]] = arith.extsi %[[X]] : i8 to i64
// CHECK-NEXT:      %[[IZP:.*]] = arith.constant -5 : i64
// CHECK-NEXT:      %[[V:.*]] = arith.subi %[[X64]], %[[IZP]] : i64
// CHECK-NEXT:      %[[M:.*]] = arith.constant 1073741824 : i64
// CHECK-NEXT:      %[[T:.*]] = arith.muli %[[V]], %[[M]] : i64
// CHECK-NEXT:      %[[THR:.*]] = arith.constant -1024 : i64
// CHECK-NEXT:      %[[ISNEG:.*]] = arith.cmpi slt, %[[T]], %[[THR]] : i64
// CHECK-NEXT:      %[[NEG:.*]] = arith.constant 7168 : i64
// CHECK-NEXT:      %[[POS:.*]] = arith.constant 9216 : i64
// CHECK-NEXT:      %[[B:.*]] = arith.select %[[ISNEG]], %[[NEG]], %[[POS]] : i64
// CHECK-NEXT:      %[[SUM:.*]] = arith.addi %[[T]], %[[B]] : i64
// CHECK-NEXT:      %[[C14:.*]] = arith.constant 14 : i64
// CHECK-NEXT:      %[[R64:.*]] = arith.shrsi %[[SUM]], %[[C14]] : i64
// CHECK-NEXT:      %[[R:.*]] = arith.trunci %[[R64]] : i64 to i32
// CHECK-NEXT:      linalg.yield %[[R]] : i32
// MLIR-LABEL:  func.func @double_round_add_input
func.func @double_round_add_input(%x: tensor<4xi8>) -> tensor<4xi32> {
  %0 = qint.rescale %x {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: -3>, input_zp = -5 : i64, left_shift = 20 : i64} : (tensor<4xi8>) -> tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

// single_round = TFLITE_SINGLE_ROUNDING: (v * M + 2^(total - 1)) >> total with total = 31 - s.
// (1342177260, 3): total 28, rounding term 2^27 = 134217728.  u8 output: zero point 128, clamp
// [0, 255], the low 8 bits kept.  The centred i8 input x + 3 fits 9 bits: no wrap to 32 bits.
// CHECK-LABEL: func.func @single_round
// CHECK:           %[[IZP:.*]] = arith.constant -3 : i64
// CHECK-NEXT:      %[[V:.*]] = arith.subi %{{.*}}, %[[IZP]] : i64
// CHECK-NEXT:      %[[M:.*]] = arith.constant 1342177260 : i64
// CHECK-NEXT:      %[[P:.*]] = arith.muli %[[V]], %[[M]] : i64
// CHECK-NEXT:      %[[RND:.*]] = arith.constant 134217728 : i64
// CHECK-NEXT:      %[[S:.*]] = arith.addi %[[P]], %[[RND]] : i64
// CHECK-NEXT:      %[[T:.*]] = arith.constant 28 : i64
// CHECK-NEXT:      %[[R:.*]] = arith.shrsi %[[S]], %[[T]] : i64
// CHECK-NEXT:      %[[OZP:.*]] = arith.constant 128 : i64
// CHECK-NEXT:      arith.addi %[[R]], %[[OZP]] : i64
// CHECK-NEXT:      arith.constant 0 : i64
// CHECK-NEXT:      arith.maxsi
// CHECK-NEXT:      arith.constant 255 : i64
// CHECK-NEXT:      arith.minsi
// CHECK-NEXT:      arith.trunci %{{.*}} : i64 to i8
// MLIR-LABEL:  func.func @single_round
func.func @single_round(%x: tensor<4xi8>) -> tensor<4xi8> {
  %0 = qint.rescale %x {mode = "single_round", multiplier = array<i64: 1342177260>, shift = array<i64: 3>, input_zp = -3 : i64, output_zp = 128 : i64, clamp_min = 0 : i64, clamp_max = 255 : i64} : (tensor<4xi8>) -> tensor<4xi8>
  func.return %0 : tensor<4xi8>
}

// wide_round = TFLite's int64 MultiplyByQuantizedMultiplier: M cut to 16 bits,
// (1374389504 + 2^15) >> 16 = 20972, total shift 15 - (-7) = 22, rounding 2^21; the result wrapped
// to int32 before the clamp to i16.  A 64-bit input is not wrapped to 32 bits first.
// CHECK-LABEL: func.func @wide_round
// CHECK-NEXT:    tensor.empty
// CHECK-NEXT:    linalg.generic
// CHECK-NEXT:    ^bb0(%[[X:.*]]: i64, %{{.*}}: i16):
// CHECK-NEXT:      %[[M:.*]] = arith.constant 20972 : i64
// CHECK-NEXT:      %[[P:.*]] = arith.muli %[[X]], %[[M]] : i64
// CHECK-NEXT:      %[[RND:.*]] = arith.constant 2097152 : i64
// CHECK-NEXT:      %[[S:.*]] = arith.addi %[[P]], %[[RND]] : i64
// CHECK-NEXT:      %[[T:.*]] = arith.constant 22 : i64
// CHECK-NEXT:      %[[R:.*]] = arith.shrsi %[[S]], %[[T]] : i64
// CHECK-NEXT:      %[[R32:.*]] = arith.trunci %[[R]] : i64 to i32
// CHECK-NEXT:      arith.extsi %[[R32]] : i32 to i64
// CHECK-NEXT:      arith.constant -32768 : i64
// CHECK-NEXT:      arith.maxsi
// CHECK-NEXT:      arith.constant 32767 : i64
// CHECK-NEXT:      arith.minsi
// CHECK-NEXT:      arith.trunci %{{.*}} : i64 to i16
// MLIR-LABEL:  func.func @wide_round
func.func @wide_round(%x: tensor<4xi64>) -> tensor<4xi16> {
  %0 = qint.rescale %x {mode = "wide_round", multiplier = array<i64: 1374389504>, shift = array<i64: -7>} : (tensor<4xi64>) -> tensor<4xi16>
  func.return %0 : tensor<4xi16>
}

// float_even: rint(float32(v) * float32(scale)) with ties to even, as XNNPACK computes it (8-bit
// output, so |rint| stays far below 2^21): the i32 input converts straight to f32; the product is
// clamped to [lo - zp, hi - zp] = [-128 - 5, 127 - 5] = [-133, 122] (clamping before rint is the
// same as after: rint is monotone and keeps integers); adding 1.5 * 2^23 (0x4B400000) rounds it
// to an integer, ties to even, in float32's [2^23, 2^24) binade, whose bits are 0x4B400000 +
// rint; subtracting 0x4B400000 - zp = 1262485504 - 5 = 1262485499 leaves rint + zp.
// CHECK-LABEL: func.func @float_even
// CHECK:           ^bb0(%[[X:.*]]: i32, %{{.*}}: i8):
// CHECK-NEXT:      %[[F:.*]] = arith.constant 2.500000e-01 : f32
// CHECK-NEXT:      %[[XF:.*]] = arith.sitofp %[[X]] : i32 to f32
// CHECK-NEXT:      %[[Y:.*]] = arith.mulf %[[XF]], %[[F]] : f32
// CHECK-NEXT:      %[[LO:.*]] = arith.constant -1.330000e+02 : f32
// CHECK-NEXT:      %[[Y1:.*]] = arith.maximumf %[[Y]], %[[LO]] : f32
// CHECK-NEXT:      %[[HI:.*]] = arith.constant 1.220000e+02 : f32
// CHECK-NEXT:      %[[Y2:.*]] = arith.minimumf %[[Y1]], %[[HI]] : f32
// CHECK-NEXT:      %[[M:.*]] = arith.constant 0x4B400000 : f32
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %[[Y2]], %[[M]] : f32
// CHECK-NEXT:      %[[BITS:.*]] = arith.bitcast %[[SUM]] : f32 to i32
// CHECK-NEXT:      %[[MB:.*]] = arith.constant 1262485499 : i32
// CHECK-NEXT:      %[[R:.*]] = arith.subi %[[BITS]], %[[MB]] : i32
// CHECK-NEXT:      %[[R8:.*]] = arith.trunci %[[R]] : i32 to i8
// CHECK-NEXT:      linalg.yield %[[R8]] : i8
// MLIR-LABEL:  func.func @float_even
func.func @float_even(%x: tensor<4xi32>) -> tensor<4xi8> {
  %0 = qint.rescale %x {mode = "float_even", scale = array<f64: 0.25>, output_zp = 5 : i64} : (tensor<4xi32>) -> tensor<4xi8>
  func.return %0 : tensor<4xi8>
}

// float_away: round(float64(v) * scale) with ties away from zero (TFLite's FC reference); per-channel
// scales are an f64 constant read through (d1).
// CHECK-LABEL: func.func @float_away
// CHECK-NEXT:    %[[S:.*]] = arith.constant dense<[0.004999999888241291, 0.0099999997764825821]> : tensor<2xf64>
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%{{.*}}, %[[S]] : tensor<2x2xi32>, tensor<2xf64>)
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[F:.*]]: f64, %{{.*}}: i8):
// CHECK:           %[[XF:.*]] = arith.sitofp %{{.*}} : i64 to f64
// CHECK-NEXT:      arith.mulf %[[XF]], %[[F]] : f64
// CHECK:           %[[T:.*]] = arith.fptosi %{{.*}} : f64 to i64
// CHECK:           %[[FRAC:.*]] = arith.subf
// CHECK-NEXT:      %[[H:.*]] = arith.constant 5.000000e-01 : f64
// CHECK-NEXT:      %[[MH:.*]] = arith.constant -5.000000e-01 : f64
// CHECK-NEXT:      arith.cmpf oge, %[[FRAC]], %[[H]] : f64
// CHECK-NEXT:      arith.extui
// CHECK-NEXT:      arith.cmpf ole, %[[FRAC]], %[[MH]] : f64
// MLIR-LABEL:  func.func @float_away
func.func @float_away(%x: tensor<2x2xi32>) -> tensor<2x2xi8> {
  %0 = qint.rescale %x {mode = "float_away", scale = array<f64: 0.004999999888241291, 0.0099999997764825821>, output_zp = 5 : i64} : (tensor<2x2xi32>) -> tensor<2x2xi8>
  func.return %0 : tensor<2x2xi8>
}

// mode none with an unsigned input (u8 bits read with extui), zero point 128 and ADD's left shift 20
// ((x - 128) << 20 lies in [-2^27, 2^27), so neither the wrap to 32 bits nor the clamp to the i32
// range changes it: the body truncates it straight away); and a 64-bit sum that only gets its
// zero point and clamp.
// CHECK-LABEL: func.func @none_unsigned_left_shift
// CHECK:         ^bb0(%[[X:.*]]: i8, %{{.*}}: i32):
// CHECK-NEXT:      %[[U:.*]] = arith.extui %[[X]] : i8 to i64
// CHECK-NEXT:      %[[ZP:.*]] = arith.constant 128 : i64
// CHECK-NEXT:      %[[V:.*]] = arith.subi %[[U]], %[[ZP]] : i64
// CHECK-NEXT:      %[[LS:.*]] = arith.constant 20 : i64
// CHECK-NEXT:      %[[SH:.*]] = arith.shli %[[V]], %[[LS]] : i64
// CHECK-NEXT:      %[[OUT:.*]] = arith.trunci %[[SH]] : i64 to i32
// CHECK-NEXT:      linalg.yield %[[OUT]] : i32
// CHECK:         ^bb0(%[[Y:.*]]: i64, %{{.*}}: i8):
// CHECK-NEXT:      %[[OZP:.*]] = arith.constant 5 : i64
// CHECK-NEXT:      arith.addi %[[Y]], %[[OZP]] : i64
// MLIR-LABEL:  func.func @none_unsigned_left_shift
func.func @none_unsigned_left_shift(%x: tensor<4xi8>, %y: tensor<4xi64>) -> (tensor<4xi32>, tensor<4xi8>) {
  %0 = qint.rescale %x {mode = "none", input_zp = 128 : i64, left_shift = 20 : i64, input_unsigned = true} : (tensor<4xi8>) -> tensor<4xi32>
  %1 = qint.rescale %y {mode = "none", output_zp = 5 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64} : (tensor<4xi64>) -> tensor<4xi8>
  func.return %0, %1 : tensor<4xi32>, tensor<4xi8>
}

// axis = 0: the shifts are read through (d0); the multipliers are equal, so a literal.
// CHECK-LABEL: func.func @axis
// CHECK-NEXT:    %[[L:.*]] = arith.constant dense<[2, 1]> : tensor<2xi64>
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK:           arith.constant 1073741824 : i64
// MLIR-LABEL:  func.func @axis
func.func @axis(%x: tensor<2x3xi8>) -> tensor<2x3xi8> {
  %0 = qint.rescale %x {mode = "double_round", multiplier = array<i64: 1073741824, 1073741824>, shift = array<i64: 2, 1>, axis = 0 : i64} : (tensor<2x3xi8>) -> tensor<2x3xi8>
  func.return %0 : tensor<2x3xi8>
}

