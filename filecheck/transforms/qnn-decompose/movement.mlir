// RUN: %qd-opt %s -p qnn-decompose | filecheck %s

// Data movement keeps the stored integers: tensor / linalg ops on the storage type.
// Constants become integer constants, and the signature becomes the storage types
// (u8 storage travels as its i8 bits).

!a = !quant.uniform<i8:f32, 0.5:-3>
!u = !quant.uniform<u8:f32, 0.1:200>

// reshape: a collapse (or expand) when the dims group, else through 1-D (1x4x4x2 -> 2x16 does not group);
// transpose: linalg.transpose; pad: tensor.pad with the input zero point (-3); slice: extract_slice with strides;
// split: one extract_slice per result; concatenation of equal types: tensor.concat (axis -1 -> dim 3).
// CHECK-LABEL: func.func @movement(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<1x4x4x2xi8>) -> (tensor<2x16xi8>, tensor<1x2x4x4xi8>, tensor<1x6x6x2xi8>, tensor<1x2x4x1xi8>, tensor<1x1x4x2xi8>, tensor<1x3x4x2xi8>, tensor<1x4x4x4xi8>, tensor<4x8xi8>)
// CHECK-NEXT:    %[[FLAT:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0 : i64, 1 : i64, 2 : i64, 3 : i64]] : tensor<1x4x4x2xi8> into tensor<32xi8>
// CHECK-NEXT:    %[[R:.*]] = tensor.expand_shape %[[FLAT]] {{\[\[}}0 : i64, 1 : i64]] output_shape [2, 16] : tensor<32xi8> into tensor<2x16xi8>
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<1x2x4x4xi8>
// CHECK-NEXT:    %[[T:.*]] = linalg.transpose ins(%[[X]]:tensor<1x4x4x2xi8>) outs(%[[E]]:tensor<1x2x4x4xi8>) permutation = [0, 3, 1, 2]
// CHECK-NEXT:    %[[ZP:.*]] = arith.constant -3 : i8
// CHECK-NEXT:    %[[P:.*]] = tensor.pad %[[X]] low[0, 1, 2, 0] high[0, 1, 0, 0] {
// CHECK-NEXT:    ^bb0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK-NEXT:      tensor.yield %[[ZP]] : i8
// CHECK-NEXT:    } : tensor<1x4x4x2xi8> to tensor<1x6x6x2xi8>
// CHECK-NEXT:    %[[SL:.*]] = tensor.extract_slice %[[X]][0, 1, 0, 0] [1, 2, 4, 1] [1, 2, 1, 1] : tensor<1x4x4x2xi8> to tensor<1x2x4x1xi8>
// CHECK-NEXT:    %[[S0:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [1, 1, 4, 2] [1, 1, 1, 1] : tensor<1x4x4x2xi8> to tensor<1x1x4x2xi8>
// CHECK-NEXT:    %[[S1:.*]] = tensor.extract_slice %[[X]][0, 1, 0, 0] [1, 3, 4, 2] [1, 1, 1, 1] : tensor<1x4x4x2xi8> to tensor<1x3x4x2xi8>
// CHECK-NEXT:    %[[C:.*]] = tensor.concat dim(3) %[[X]], %[[X]] : (tensor<1x4x4x2xi8>, tensor<1x4x4x2xi8>) -> tensor<1x4x4x4xi8>
// CHECK-NEXT:    %[[R2:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0 : i64, 1 : i64], [2 : i64, 3 : i64]] : tensor<1x4x4x2xi8> into tensor<4x8xi8>
// CHECK-NEXT:    func.return %[[R]], %[[T]], %[[P]], %[[SL]], %[[S0]], %[[S1]], %[[C]], %[[R2]]
func.func @movement(%x: tensor<1x4x4x2x!a>) -> (tensor<2x16x!a>, tensor<1x2x4x4x!a>, tensor<1x6x6x2x!a>, tensor<1x2x4x1x!a>, tensor<1x1x4x2x!a>, tensor<1x3x4x2x!a>, tensor<1x4x4x4x!a>, tensor<4x8x!a>) {
  %0 = qnn.reshape %x : (tensor<1x4x4x2x!a>) -> tensor<2x16x!a>
  %1 = qnn.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x2x!a>) -> tensor<1x2x4x4x!a>
  %2 = qnn.pad %x {paddings = array<i64: 0, 0, 1, 1, 2, 0, 0, 0>} : (tensor<1x4x4x2x!a>) -> tensor<1x6x6x2x!a>
  %3 = qnn.slice %x {begin = array<i64: 0, 1, 0, 0>, end = array<i64: 1, 4, 4, 1>, strides = array<i64: 1, 2, 1, 1>} : (tensor<1x4x4x2x!a>) -> tensor<1x2x4x1x!a>
  %4:2 = qnn.split %x {axis = 1 : i64} : (tensor<1x4x4x2x!a>) -> (tensor<1x1x4x2x!a>, tensor<1x3x4x2x!a>)
  %5 = qnn.concatenation %x, %x {axis = -1 : i64} : (tensor<1x4x4x2x!a>, tensor<1x4x4x2x!a>) -> tensor<1x4x4x4x!a>
  %6 = qnn.reshape %x : (tensor<1x4x4x2x!a>) -> tensor<4x8x!a>
  func.return %0, %1, %2, %3, %4#0, %4#1, %5, %6 : tensor<2x16x!a>, tensor<1x2x4x4x!a>, tensor<1x6x6x2x!a>, tensor<1x2x4x1x!a>, tensor<1x1x4x2x!a>, tensor<1x3x4x2x!a>, tensor<1x4x4x4x!a>, tensor<4x8x!a>
}

// Reshapes that add dims: an expand_shape when the source dims split, else collapse then expand.
// CHECK-LABEL: func.func @expand
// CHECK-NEXT:    %[[A:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0 : i64, 1 : i64], [2 : i64, 3 : i64]] output_shape [1, 2, 2, 4] : tensor<2x8xi8> into tensor<1x2x2x4xi8>
// CHECK-NEXT:    %[[F:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0 : i64, 1 : i64]] : tensor<2x8xi8> into tensor<16xi8>
// CHECK-NEXT:    %[[B:.*]] = tensor.expand_shape %[[F]] {{\[\[}}0 : i64, 1 : i64]] output_shape [4, 4] : tensor<16xi8> into tensor<4x4xi8>
// CHECK-NEXT:    func.return %[[A]], %[[B]]
func.func @expand(%x: tensor<2x8x!a>) -> (tensor<1x2x2x4x!a>, tensor<4x4x!a>) {
  %0 = qnn.reshape %x : (tensor<2x8x!a>) -> tensor<1x2x2x4x!a>
  %1 = qnn.reshape %x : (tensor<2x8x!a>) -> tensor<4x4x!a>
  func.return %0, %1 : tensor<1x2x2x4x!a>, tensor<4x4x!a>
}

// u8 storage: the pad value is the zero point 200, whose bits as i8 are -56; constants keep their bits.
// CHECK-LABEL: func.func @unsigned(%{{.*}}: tensor<1x2x2x1xi8> {qnn.element_type = ui8}) -> (tensor<1x4x2x1xi8> {qnn.element_type = ui8}, tensor<4xi8> {qnn.element_type = ui8})
// CHECK-NEXT:    %[[ZP:.*]] = arith.constant -56 : i8
// CHECK-NEXT:    tensor.pad %{{.*}} low[0, 1, 0, 0] high[0, 1, 0, 0]
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tensor.yield %[[ZP]] : i8
// CHECK:         arith.constant dense<[0, -56, -1, 1]> : tensor<4xi8>
func.func @unsigned(%x: tensor<1x2x2x1x!u>) -> (tensor<1x4x2x1x!u>, tensor<4x!u>) {
  %0 = qnn.pad %x {paddings = array<i64: 0, 0, 1, 1, 0, 0, 0, 0>} : (tensor<1x2x2x1x!u>) -> tensor<1x4x2x1x!u>
  %c = qnn.constant dense<"0x00C8FF01"> : tensor<4x!u>
  func.return %0, %c : tensor<1x4x2x1x!u>, tensor<4x!u>
}

// qnn.constant -> arith.constant of the storage type (i8, i16); plain integer constants stay.
// CHECK-LABEL: func.func @constants() -> (tensor<3xi8>, tensor<2xi32>, tensor<2xi16>)
// CHECK-NEXT:    arith.constant dense<[127, -128, -3]> : tensor<3xi8>
// CHECK-NEXT:    arith.constant dense<[1, 2]> : tensor<2xi32>
// CHECK-NEXT:    arith.constant dense<[-32768, 32767]> : tensor<2xi16>
func.func @constants() -> (tensor<3x!a>, tensor<2xi32>, tensor<2x!quant.uniform<i16:f32, 0.001>>) {
  %0 = qnn.constant dense<"0x7F80FD"> : tensor<3x!a>
  %1 = arith.constant dense<[1, 2]> : tensor<2xi32>
  %2 = qnn.constant dense<"0x0080FF7F"> : tensor<2x!quant.uniform<i16:f32, 0.001>>
  func.return %0, %1, %2 : tensor<3x!a>, tensor<2xi32>, tensor<2x!quant.uniform<i16:f32, 0.001>>
}

// A function with no qnn ops still has its quantized arguments and results converted; floats stay.
// CHECK-LABEL: func.func @passthrough(
// CHECK-SAME:    %[[Q:[^:]*]]: tensor<4xi8>, %[[F:[^:]*]]: tensor<4xf32>) -> (tensor<4xi8>, tensor<4xf32>)
// CHECK-NEXT:    func.return %[[Q]], %[[F]] : tensor<4xi8>, tensor<4xf32>
// CHECK-NOT:     quant.
func.func @passthrough(%x: tensor<4x!a>, %f: tensor<4xf32>) -> (tensor<4x!a>, tensor<4xf32>) {
  func.return %x, %f : tensor<4x!a>, tensor<4xf32>
}
