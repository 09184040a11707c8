// REQUIRES: mlir-opt
// RUN: %qd-opt %s -p qnn-lower-to-linalg | filecheck %s
// RUN: %qd-opt %s -p qnn-lower-to-linalg | %mlir-opt --verify-each | filecheck %s --check-prefix=MLIR

// Pools: tensor.pad (0 for a sum, the type minimum for a max, so padding never counts), then a
// generic over (n, y, x, c, ky, kx) whose second operand is a constant of the window's shape --
// it only gives the ky/kx loops their extents, as linalg's named pooling ops do.  Reductions:
// linalg.fill with the combine's identity, a generic whose loops are the kept dims then the
// reduced ones, and tensor.expand_shape for keep_dims.

// CHECK-LABEL: func.func @pools
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0 : i8
// CHECK-NEXT:    %[[P:.*]] = tensor.pad %{{.*}} low[0, 0, 0, 0] high[0, 1, 1, 0] {
// CHECK:           tensor.yield %[[Z]] : i8
// CHECK:         %[[WIN:.*]] = arith.constant dense<0> : tensor<3x3xi8>
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    tensor.empty() : tensor<1x3x3x2xi32>
// CHECK-NEXT:    %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : i32)
// CHECK-NEXT:    %[[SUM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, ((d1 * 2) + d4), ((d2 * 2) + d5), d3)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[P]], %[[WIN]] : tensor<1x7x7x2xi8>, tensor<3x3xi8>) outs(%[[INIT]] : tensor<1x3x3x2xi32>)
// CHECK-NEXT:    ^bb0(%[[X:.*]]: i8, %{{.*}}: i8, %[[ACC:.*]]: i32):
// CHECK-NEXT:      %[[X32:.*]] = arith.extsi %[[X]] : i8 to i32
// CHECK-NEXT:      %[[S:.*]] = arith.addi %[[ACC]], %[[X32]] : i32
// CHECK-NEXT:      linalg.yield %[[S]] : i32
// CHECK:         %[[WIN2:.*]] = arith.constant dense<0> : tensor<2x2xi8>
// CHECK-NEXT:    %[[MIN:.*]] = arith.constant -128 : i8
// CHECK-NEXT:    tensor.empty() : tensor<1x3x3x2xi8>
// CHECK-NEXT:    %[[INIT2:.*]] = linalg.fill ins(%[[MIN]] : i8)
// CHECK-NEXT:    linalg.generic {{.*}} ins(%{{.*}}, %[[WIN2]] : tensor<1x6x6x2xi8>, tensor<2x2xi8>) outs(%[[INIT2]] : tensor<1x3x3x2xi8>)
// CHECK-NEXT:    ^bb0(%[[X2:.*]]: i8, %{{.*}}: i8, %[[ACC2:.*]]: i8):
// CHECK-NEXT:      %[[M:.*]] = arith.maxsi %[[ACC2]], %[[X2]] : i8
// CHECK-NEXT:      linalg.yield %[[M]] : i8
// CHECK:         %[[PADMIN:.*]] = arith.constant -128 : i8
// CHECK-NEXT:    tensor.pad %{{.*}} low[0, 1, 1, 0] high[0, 1, 1, 0] {
// CHECK:           tensor.yield %[[PADMIN]] : i8
// CHECK:         } : tensor<1x6x6x2xi8> to tensor<1x8x8x2xi8>
// MLIR-LABEL:  func.func @pools
// MLIR-COUNT-3:  linalg.generic
func.func @pools(%x: tensor<1x6x6x2xi8>) -> (tensor<1x3x3x2xi32>, tensor<1x3x3x2xi8>, tensor<1x4x4x2xi8>) {
  %0 = qint.pool_sum %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 0, 1, 0, 1>} : (tensor<1x6x6x2xi8>) -> tensor<1x3x3x2xi32>
  %1 = qint.pool_max %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x6x6x2xi8>) -> tensor<1x3x3x2xi8>
  %2 = qint.pool_max %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x6x6x2xi8>) -> tensor<1x4x4x2xi8>
  func.return %0, %1, %2 : tensor<1x3x3x2xi32>, tensor<1x3x3x2xi8>, tensor<1x4x4x2xi8>
}

// reduce_sum over H, W with keep_dims: loops (n, c, h, w), input map (d0, d2, d3, d1), an i32 [1, 2]
// result expanded to [1, 1, 1, 2].  reduce_max / reduce_min start from -128 / 127.
// CHECK-LABEL: func.func @reductions
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    tensor.empty() : tensor<1x2xi32>
// CHECK-NEXT:    %[[INIT:.*]] = linalg.fill ins(%[[Z]] : i32)
// CHECK-NEXT:    %[[R:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}} : tensor<1x6x6x2xi8>) outs(%[[INIT]] : tensor<1x2xi32>)
// CHECK:           arith.addi
// CHECK:         tensor.expand_shape %[[R]] {{\[\[}}0 : i64], [1 : i64, 2 : i64, 3 : i64]] output_shape [1, 1, 1, 2] : tensor<1x2xi32> into tensor<1x1x1x2xi32>
// CHECK-NEXT:    %[[LO:.*]] = arith.constant -128 : i8
// CHECK:         linalg.fill ins(%[[LO]] : i8)
// CHECK-NEXT:    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK:           arith.maxsi
// CHECK:         %[[HI:.*]] = arith.constant 127 : i8
// CHECK:         linalg.fill ins(%[[HI]] : i8)
// CHECK-NEXT:    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d3, d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK:           arith.minsi
// MLIR-LABEL:  func.func @reductions
// MLIR:          tensor.expand_shape
func.func @reductions(%x: tensor<1x6x6x2xi8>) -> (tensor<1x1x1x2xi32>, tensor<1x6x6xi8>, tensor<6x6x2xi8>) {
  %0 = qint.reduce_sum %x {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<1x6x6x2xi8>) -> tensor<1x1x1x2xi32>
  %1 = qint.reduce_max %x {axes = array<i64: -1>} : (tensor<1x6x6x2xi8>) -> tensor<1x6x6xi8>
  %2 = qint.reduce_min %x {axes = array<i64: 0>} : (tensor<1x6x6x2xi8>) -> tensor<6x6x2xi8>
  func.return %0, %1, %2 : tensor<1x1x1x2xi32>, tensor<1x6x6xi8>, tensor<6x6x2xi8>
}
