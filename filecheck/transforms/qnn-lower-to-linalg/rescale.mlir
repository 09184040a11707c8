// REQUIRES: mlir-opt
// RUN: %qd-opt %s -p qnn-lower-to-linalg | filecheck %s
// RUN: %qd-opt %s -p qnn-lower-to-linalg | %mlir-opt --verify-each | filecheck %s --check-prefix=MLIR

// qint.rescale -> one elementwise linalg.generic whose body is the integer recipe of its mode,
// in i64 arith: centre (x - input_zp), left shift, wrap to 32 bits, apply the multiplier,
// add output_zp, clamp, truncate.  Per-channel parameters are 1-D i64 constants read through
// the map of the channel axis; equal parameters are literals in the body.

// double_round = TFLite MultiplyByQuantizedMultiplier:
//   RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(v << max(s, 0), M), max(-s, 0)).
// (2^30, shift 2): left 2, right 0.  SRDHM: gemmlowp's trunc((a*b + nudge) / 2^31) with
// nudge = 2^30 or 1 - 2^30 by the product's sign is floor((a*b + 2^30) / 2^31) for every
// product, so: add 2^30, shift right 31, in i64.  Multipliers are in [0, 2^31) (the verifier
// says so), so the one saturating case (both INT32_MIN) cannot happen and has no check.
// The SRDHM result fits int32, so the rest runs on i32 (twice the SIMD lanes of i64):
// RDBPOT is gemmlowp's own form, (x >> e) + ((x & mask) > (mask >> 1) + [x < 0]), with
// mask = 2^e - 1 = 0 here (the zero mask, the threshold's 0 + and the shift by 0 fold away),
// and clamp(r + 5, -100, 100) is written clamp(r, -105, 95) + 5 so the add cannot overflow.
// CHECK-LABEL: func.func @double_round
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : tensor<2x3xi8>) outs(%{{.*}} : tensor<2x3xi8>)
// CHECK-NEXT:    ^bb0(%[[X:.*]]: i8, %{{.*}}: i8):
// CHECK-NEXT:      %[[X64:.*]] = arith.extsi %[[X]] : i8 to i64
// CHECK-NEXT:      %[[IZP:.*]] = arith.constant -3 : i64
// CHECK-NEXT:      %[[V:.*]] = arith.subi %[[X64]], %[[IZP]] : i64
// CHECK-NEXT:      %[[LEFT:.*]] = arith.constant 2 : i64
// CHECK-NEXT:      %[[SH:.*]] = arith.shli %[[V]], %[[LEFT]] : i64
// CHECK-NEXT:      %[[M:.*]] = arith.constant 1073741824 : i64
// CHECK-NEXT:      %[[AB:.*]] = arith.muli %[[SH]], %[[M]] : i64
// CHECK-NEXT:      %[[SUM:.*]] = arith.addi %[[AB]], %[[M]] : i64
// CHECK-NEXT:      %[[C31:.*]] = arith.constant 31 : i64
// CHECK-NEXT:      %[[HIGH:.*]] = arith.shrsi %[[SUM]], %[[C31]] : i64
// CHECK-NEXT:      %[[H32:.*]] = arith.trunci %[[HIGH]] : i64 to i32
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT:      %[[REM:.*]] = arith.andi %[[H32]], %[[ZERO]] : i32
// CHECK-NEXT:      %[[NEG:.*]] = arith.cmpi slt, %[[H32]], %[[ZERO]] : i32
// CHECK-NEXT:      %[[THR:.*]] = arith.extui %[[NEG]] : i1 to i32
// CHECK-NEXT:      %[[UP:.*]] = arith.cmpi sgt, %[[REM]], %[[THR]] : i32
// CHECK-NEXT:      %[[UP32:.*]] = arith.extui %[[UP]] : i1 to i32
// CHECK-NEXT:      %[[R:.*]] = arith.addi %[[H32]], %[[UP32]] : i32
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
  %0 = qint.rescale %x {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 2>, input_zp = -3 : i64, output_zp = 5 : i64, clamp_min = -100 : i64, clamp_max = 100 : i64} : (tensor<2x3xi8>) -> tensor<2x3xi8>
  func.return %0 : tensor<2x3xi8>
}

// Per-channel: multipliers [1374389504, 1374389504, 2^30] and shifts [-7, 1, -6] become
// constants: left shifts max(s, 0) = [0, 1, 0], right shifts max(-s, 0) = [7, 0, 6], and for
// the i32 RoundingDivideByPOT the masks 2^e - 1 = [127, 0, 63] and their halves [63, 0, 31],
// each read with the channel map (d3); the body uses the block arguments where the literals
// were.  No clamp bounds given: the i8 range [-128, 127] minus the zero point 5.
// CHECK-LABEL: func.func @double_round_per_channel
// CHECK-NEXT:    %[[M:.*]] = arith.constant dense<[1374389504, 1374389504, 1073741824]> : tensor<3xi64>
// CHECK-NEXT:    %[[L:.*]] = arith.constant dense<[0, 1, 0]> : tensor<3xi64>
// CHECK-NEXT:    %[[RT:.*]] = arith.constant dense<[7, 0, 6]> : tensor<3xi64>
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant dense<[127, 0, 63]> : tensor<3xi64>
// CHECK-NEXT:    %[[HALF:.*]] = arith.constant dense<[63, 0, 31]> : tensor<3xi64>
// CHECK-NEXT:    tensor.empty() : tensor<1x2x2x3xi8>
// CHECK-NEXT:    linalg.generic {{.*}} ins(%{{.*}}, %[[M]], %[[L]], %[[RT]], %[[MASK]], %[[HALF]] : tensor<1x2x2x3xi32>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>)
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[BM:.*]]: i64, %[[BL:.*]]: i64, %[[BR:.*]]: i64, %[[BK:.*]]: i64, %[[BH:.*]]: i64, %{{.*}}: i8):
// CHECK:           arith.shli %{{.*}}, %[[BL]] : i64
// CHECK:           arith.muli %{{.*}}, %[[BM]] : i64
// CHECK:           %[[X32:.*]] = arith.trunci %{{.*}} : i64 to i32
// CHECK-NEXT:      %[[K32:.*]] = arith.trunci %[[BK]] : i64 to i32
// CHECK-NEXT:      arith.andi %[[X32]], %[[K32]] : i32
// CHECK-NEXT:      %[[H32:.*]] = arith.trunci %[[BH]] : i64 to i32
// CHECK:           %[[R32:.*]] = arith.trunci %[[BR]] : i64 to i32
// CHECK-NEXT:      arith.shrsi %[[X32]], %[[R32]] : i32
// CHECK:           arith.constant -133 : i32
// CHECK:           arith.constant 122 : i32
// MLIR-LABEL:  func.func @double_round_per_channel
func.func @double_round_per_channel(%x: tensor<1x2x2x3xi32>) -> tensor<1x2x2x3xi8> {
  %0 = qint.rescale %x {mode = "double_round", multiplier = array<i64: 1374389504, 1374389504, 1073741824>, shift = array<i64: -7, 1, -6>, output_zp = 5 : i64} : (tensor<1x2x2x3xi32>) -> tensor<1x2x2x3xi8>
  func.return %0 : tensor<1x2x2x3xi8>
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

