// RUN: %qd-opt %s | %qd-opt | filecheck %s
// RUN: %qd-opt %s --print-op-generic | %qd-opt | filecheck %s

// The transformer-encoder ops (issue 22): one valid use of each; each prints back unchanged.

!a = !quant.uniform<i8:f32, 0.5:-3>
!o = !quant.uniform<i8:f32, 0.25:5>
!z = !quant.uniform<i8:f32, 0.5>
!h = !quant.uniform<i16:f32, 0.001>

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<2x8x!a>, %y: tensor<2x8x!h>, %z: tensor<2x8x!z>) {
  // CHECK: qnn.gelu %{{.*}} {approximate = true} : (tensor<2x8x{{.*}}>) -> tensor<2x8x{{.*}}>
  %0 = qnn.gelu %x {approximate = true} : (tensor<2x8x!a>) -> tensor<2x8x!o>
  // CHECK-NEXT: qnn.gelu %{{.*}} : (tensor<2x8x!quant.uniform<i16{{.*}}>) -> tensor<2x8x!quant.uniform<i16
  %1 = qnn.gelu %y : (tensor<2x8x!h>) -> tensor<2x8x!h>
  // CHECK-NEXT: qnn.exp
  %2 = qnn.exp %x : (tensor<2x8x!a>) -> tensor<2x8x!o>
  // CHECK-NEXT: qnn.rsqrt
  %3 = qnn.rsqrt %x : (tensor<2x8x!a>) -> tensor<2x8x!o>
  // CHECK-NEXT: qnn.sqrt {{.*}} {rounding = "litert"}
  %4 = qnn.sqrt %x {rounding = "litert"} : (tensor<2x8x!a>) -> tensor<2x8x!o>
  // CHECK-NEXT: qnn.abs
  %5 = qnn.abs %y : (tensor<2x8x!h>) -> tensor<2x8x!h>
  // CHECK-NEXT: qnn.neg
  %6 = qnn.neg %z : (tensor<2x8x!z>) -> tensor<2x8x!z>
  // CHECK-NEXT: qnn.l2_normalization
  %7 = qnn.l2_normalization %x : (tensor<2x8x!a>) -> tensor<2x8x!quant.uniform<i8:f32, 0.0078125>>
  func.return
}

// CHECK-LABEL: func.func @movement
func.func @movement(%x: tensor<2x1x3x!a>, %p: tensor<2x4x5x!a>, %i: tensor<3x2xi32>) {
  // CHECK: qnn.tile %{{.*}} {multiples = array<i64: 2, 4, 1>} : (tensor<2x1x3x{{.*}}>) -> tensor<4x4x3x
  %0 = qnn.tile %x {multiples = array<i64: 2, 4, 1>} : (tensor<2x1x3x!a>) -> tensor<4x4x3x!a>
  // CHECK-NEXT: qnn.mirror_pad %{{.*}} {paddings = array<i64: 0, 0, 3, 1, 1, 1>, mode = "reflect"} : {{.*}} -> tensor<2x8x7x
  %1 = qnn.mirror_pad %p {paddings = array<i64: 0, 0, 3, 1, 1, 1>, mode = "reflect"} : (tensor<2x4x5x!a>) -> tensor<2x8x7x!a>
  // CHECK-NEXT: qnn.mirror_pad %{{.*}} {paddings = array<i64: 2, 0, 4, 4, 0, 5>, mode = "symmetric"} : {{.*}} -> tensor<4x12x10x
  %2 = qnn.mirror_pad %p {paddings = array<i64: 2, 0, 4, 4, 0, 5>, mode = "symmetric"} : (tensor<2x4x5x!a>) -> tensor<4x12x10x!a>
  // CHECK-NEXT: qnn.gather_nd %{{.*}}, %{{.*}} : (tensor<2x4x5x{{.*}}>, tensor<3x2xi32>) -> tensor<3x5x
  %3 = qnn.gather_nd %p, %i : (tensor<2x4x5x!a>, tensor<3x2xi32>) -> tensor<3x5x!a>
  // CHECK-NEXT: qnn.arg_max %{{.*}} {axis = 1 : i64} : (tensor<2x4x5x{{.*}}>) -> tensor<2x5xi32>
  %4 = qnn.arg_max %p {axis = 1 : i64} : (tensor<2x4x5x!a>) -> tensor<2x5xi32>
  // CHECK-NEXT: qnn.arg_min %{{.*}} {axis = 2 : i64} : (tensor<2x4x5x{{.*}}>) -> tensor<2x4xi64>
  %5 = qnn.arg_min %p {axis = 2 : i64} : (tensor<2x4x5x!a>) -> tensor<2x4xi64>
  func.return
}
