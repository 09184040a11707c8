// REQUIRES: mlir-opt
// RUN: %qd-opt %s -p qnn-lower-to-linalg | filecheck %s
// RUN: %qd-opt %s -p qnn-lower-to-linalg | %mlir-opt --verify-each | filecheck %s --check-prefix=MLIR

// qint.softmax -> TFLite's integer softmax as linalg stages.

// 8 bit (reference_ops::Softmax; input scale 0.5, beta 1, so (2^30, 26), diff_min -31):
//  1. row max: fill -128, reduction generic;
//  2. two compile-time tables indexed by k = max - x: exp_on_negative_values of the Q5.26 diff
//     (entry 0: exp(0) saturated to 0x7FFFFFFF; entry 1: exp(-0.5) = 0.60653 * 2^31 = 0x4DA2CD62;
//     entry 2: exp(-1) = 0x2F16AD4C) and the same rescaled to Q12.19 for the sum (entry 0: 2^19);
//  3+4. the row sum of the Q12.19 contributions, each read via tensor.extract inside the one
//     reduction generic (the contributions are never written out);
//  5. GetReciprocal: one generic per step (half denominator, initial 48/17 - 32/17 x, three
//     Newton-Raphson steps, the final doubling): six generics on the row;
//  6. per row, the final exponent num_bits_over_unit + 31 - 8 = (12 - clz(sum)) + 23 = 35 - clz(sum);
//  7. the final generic: RDBPOT(SRDHM(recip, exp[k]), exponent), + -128, clamp, and -128 where
//     k > -diff_min = 31 (the body defines each constant once: the 31 of SRDHM's shift is the
//     31 of this test, the -128 of the zero point is the one of the clamp and the select).
// CHECK-LABEL: func.func @softmax8
// CHECK-NEXT:    %[[LO:.*]] = arith.constant -128 : i8
// CHECK-NEXT:    tensor.empty() : tensor<2xi8>
// CHECK-NEXT:    %[[INIT:.*]] = linalg.fill ins(%[[LO]] : i8)
// CHECK-NEXT:    %[[MAX:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<2x5xi8>) outs(%[[INIT]] : tensor<2xi8>)
// CHECK:           arith.maxsi
// CHECK:         %[[EXP:.*]] = arith.constant dense<"0xFFFFFF7F62CDA24D4CAD162F{{[0-9A-F]*}}"> : tensor<256xi32>
// CHECK-NEXT:    %[[CONTRIB:.*]] = arith.constant dense<"0x00000800{{[0-9A-F]*}}"> : tensor<256xi32>
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    tensor.empty() : tensor<2xi32>
// CHECK-NEXT:    %[[ZERO:.*]] = linalg.fill ins(%[[Z]] : i32)
// CHECK-NEXT:    %[[SUM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%{{.*}}, %[[MAX]] : tensor<2x5xi8>, tensor<2xi8>) outs(%[[ZERO]] : tensor<2xi32>)
// CHECK-NEXT:    ^bb0(%[[X:.*]]: i8, %[[M:.*]]: i8, %[[ACC:.*]]: i32):
// CHECK-NEXT:      %[[M64:.*]] = arith.extsi %[[M]] : i8 to i64
// CHECK-NEXT:      %[[X64:.*]] = arith.extsi %[[X]] : i8 to i64
// CHECK-NEXT:      %[[K:.*]] = arith.subi %[[M64]], %[[X64]] : i64
// CHECK-NEXT:      %[[I:.*]] = arith.index_cast %[[K]] : i64 to index
// CHECK-NEXT:      %[[T:.*]] = tensor.extract %[[CONTRIB]][%[[I]]] : tensor<256xi32>
// CHECK-NEXT:      arith.addi %[[ACC]], %[[T]] : i32
// CHECK:         %[[HD:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<2xi32>)
// CHECK:         %[[X0:.*]] = linalg.generic {{.*}} ins(%[[HD]] : tensor<2xi32>)
// CHECK:         %[[X1:.*]] = linalg.generic {{.*}} ins(%[[HD]], %[[X0]] : tensor<2xi32>, tensor<2xi32>)
// CHECK:         %[[X2:.*]] = linalg.generic {{.*}} ins(%[[HD]], %[[X1]] : tensor<2xi32>, tensor<2xi32>)
// CHECK:         %[[X3:.*]] = linalg.generic {{.*}} ins(%[[HD]], %[[X2]] : tensor<2xi32>, tensor<2xi32>)
// CHECK:         %[[RCP:.*]] = linalg.generic {{.*}} ins(%[[X3]] : tensor<2xi32>)
// CHECK:         %[[EXPO:.*]] = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%[[SUM]] : tensor<2xi32>)
// CHECK:           %[[C35:.*]] = arith.constant 35 : i64
// CHECK-NEXT:      arith.subi %[[C35]], %{{.*}} : i64
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%{{.*}}, %[[MAX]], %[[EXPO]], %[[RCP]] : tensor<2x5xi8>, tensor<2xi8>, tensor<2xi32>, tensor<2xi32>) outs(%{{.*}} : tensor<2x5xi8>)
// CHECK-NEXT:    ^bb0(%{{.*}}: i8, %{{.*}}: i8, %[[EX:.*]]: i32, %{{.*}}: i32, %{{.*}}: i8):
// CHECK:           tensor.extract %[[EXP]][%{{.*}}] : tensor<256xi32>
// CHECK:           %[[R:.*]] = arith.constant 31 : i64
// CHECK-NEXT:      arith.shrsi %{{.*}}, %[[R]] : i64
// CHECK:           %[[E:.*]] = arith.extsi %[[EX]] : i32 to i64
// CHECK:           arith.shrsi %{{.*}}, %[[E]] : i64
// CHECK:           %[[TMIN:.*]] = arith.constant -128 : i64
// CHECK-NEXT:      arith.addi %{{.*}}, %[[TMIN]] : i64
// CHECK:           %[[OK:.*]] = arith.cmpi sle, %{{.*}}, %[[R]] : i64
// CHECK-NEXT:      arith.select %[[OK]], %{{.*}}, %[[TMIN]] : i64
// MLIR-LABEL:  func.func @softmax8
// MLIR-COUNT-10: linalg.generic
func.func @softmax8(%x: tensor<2x5xi8>) -> tensor<2x5xi8> {
  %0 = qint.softmax %x {input_multiplier = 1073741824 : i64, input_shift = 26 : i64, diff_min = -31 : i64} : (tensor<2x5xi8>) -> tensor<2x5xi8>
  func.return %0 : tensor<2x5xi8>
}

// 16 bit (reference_ops::SoftmaxInt16): the exp LUT result for every k = max - x precomputed
// (k = 0: diff 0 -> index 32767 of TFLite's 513-entry exp table on [-10, 0], interpolated
// 32133 + 634 * 127 / 128 -> 32762 = 0x7FFA), read and summed in i64 in one reduction, and the final generic reads the
// 1/(1+x) LUT (entry 0: 0x7FFF) with the sum normalised by its leading zeros; the LUT index
// clamp and the final clamp share one constant 32767.
// CHECK-LABEL: func.func @softmax16
// CHECK-NEXT:    %[[LO:.*]] = arith.constant -32768 : i16
// CHECK:         %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<2x5xi16>)
// CHECK:         %[[EXP:.*]] = arith.constant dense<"0xFA7F0000{{[0-9A-F]*}}"> : tensor<65536xi32>
// CHECK-NEXT:    %[[RCP:.*]] = arith.constant dense<"0xFF7F0000{{[0-9A-F]*}}"> : tensor<65536xi32>
// CHECK:         %[[Z:.*]] = arith.constant 0 : i64
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}}, %[[MAX]] : tensor<2x5xi16>, tensor<2xi16>) outs(%{{.*}} : tensor<2xi64>)
// CHECK:           tensor.extract %[[EXP]][%{{.*}}] : tensor<65536xi32>
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %[[MAX]], %[[SUM]] : tensor<2x5xi16>, tensor<2xi16>, tensor<2xi64>) outs(%{{.*}} : tensor<2x5xi16>)
// CHECK:           tensor.extract %[[EXP]]
// CHECK:           %[[TOP:.*]] = arith.constant 32767 : i64
// CHECK:           tensor.extract %[[RCP]]
// CHECK:           arith.minsi %{{.*}}, %[[TOP]] : i64
// CHECK-NEXT:      arith.trunci %{{.*}} : i64 to i16
// MLIR-LABEL:  func.func @softmax16
// MLIR-COUNT-3:  linalg.generic
func.func @softmax16(%h: tensor<2x5xi16>) -> tensor<2x5xi16> {
  %0 = qint.softmax %h {input_multiplier = 1759191844 : i64, input_shift = 3 : i64} : (tensor<2x5xi16>) -> tensor<2x5xi16>
  func.return %0 : tensor<2x5xi16>
}

// The float-table recipe (LiteRT's optimized 8-bit kernel; mode float_even or float_away): a float32
// table of exp(-0.5 * k) (entry 0: 1.0 = 0x3F800000, entry 1: exp(-0.5) = 0x3F1B4598), the row sum
// added left to right through constant-index maps (d0, 0), (d0, 1), (d0, 2) so no reordering can
// change it, 1 / (sum * output_scale), and product * that rounded (ties to even here), + zero point.
// CHECK-LABEL: func.func @softmax_float
// CHECK-NEXT:    %[[T:.*]] = arith.constant dense<"0x0000803F98451B3F{{[0-9A-F]*}}"> : tensor<256xf32>
// CHECK:         %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]}
// CHECK:         %[[E:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[MAX]] : tensor<2x3xi8>, tensor<2xi8>) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK:           tensor.extract %[[T]][%{{.*}}] : tensor<256xf32>
// CHECK:         %[[SUM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0, 0)>, affine_map<(d0) -> (d0, 1)>, affine_map<(d0) -> (d0, 2)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%[[E]], %[[E]], %[[E]] : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[AB:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT:      arith.addf %[[AB]], %[[C]] : f32
// CHECK:         %[[INV:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<2xf32>)
// CHECK:           %[[S:.*]] = arith.constant 3.906250e-03 : f32
// CHECK-NEXT:      %[[D:.*]] = arith.mulf %{{.*}}, %[[S]] : f32
// CHECK-NEXT:      arith.divf %{{.*}}, %[[D]] : f32
// CHECK:         linalg.generic {{.*}} ins(%[[E]], %[[INV]] : tensor<2x3xf32>, tensor<2xf32>) outs(%{{.*}} : tensor<2x3xi8>)
// CHECK:           arith.cmpf oeq
// CHECK:           arith.constant -128 : i64
// MLIR-LABEL:  func.func @softmax_float
// MLIR-COUNT-5:  linalg.generic
func.func @softmax_float(%a: tensor<2x3xi8>) -> tensor<2x3xi8> {
  %0 = qint.softmax %a {mode = "float_even", input_scale = array<f64: 5.000000e-01>, beta = array<f64: 1.000000e+00>, output_scale = array<f64: 3.906250e-03>, output_zp = -128 : i64} : (tensor<2x3xi8>) -> tensor<2x3xi8>
  func.return %0 : tensor<2x3xi8>
}
