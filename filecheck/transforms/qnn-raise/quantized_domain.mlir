// RUN: %qd-opt %s -p qnn-raise | filecheck %s

// Ops that "need nothing": nn ops straight on quantized tensors become the qnn ops.

!x = !quant.uniform<i8:f32, 0.05:-3>

// CHECK-LABEL: func.func @need_nothing
// CHECK-NEXT:    %[[P:.*]] = qnn.pad %x {paddings = array<i64: 0, 0, 1, 1, 1, 1, 0, 0>} : (tensor<1x2x2x1x!quant.uniform<i8:f32, 5.000000e-02:-3>>) -> tensor<1x4x4x1x!quant.uniform<i8:f32, 5.000000e-02:-3>>
// CHECK-NEXT:    %[[M:.*]] = qnn.max_pool2d %[[P]] {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>}
// CHECK-NEXT:    %[[R:.*]] = qnn.reshape %[[M]]
// CHECK-NEXT:    %[[T:.*]] = qnn.transpose %[[R]] {perm = array<i64: 1, 0>}
// CHECK-NEXT:    %[[N:.*]] = qnn.minimum %[[T]], %[[T]]
// CHECK-NEXT:    %[[C:.*]] = qnn.concatenation %[[N]], %[[N]] {axis = 0 : i64}
// CHECK-NEXT:    func.return %[[C]]
func.func @need_nothing(%x: tensor<1x2x2x1x!x>) -> tensor<2x4x!x> {
  %p = nn.pad %x {paddings = array<i64: 0, 0, 1, 1, 1, 1, 0, 0>} : (tensor<1x2x2x1x!x>) -> tensor<1x4x4x1x!x>
  %m = nn.max_pool2d %p {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x1x!x>) -> tensor<1x2x2x1x!x>
  %r = nn.reshape %m : (tensor<1x2x2x1x!x>) -> tensor<4x1x!x>
  %t = nn.transpose %r {perm = array<i64: 1, 0>} : (tensor<4x1x!x>) -> tensor<1x4x!x>
  %n = nn.minimum %t, %t : (tensor<1x4x!x>, tensor<1x4x!x>) -> tensor<1x4x!x>
  %c = nn.concatenation %n, %n {axis = 0 : i64} : (tensor<1x4x!x>, tensor<1x4x!x>) -> tensor<2x4x!x>
  func.return %c : tensor<2x4x!x>
}

// relu as max with a quantized zero-point constant, on quantized tensors, folds into the pool.
// CHECK-LABEL: func.func @relu_as_max_on_stored_values
// CHECK-NEXT:    %[[M:.*]] = qnn.max_pool2d %x {kernel = array<i64: 2, 2>, act_min = -3 : i64}
// CHECK-NEXT:    func.return %[[M]]
func.func @relu_as_max_on_stored_values(%x: tensor<1x2x2x1x!x>) -> tensor<1x1x1x1x!x> {
  %m = nn.max_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<1x2x2x1x!x>) -> tensor<1x1x1x1x!x>
  %z = qnn.constant dense<"0xFD"> : tensor<1x!x>
  %r = nn.maximum %m, %z : (tensor<1x1x1x1x!x>, tensor<1x!x>) -> tensor<1x1x1x1x!x>
  func.return %r : tensor<1x1x1x1x!x>
}

// A real pad value on a quantized tensor becomes its stored value: -3 + 0.5 / 0.05 = 7.
// CHECK-LABEL: func.func @pad_value
// CHECK-NEXT:    qnn.pad %x {paddings = array<i64: 1, 0>, pad_value = 7 : i64}
func.func @pad_value(%x: tensor<2x!x>) -> tensor<3x!x> {
  %p = nn.pad %x {paddings = array<i64: 1, 0>, pad_value = 0.5 : f64} : (tensor<2x!x>) -> tensor<3x!x>
  func.return %p : tensor<3x!x>
}
