// REQUIRES: mlir-opt
// RUN: %qd-opt %s -p qnn-lower-to-linalg | filecheck %s
// RUN: %qd-opt %s -p qnn-lower-to-linalg | %mlir-opt --verify-each | filecheck %s --check-prefix=MLIR

// Elementwise qint ops -> one elementwise linalg.generic each.  Broadcasting lives in the
// indexing maps (a [3] operand of a 2x3 result reads (d1); a 2x1 one reads (d0, 0)); the body
// works in i64 and truncates, which is the wrap the qint ops define.

// CHECK-LABEL: func.func @binary
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<2x3xi32>, tensor<3xi32>)
// CHECK:           %[[S:.*]] = arith.addi %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:      arith.trunci %[[S]] : i64 to i32
// CHECK:           %[[D:.*]] = arith.subi %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:      arith.trunci %[[D]] : i64 to i32
// mul: both zero points subtracted before the product.
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<2x1xi8>, tensor<2x3xi8>) outs(%{{.*}} : tensor<2x3xi32>)
// CHECK-NEXT:    ^bb0(%[[A:.*]]: i8, %[[B:.*]]: i8, %{{.*}}: i32):
// CHECK-NEXT:      %[[A64:.*]] = arith.extsi %[[A]] : i8 to i64
// CHECK-NEXT:      %[[B64:.*]] = arith.extsi %[[B]] : i8 to i64
// CHECK-NEXT:      %[[LZP:.*]] = arith.constant -3 : i64
// CHECK-NEXT:      %[[AC:.*]] = arith.subi %[[A64]], %[[LZP]] : i64
// CHECK-NEXT:      %[[RZP:.*]] = arith.constant 1 : i64
// CHECK-NEXT:      %[[BC:.*]] = arith.subi %[[B64]], %[[RZP]] : i64
// CHECK-NEXT:      %[[P:.*]] = arith.muli %[[AC]], %[[BC]] : i64
// CHECK-NEXT:      arith.trunci %[[P]] : i64 to i32
// CHECK:           arith.maxsi %{{.*}}, %{{.*}} : i64
// CHECK:           arith.minsi %{{.*}}, %{{.*}} : i64
// MLIR-LABEL:  func.func @binary
// MLIR-COUNT-5:  linalg.generic
func.func @binary(%a: tensor<2x3xi32>, %b: tensor<3xi32>, %c: tensor<2x1xi8>, %d: tensor<2x3xi8>) -> (tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi8>, tensor<2x3xi8>) {
  %0 = qint.add %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %1 = qint.sub %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %2 = qint.mul %c, %d {lhs_zp = -3 : i64, rhs_zp = 1 : i64} : (tensor<2x1xi8>, tensor<2x3xi8>) -> tensor<2x3xi32>
  %3 = qint.maximum %c, %d : (tensor<2x1xi8>, tensor<2x3xi8>) -> tensor<2x3xi8>
  %4 = qint.minimum %c, %d : (tensor<2x1xi8>, tensor<2x3xi8>) -> tensor<2x3xi8>
  func.return %0, %1, %2, %3, %4 : tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi8>, tensor<2x3xi8>
}

// scaled_add (XNNPACK's add): wrap32(lhs * 8192 + rhs * 2048 + bias) >> 15, + output_zp, clamp.
// The sum of two i8 products with these multipliers, the bias and the zero point moved before
// the shift (5 * 2^15) fits 25 signed bits, so the wrap to 32 bits changes nothing: all in i32,
// 26624 + 163840 = 190464 added once, then the shift and the clamp.
// CHECK-LABEL: func.func @scaled_add
// CHECK:         ^bb0(%[[A:.*]]: i8, %[[B:.*]]: i8, %{{.*}}: i8):
// CHECK-NEXT:      %[[A32:.*]] = arith.extsi %[[A]] : i8 to i32
// CHECK-NEXT:      %[[MA:.*]] = arith.constant 8192 : i32
// CHECK-NEXT:      %[[PA:.*]] = arith.muli %[[A32]], %[[MA]] : i32
// CHECK-NEXT:      %[[B32:.*]] = arith.extsi %[[B]] : i8 to i32
// CHECK-NEXT:      %[[MB:.*]] = arith.constant 2048 : i32
// CHECK-NEXT:      %[[PB:.*]] = arith.muli %[[B32]], %[[MB]] : i32
// CHECK-NEXT:      %[[S:.*]] = arith.addi %[[PA]], %[[PB]] : i32
// CHECK-NEXT:      %[[BIAS:.*]] = arith.constant 190464 : i32
// CHECK-NEXT:      %[[T:.*]] = arith.addi %[[S]], %[[BIAS]] : i32
// CHECK-NEXT:      %[[SH:.*]] = arith.constant 15 : i32
// CHECK-NEXT:      %[[R:.*]] = arith.shrsi %[[T]], %[[SH]] : i32
// CHECK-NEXT:      arith.constant -100 : i32
// CHECK-NEXT:      arith.maxsi
// CHECK-NEXT:      arith.constant 100 : i32
// CHECK-NEXT:      arith.minsi
// MLIR-LABEL:  func.func @scaled_add
func.func @scaled_add(%a: tensor<2x3xi8>, %b: tensor<3xi8>) -> tensor<2x3xi8> {
  %0 = qint.scaled_add %a, %b {lhs_multiplier = 8192 : i64, rhs_multiplier = 2048 : i64, bias = 26624 : i64, shift = 15 : i64, output_zp = 5 : i64, clamp_min = -100 : i64, clamp_max = 100 : i64} : (tensor<2x3xi8>, tensor<3xi8>) -> tensor<2x3xi8>
  func.return %0 : tensor<2x3xi8>
}

// qint.table: tensor.extract at x - type_min (x + 128 for i8, x + 32768 for i16), or at the
// unsigned value (extui) for u8 bits.
// CHECK-LABEL: func.func @tables(
// CHECK-SAME:    %{{[^:]*}}: tensor<4xi8>, %[[T:[^:]*]]: tensor<256xi8>, %{{[^:]*}}: tensor<4xi16>, %[[T16:[^:]*]]: tensor<65536xi16>)
// CHECK:         ^bb0(%[[X:.*]]: i8, %{{.*}}: i8):
// CHECK-NEXT:      %[[X64:.*]] = arith.extsi %[[X]] : i8 to i64
// CHECK-NEXT:      %[[OFF:.*]] = arith.constant 128 : i64
// CHECK-NEXT:      %[[I:.*]] = arith.addi %[[X64]], %[[OFF]] : i64
// CHECK-NEXT:      %[[IDX:.*]] = arith.index_cast %[[I]] : i64 to index
// CHECK-NEXT:      tensor.extract %[[T]][%[[IDX]]] : tensor<256xi8>
// CHECK:         ^bb0(%[[U:.*]]: i8, %{{.*}}: i8):
// CHECK-NEXT:      %[[U64:.*]] = arith.extui %[[U]] : i8 to i64
// CHECK-NEXT:      %[[UIDX:.*]] = arith.index_cast %[[U64]] : i64 to index
// CHECK-NEXT:      tensor.extract %[[T]][%[[UIDX]]] : tensor<256xi8>
// CHECK:         ^bb0(%[[H:.*]]: i16, %{{.*}}: i16):
// CHECK-NEXT:      %[[H64:.*]] = arith.extsi %[[H]] : i16 to i64
// CHECK-NEXT:      %[[OFF16:.*]] = arith.constant 32768 : i64
// CHECK-NEXT:      %[[I16:.*]] = arith.addi %[[H64]], %[[OFF16]] : i64
// CHECK-NEXT:      %[[IDX16:.*]] = arith.index_cast %[[I16]] : i64 to index
// CHECK-NEXT:      tensor.extract %[[T16]][%[[IDX16]]] : tensor<65536xi16>
// MLIR-LABEL:  func.func @tables
// MLIR:          tensor.extract
func.func @tables(%x: tensor<4xi8>, %t: tensor<256xi8>, %h: tensor<4xi16>, %t16: tensor<65536xi16>) -> (tensor<4xi8>, tensor<4xi8>, tensor<4xi16>) {
  %0 = qint.table %x, %t : (tensor<4xi8>, tensor<256xi8>) -> tensor<4xi8>
  %1 = qint.table %x, %t {unsigned = true} : (tensor<4xi8>, tensor<256xi8>) -> tensor<4xi8>
  %2 = qint.table %h, %t16 : (tensor<4xi16>, tensor<65536xi16>) -> tensor<4xi16>
  func.return %0, %1, %2 : tensor<4xi8>, tensor<4xi8>, tensor<4xi16>
}

// divide_round: away = sign(x) * ((|x| + d / 2) / d) (TFLite's average pool); half_up =
// floor((2x + d) / 2d); half_even = floor division, then up when 2 * remainder > d or it ties
// and the quotient is odd.  The [1, 3, 3, 1] counts broadcast with (d0, d1, d2, 0).  A body
// defines each constant once (one `0`, one `2`).
// CHECK-LABEL: func.func @divide
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>]
// CHECK-NEXT:    ^bb0(%[[S:.*]]: i32, %[[N:.*]]: i32, %{{.*}}: i32):
// CHECK-NEXT:      %[[X:.*]] = arith.extsi %[[S]] : i32 to i64
// CHECK-NEXT:      %[[D:.*]] = arith.extsi %[[N]] : i32 to i64
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0 : i64
// CHECK-NEXT:      %[[NEG:.*]] = arith.cmpi slt, %[[X]], %[[Z]] : i64
// CHECK-NEXT:      %[[MX:.*]] = arith.subi %[[Z]], %[[X]] : i64
// CHECK-NEXT:      %[[ABS:.*]] = arith.select %[[NEG]], %[[MX]], %[[X]] : i64
// CHECK-NEXT:      %[[TWO:.*]] = arith.constant 2 : i64
// CHECK-NEXT:      %[[HALF:.*]] = arith.divsi %[[D]], %[[TWO]] : i64
// CHECK-NEXT:      %[[NUM:.*]] = arith.addi %[[ABS]], %[[HALF]] : i64
// CHECK-NEXT:      %[[MAG:.*]] = arith.divsi %[[NUM]], %[[D]] : i64
// CHECK-NEXT:      %[[POS:.*]] = arith.cmpi sgt, %[[X]], %[[Z]] : i64
// CHECK-NEXT:      %[[NMAG:.*]] = arith.subi %[[Z]], %[[MAG]] : i64
// CHECK-NEXT:      arith.select %[[POS]], %[[MAG]], %[[NMAG]] : i64
// CHECK:         ^bb0(%{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32):
// CHECK-NEXT:      %[[X2:.*]] = arith.extsi
// CHECK-NEXT:      %[[D2:.*]] = arith.extsi
// CHECK-NEXT:      %[[TWO2:.*]] = arith.constant 2 : i64
// CHECK-NEXT:      %[[TX:.*]] = arith.muli %[[X2]], %[[TWO2]] : i64
// CHECK-NEXT:      %[[NUM2:.*]] = arith.addi %[[TX]], %[[D2]] : i64
// CHECK-NEXT:      %[[TD:.*]] = arith.muli %[[D2]], %[[TWO2]] : i64
// CHECK-NEXT:      arith.floordivsi %[[NUM2]], %[[TD]] : i64
// CHECK:         ^bb0(%{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32):
// CHECK-NEXT:      %[[X3:.*]] = arith.extsi
// CHECK-NEXT:      %[[D3:.*]] = arith.extsi
// CHECK-NEXT:      %[[Q:.*]] = arith.floordivsi %[[X3]], %[[D3]] : i64
// CHECK-NEXT:      %[[QD:.*]] = arith.muli %[[Q]], %[[D3]] : i64
// CHECK-NEXT:      %[[REM:.*]] = arith.subi %[[X3]], %[[QD]] : i64
// CHECK-NEXT:      arith.constant 2 : i64
// CHECK-NEXT:      %[[TWICE:.*]] = arith.muli %[[REM]], %{{.*}} : i64
// CHECK-NEXT:      arith.constant 1 : i64
// CHECK-NEXT:      %[[LOW:.*]] = arith.andi %[[Q]], %{{.*}} : i64
// CHECK-NEXT:      arith.constant 0 : i64
// CHECK-NEXT:      %[[ODD:.*]] = arith.cmpi ne, %[[LOW]], %{{.*}} : i64
// CHECK-NEXT:      %[[GT:.*]] = arith.cmpi sgt, %[[TWICE]], %[[D3]] : i64
// CHECK-NEXT:      %[[EQ:.*]] = arith.cmpi eq, %[[TWICE]], %[[D3]] : i64
// CHECK-NEXT:      %[[TIE:.*]] = arith.andi %[[EQ]], %[[ODD]] : i1
// CHECK-NEXT:      %[[UP:.*]] = arith.ori %[[GT]], %[[TIE]] : i1
// CHECK-NEXT:      %[[UP64:.*]] = arith.extui %[[UP]] : i1 to i64
// CHECK-NEXT:      arith.addi %[[Q]], %[[UP64]] : i64
// MLIR-LABEL:  func.func @divide
func.func @divide(%s: tensor<1x3x3x2xi32>, %n: tensor<1x3x3x1xi32>) -> (tensor<1x3x3x2xi32>, tensor<1x3x3x2xi32>, tensor<1x3x3x2xi32>) {
  %0 = qint.divide_round %s, %n {rounding = "away"} : (tensor<1x3x3x2xi32>, tensor<1x3x3x1xi32>) -> tensor<1x3x3x2xi32>
  %1 = qint.divide_round %s, %n {rounding = "half_up"} : (tensor<1x3x3x2xi32>, tensor<1x3x3x1xi32>) -> tensor<1x3x3x2xi32>
  %2 = qint.divide_round %s, %n {rounding = "half_even"} : (tensor<1x3x3x2xi32>, tensor<1x3x3x1xi32>) -> tensor<1x3x3x2xi32>
  func.return %0, %1, %2 : tensor<1x3x3x2xi32>, tensor<1x3x3x2xi32>, tensor<1x3x3x2xi32>
}

// float_even with an offset (XNNPACK's reduce: zero points folded into o): rint(float32(v) * f + o),
// the product clamped to +-2^62 before the add so no fused multiply-add can change the rounding.
// CHECK-LABEL: func.func @offset
// CHECK:           %[[Y:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:      arith.constant -4.61168602e+18 : f32
// CHECK-NEXT:      arith.constant 4.61168602e+18 : f32
// CHECK-NEXT:      %[[Y1:.*]] = arith.maximumf %[[Y]], %{{.*}} : f32
// CHECK-NEXT:      %[[Y2:.*]] = arith.minimumf %[[Y1]], %{{.*}} : f32
// CHECK-NEXT:      %[[O:.*]] = arith.constant 5.500000e+00 : f32
// CHECK-NEXT:      arith.addf %[[Y2]], %[[O]] : f32
// MLIR-LABEL:  func.func @offset
func.func @offset(%x: tensor<4xi32>) -> tensor<4xi8> {
  %0 = qint.rescale %x {mode = "float_even", scale = array<f64: 0.25>, offset = array<f64: 5.5>} : (tensor<4xi32>) -> tensor<4xi8>
  func.return %0 : tensor<4xi8>
}

// TFLite's ADD / SUB at L2: each input rescaled to a common scale, the sum, the sum rescaled to
// the output -- one generic of the two inputs, the four bodies one after the other (each step
// the scalar function its own generic would apply), [3] broadcast through (d1) as the sub did.
// x: (x + 3) << 19 (multiplier 2^30, shift 0, left shift 20 folded: see rescale.mlir).
// y: ((y - 5) * 1374389504 + c) >> 12 with c = 2^10 + 2^11 = 3072, or 1024 when the product is
// below -2^10 (left shift 20 folded, right shift 1), in 32-bit lanes: with d = y - 5 in
// [-255, 250] and 1374389504 = 335544 * 2^12 + 1280, it is d * 335544 + ((d * 1280 + c) >> 12)
// (exact: floor((A * 2^12 + B) / 2^12) = A + floor(B / 2^12)), and the product is below -2^10
// exactly when d <= -1.  Their difference, in i64, which fits 32 bits: made the extension of
// its i32 truncation for the output's product (a pair of 32-bit lanes, tvm_bridge/epilogue.py).
// The output: multiplier 1518500250, right shift 18, on a difference the lowering bounds below
// 2^29 (value_bound: (x + 3) << 19 and the rescaled y), so in the sign form: with D = 2d,
// (high32(D * 1518500250 + 2^31 + 2^49 + 2 * 2^50) + (D >> 31)) >> 18 -- the sign test of the
// double rounding is d's own sign, in 32 bits, and the output zero point 2 is added before the
// shift as 2 * 2^(32+18) -- then clamp(r, -128, 127).
// CHECK-LABEL: func.func @rescaled_sum
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<2x3xi8>, tensor<3xi8>)
// CHECK-NEXT:    ^bb0(%[[X:.*]]: i8, %[[Y:.*]]: i8, %{{.*}}: i8):
// CHECK-NEXT:      %[[X64:.*]] = arith.extsi %[[X]] : i8 to i64
// CHECK-NEXT:      %[[XZP:.*]] = arith.constant -3 : i64
// CHECK-NEXT:      %[[XC:.*]] = arith.subi %[[X64]], %[[XZP]] : i64
// CHECK-NEXT:      %[[C19:.*]] = arith.constant 19 : i64
// CHECK-NEXT:      %[[SX:.*]] = arith.shli %[[XC]], %[[C19]] : i64
// CHECK-NEXT:      %[[Y32:.*]] = arith.extsi %[[Y]] : i8 to i32
// CHECK-NEXT:      %[[YZP:.*]] = arith.constant 5 : i32
// CHECK-NEXT:      %[[YC:.*]] = arith.subi %[[Y32]], %[[YZP]] : i32
// CHECK-NEXT:      %[[DNEG:.*]] = arith.constant -1 : i32
// CHECK-NEXT:      %[[ISNEG:.*]] = arith.cmpi sle, %[[YC]], %[[DNEG]] : i32
// CHECK-NEXT:      %[[C1024:.*]] = arith.constant 1024 : i32
// CHECK-NEXT:      %[[C3072:.*]] = arith.constant 3072 : i32
// CHECK-NEXT:      %[[CY:.*]] = arith.select %[[ISNEG]], %[[C1024]], %[[C3072]] : i32
// CHECK-NEXT:      %[[MH:.*]] = arith.constant 335544 : i32
// CHECK-NEXT:      %[[AY:.*]] = arith.muli %[[YC]], %[[MH]] : i32
// CHECK-NEXT:      %[[ML:.*]] = arith.constant 1280 : i32
// CHECK-NEXT:      %[[LY:.*]] = arith.muli %[[YC]], %[[ML]] : i32
// CHECK-NEXT:      %[[BY:.*]] = arith.addi %[[LY]], %[[CY]] : i32
// CHECK-NEXT:      %[[C12:.*]] = arith.constant 12 : i32
// CHECK-NEXT:      %[[QY:.*]] = arith.shrsi %[[BY]], %[[C12]] : i32
// CHECK-NEXT:      %[[RY:.*]] = arith.addi %[[AY]], %[[QY]] : i32
// CHECK-NEXT:      %[[SY:.*]] = arith.extsi %[[RY]] : i32 to i64
// CHECK-NEXT:      %[[D:.*]] = arith.subi %[[SX]], %[[SY]] : i64
// CHECK-NEXT:      %[[D32:.*]] = arith.trunci %[[D]] : i64 to i32
// CHECK-NEXT:      %[[D2:.*]] = arith.addi %[[D32]], %[[D32]] : i32
// CHECK-NEXT:      %[[D64:.*]] = arith.extsi %[[D2]] : i32 to i64
// CHECK-NEXT:      %[[MR:.*]] = arith.constant 1518500250 : i64
// CHECK-NEXT:      %[[TR:.*]] = arith.muli %[[D64]], %[[MR]] : i64
// CHECK-NEXT:      %[[K:.*]] = arith.constant 2814751914590208 : i64
// CHECK-NEXT:      %[[U:.*]] = arith.addi %[[TR]], %[[K]] : i64
// CHECK-NEXT:      %[[C32:.*]] = arith.constant 32 : i64
// CHECK-NEXT:      %[[H64:.*]] = arith.shrsi %[[U]], %[[C32]] : i64
// CHECK-NEXT:      %[[H:.*]] = arith.trunci %[[H64]] : i64 to i32
// CHECK-NEXT:      %[[C31:.*]] = arith.constant 31 : i32
// CHECK-NEXT:      %[[SIGN:.*]] = arith.shrsi %[[D2]], %[[C31]] : i32
// CHECK-NEXT:      %[[HS:.*]] = arith.addi %[[H]], %[[SIGN]] : i32
// CHECK-NEXT:      %[[C18:.*]] = arith.constant 18 : i32
// CHECK-NEXT:      %[[R:.*]] = arith.shrsi %[[HS]], %[[C18]] : i32
// CHECK-NEXT:      %[[LO:.*]] = arith.constant -128 : i32
// CHECK-NEXT:      %[[R1:.*]] = arith.maxsi %[[R]], %[[LO]] : i32
// CHECK-NEXT:      %[[HI:.*]] = arith.constant 127 : i32
// CHECK-NEXT:      %[[R2:.*]] = arith.minsi %[[R1]], %[[HI]] : i32
// CHECK-NEXT:      %[[OUT:.*]] = arith.trunci %[[R2]] : i32 to i8
// CHECK-NEXT:      linalg.yield %[[OUT]] : i8
// CHECK-NEXT:    } -> tensor<2x3xi8>
// CHECK-NEXT:    func.return
// MLIR-LABEL:  func.func @rescaled_sum
// MLIR-COUNT-1:  linalg.generic
// MLIR-NOT:      linalg.generic
// MLIR:          return
func.func @rescaled_sum(%x: tensor<2x3xi8>, %y: tensor<3xi8>) -> tensor<2x3xi8> {
  %a = qint.rescale %x {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 0>, input_zp = -3 : i64, left_shift = 20 : i64} : (tensor<2x3xi8>) -> tensor<2x3xi32>
  %b = qint.rescale %y {mode = "double_round", multiplier = array<i64: 1374389504>, shift = array<i64: -1>, input_zp = 5 : i64, left_shift = 20 : i64} : (tensor<3xi8>) -> tensor<3xi32>
  %s = qint.sub %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %r = qint.rescale %s {mode = "double_round", multiplier = array<i64: 1518500250>, shift = array<i64: -18>, output_zp = 2 : i64} : (tensor<2x3xi32>) -> tensor<2x3xi8>
  func.return %r : tensor<2x3xi8>
}

// Not one generic when an intermediate value is read elsewhere (the rescaled x is returned too),
// or when a rescale has per-channel parameters (the output's, here): each op its own generic.
// MLIR-LABEL:  func.func @sums_apart
// MLIR-COUNT-8:  linalg.generic
// MLIR-NOT:      linalg.generic
// MLIR:          return
func.func @sums_apart(%x: tensor<2x3xi8>, %y: tensor<2x3xi8>) -> (tensor<2x3xi8>, tensor<2x3xi32>, tensor<2x3xi8>) {
  %a = qint.rescale %x {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 0>, input_zp = -3 : i64, left_shift = 20 : i64} : (tensor<2x3xi8>) -> tensor<2x3xi32>
  %b = qint.rescale %y {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 0>, left_shift = 20 : i64} : (tensor<2x3xi8>) -> tensor<2x3xi32>
  %s = qint.add %a, %b : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %r = qint.rescale %s {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: -18>} : (tensor<2x3xi32>) -> tensor<2x3xi8>
  %c = qint.rescale %x {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 0>, left_shift = 20 : i64} : (tensor<2x3xi8>) -> tensor<2x3xi32>
  %d = qint.rescale %y {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 0>, left_shift = 20 : i64} : (tensor<2x3xi8>) -> tensor<2x3xi32>
  %t = qint.add %c, %d : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %u = qint.rescale %t {mode = "double_round", multiplier = array<i64: 1073741824, 1518500250, 1073741824>, shift = array<i64: -18, -18, -17>} : (tensor<2x3xi32>) -> tensor<2x3xi8>
  func.return %r, %a, %u : tensor<2x3xi8>, tensor<2x3xi32>, tensor<2x3xi8>
}

// A per-channel requantization that only one input rescale of the sum reads (a convolution's
// before a residual add) joins the generic: its input and its per-channel constants (multipliers
// as i32, the two added constants, the 32-bit shifts: see rescale.mlir) are the generic's,
// read through its own maps, and its body comes first on that side.
// CHECK-LABEL: func.func @headed_sum
// CHECK:         %[[M:.*]] = arith.constant dense<[1686695680, 1073741824]> : tensor<2xi32>
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %acc, %[[M]], %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x2xi8>, tensor<2x2xi32>, tensor<2xi32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi32>)
// CHECK-NEXT:    ^bb0(%{{.*}}: i8, %[[ACC:[0-9]+]]: i32, %[[MC:[0-9]+]]: i32,
// CHECK:           arith.extsi %[[ACC]] : i32 to i64
// CHECK-NEXT:      arith.extsi %[[MC]] : i32 to i64
// CHECK-NOT:       linalg.generic
// CHECK:           linalg.yield
// MLIR-LABEL:  func.func @headed_sum
// MLIR-COUNT-1:  linalg.generic
// MLIR-NOT:      linalg.generic
// MLIR:          return
func.func @headed_sum(%x: tensor<2x2xi8>, %acc: tensor<2x2xi32>) -> tensor<2x2xi8> {
  %h = qint.rescale %acc {mode = "double_round", multiplier = array<i64: 1686695680, 1073741824>, shift = array<i64: -7, -9>, output_zp = -3 : i64} : (tensor<2x2xi32>) -> tensor<2x2xi8>
  %a = qint.rescale %x {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 0>, input_zp = -3 : i64, left_shift = 20 : i64} : (tensor<2x2xi8>) -> tensor<2x2xi32>
  %b = qint.rescale %h {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: 0>, input_zp = -3 : i64, left_shift = 20 : i64} : (tensor<2x2xi8>) -> tensor<2x2xi32>
  %s = qint.add %a, %b : (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi32>
  %r = qint.rescale %s {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: -18>, output_zp = -3 : i64} : (tensor<2x2xi32>) -> tensor<2x2xi8>
  func.return %r : tensor<2x2xi8>
}

// divide_round `away` by constant divisors (an average pool's window counts, 1 to 2^14):
// no division; floor(n / d) for n = |x| + d / 2 < 2^32 as (n m_hi + (n m_lo >> 16)) >> (S - 16),
// m = ceil(2^S / d) split at bit 16, S = 32 + ceil(log2 max d) (lower_to_linalg.division_magic).
// Counts 4, 6, 6, 9: S = 36, d / 2 and the two halves of m as i64 operands broadcast like d;
// m = 2^34 for d = 4, whose high half is 2^18.  All counts 4 (a splat): S = 34, m = 2^32,
// literals in the body, its low half 0 and left out.
// CHECK-LABEL: func.func @divide_const
// CHECK:         arith.constant dense<{{\[\[\[\[}}2], [3]], {{\[\[}}3], [4]]]]> : tensor<1x2x2x1xi64>
// CHECK-NEXT:    arith.constant dense<{{\[\[\[\[}}262144], [{{[0-9]+}}]], {{\[\[}}{{[0-9]+}}], [{{[0-9]+}}]]]]> : tensor<1x2x2x1xi64>
// CHECK-NEXT:    arith.constant dense<{{\[\[\[\[}}0], [{{[0-9]+}}]], {{\[\[}}{{[0-9]+}}], [{{[0-9]+}}]]]]> : tensor<1x2x2x1xi64>
// CHECK:         ^bb0(%{{.*}}: i32, %[[H:.*]]: i64, %[[MH:.*]]: i64, %[[ML:.*]]: i64, %{{.*}}: i32):
// CHECK-NOT:       arith.divsi
// CHECK:           %[[N:.*]] = arith.addi %{{.*}}, %[[H]] : i64
// CHECK-NEXT:      %[[P:.*]] = arith.muli %[[N]], %[[MH]] : i64
// CHECK-NEXT:      %[[L:.*]] = arith.muli %[[N]], %[[ML]] : i64
// CHECK-NEXT:      %[[C16:.*]] = arith.constant 16 : i64
// CHECK-NEXT:      %[[LS:.*]] = arith.shrsi %[[L]], %[[C16]] : i64
// CHECK-NEXT:      %[[S:.*]] = arith.addi %[[P]], %[[LS]] : i64
// CHECK-NEXT:      %[[C20:.*]] = arith.constant 20 : i64
// CHECK-NEXT:      arith.shrsi %[[S]], %[[C20]] : i64
// CHECK:         ^bb0(%{{.*}}: i32, %{{.*}}: i32):
// CHECK-NOT:       arith.divsi
// CHECK:           arith.constant 65536 : i64
// CHECK-NEXT:      %[[P2:.*]] = arith.muli %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:      %[[C18:.*]] = arith.constant 18 : i64
// CHECK-NEXT:      arith.shrsi %[[P2]], %[[C18]] : i64
// MLIR-LABEL:  func.func @divide_const
func.func @divide_const(%s: tensor<1x2x2x2xi32>) -> (tensor<1x2x2x2xi32>, tensor<1x2x2x2xi32>) {
  %n = arith.constant dense<[[[[4], [6]], [[6], [9]]]]> : tensor<1x2x2x1xi32>
  %k = arith.constant dense<4> : tensor<1x2x2x1xi32>
  %0 = qint.divide_round %s, %n {rounding = "away"} : (tensor<1x2x2x2xi32>, tensor<1x2x2x1xi32>) -> tensor<1x2x2x2xi32>
  %1 = qint.divide_round %s, %k {rounding = "away"} : (tensor<1x2x2x2xi32>, tensor<1x2x2x1xi32>) -> tensor<1x2x2x2xi32>
  func.return %0, %1 : tensor<1x2x2x2xi32>, tensor<1x2x2x2xi32>
}
