// RUN: %qd-opt %s -p qnn-canonicalize | filecheck %s

// Each pattern of qnn-canonicalize, and cases it must leave alone.  Every
// rewrite here is bit-exact under every rounding profile.

!x = !quant.uniform<i8:f32, 0.05:-3>
!y = !quant.uniform<i8:f32, 0.1:5>
!w = !quant.uniform<i8:f32:0, {0.01, 0.02}>
!b = !quant.uniform<i32:f32:0, {5.0e-4, 1.0e-3}>

// A requantize between equal types is the identity.
// CHECK-LABEL: func.func @identity_requantize
// CHECK-NEXT:    func.return %{{.*}} : tensor<4x!quant.uniform<i8:f32, 5.000000e-02:-3>>
func.func @identity_requantize(%x: tensor<4x!x>) -> tensor<4x!x> {
  %0 = qnn.requantize %x : (tensor<4x!x>) -> tensor<4x!x>
  func.return %0 : tensor<4x!x>
}

// relu6 (a clamp between equal types) folds into the conv's clamp bounds.
// CHECK-LABEL: func.func @relu6_into_conv
// CHECK:         %[[C:.*]] = qnn.conv2d %{{.*}}, %{{.*}}, %{{.*}} {act_min = 5 : i64, act_max = 65 : i64}
// CHECK-NEXT:    func.return %[[C]]
func.func @relu6_into_conv(%x: tensor<1x2x2x3x!x>) -> tensor<1x2x2x2x!y> {
  %w = qnn.constant dense<"0x0AF6147FE281"> : tensor<2x1x1x3x!w>
  %b = qnn.constant dense<"0x64000000CEFFFFFF"> : tensor<2x!b>
  %c = qnn.conv2d %x, %w, %b : (tensor<1x2x2x3x!x>, tensor<2x1x1x3x!w>, tensor<2x!b>) -> tensor<1x2x2x2x!y>
  %r = qnn.clamp %c {act_min = 5 : i64, act_max = 65 : i64} : (tensor<1x2x2x2x!y>) -> tensor<1x2x2x2x!y>
  func.return %r : tensor<1x2x2x2x!y>
}

// Disjoint clamps compose to a constant bound.
// CHECK-LABEL: func.func @disjoint_clamps
// CHECK:         qnn.add %{{.*}}, %{{.*}} {act_min = 40 : i64, act_max = 40 : i64}
// CHECK-NOT:     qnn.clamp
func.func @disjoint_clamps(%x: tensor<4x!y>) -> tensor<4x!y> {
  %a = qnn.add %x, %x {act_min = -5 : i64, act_max = 15 : i64} : (tensor<4x!y>, tensor<4x!y>) -> tensor<4x!y>
  %r = qnn.clamp %a {act_min = 40 : i64, act_max = 60 : i64} : (tensor<4x!y>) -> tensor<4x!y>
  func.return %r : tensor<4x!y>
}

// relu spelled as max with the zero point becomes a clamp, which folds into the producer.
// CHECK-LABEL: func.func @max_with_zero_point
// CHECK:         %[[A:.*]] = qnn.add %{{.*}}, %{{.*}} {act_min = 5 : i64}
// CHECK-NEXT:    func.return %[[A]]
func.func @max_with_zero_point(%x: tensor<1x4x!y>) -> tensor<1x4x!y> {
  %a = qnn.add %x, %x : (tensor<1x4x!y>, tensor<1x4x!y>) -> tensor<1x4x!y>
  %z = qnn.constant dense<"0x05"> : tensor<1x!y>
  %m = qnn.maximum %a, %z : (tensor<1x4x!y>, tensor<1x!y>) -> tensor<1x4x!y>
  func.return %m : tensor<1x4x!y>
}

// min with a constant on a graph input: a clamp (nothing to fold into).
// CHECK-LABEL: func.func @min_with_constant
// CHECK-NEXT:    qnn.clamp %{{.*}} {act_max = 20 : i64} : (tensor<1x4x!quant.uniform<i8:f32, 1.000000e-01:5>>) -> tensor<1x4x!quant.uniform<i8:f32, 1.000000e-01:5>>
func.func @min_with_constant(%x: tensor<1x4x!y>) -> tensor<1x4x!y> {
  %z = qnn.constant dense<"0x14141414"> : tensor<4x!y>
  %m = qnn.minimum %z, %x : (tensor<4x!y>, tensor<1x4x!y>) -> tensor<1x4x!y>
  func.return %m : tensor<1x4x!y>
}

// Two requantizes whose composition is exactly one (0.1 -> 0.05 doubles, then back with a new zero point).
// CHECK-LABEL: func.func @exact_requantize_chain
// CHECK-NEXT:    %{{.*}} = qnn.requantize %{{.*}} : (tensor<4x!quant.uniform<i8:f32, 1.000000e-01>>) -> tensor<4x!quant.uniform<i8:f32, 1.000000e-01:3>>
// CHECK-NEXT:    func.return
func.func @exact_requantize_chain(%x: tensor<4x!quant.uniform<i8:f32, 0.1>>) -> tensor<4x!quant.uniform<i8:f32, 0.1:3>> {
  %a = qnn.requantize %x : (tensor<4x!quant.uniform<i8:f32, 0.1>>) -> tensor<4x!quant.uniform<i16:f32, 0.05>>
  %b = qnn.requantize %a : (tensor<4x!quant.uniform<i16:f32, 0.05>>) -> tensor<4x!quant.uniform<i8:f32, 0.1:3>>
  func.return %b : tensor<4x!quant.uniform<i8:f32, 0.1:3>>
}

// A requantize to another scale after a conv stays: folding it would round once instead of twice.
// CHECK-LABEL: func.func @requantize_after_conv_stays
// CHECK:         qnn.conv2d
// CHECK-NEXT:    qnn.requantize
func.func @requantize_after_conv_stays(%x: tensor<1x2x2x3x!x>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.2>> {
  %w = qnn.constant dense<"0x0AF6147FE281"> : tensor<2x1x1x3x!w>
  %b = qnn.constant dense<"0x64000000CEFFFFFF"> : tensor<2x!b>
  %c = qnn.conv2d %x, %w, %b : (tensor<1x2x2x3x!x>, tensor<2x1x1x3x!w>, tensor<2x!b>) -> tensor<1x2x2x2x!y>
  %r = qnn.requantize %c : (tensor<1x2x2x2x!y>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.2>>
  func.return %r : tensor<1x2x2x2x!quant.uniform<i8:f32, 0.2>>
}

// A clamp after a reshape moves before it, then folds into the producer.
// CHECK-LABEL: func.func @clamp_through_reshape
// CHECK:         %[[A:.*]] = qnn.add %{{.*}}, %{{.*}} {act_min = 5 : i64, act_max = 65 : i64}
// CHECK-NEXT:    %[[R:.*]] = qnn.reshape %[[A]]
// CHECK-NEXT:    func.return %[[R]]
func.func @clamp_through_reshape(%x: tensor<2x2x!y>) -> tensor<4x!y> {
  %a = qnn.add %x, %x : (tensor<2x2x!y>, tensor<2x2x!y>) -> tensor<2x2x!y>
  %r = qnn.reshape %a : (tensor<2x2x!y>) -> tensor<4x!y>
  %c = qnn.clamp %r {act_min = 5 : i64, act_max = 65 : i64} : (tensor<4x!y>) -> tensor<4x!y>
  func.return %c : tensor<4x!y>
}

// ... through transpose and slice as well.
// CHECK-LABEL: func.func @clamp_through_transpose_slice
// CHECK:         qnn.add %{{.*}}, %{{.*}} {act_min = 5 : i64}
// CHECK-NEXT:    qnn.transpose
// CHECK-NEXT:    qnn.slice
// CHECK-NEXT:    func.return
func.func @clamp_through_transpose_slice(%x: tensor<1x4x4x2x!y>) -> tensor<1x2x4x2x!y> {
  %a = qnn.add %x, %x : (tensor<1x4x4x2x!y>, tensor<1x4x4x2x!y>) -> tensor<1x4x4x2x!y>
  %t = qnn.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x4x2x!y>) -> tensor<1x4x4x2x!y>
  %s = qnn.slice %t {begin = array<i64: 0, 0, 0, 0>, end = array<i64: 1, 2, 4, 2>} : (tensor<1x4x4x2x!y>) -> tensor<1x2x4x2x!y>
  %c = qnn.clamp %s {act_min = 5 : i64} : (tensor<1x2x4x2x!y>) -> tensor<1x2x4x2x!y>
  func.return %c : tensor<1x2x4x2x!y>
}

// A pool's kernel clamps, so a clamp after it folds into the pool itself.
// CHECK-LABEL: func.func @clamp_into_pool
// CHECK:         qnn.max_pool2d %{{.*}} {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, act_min = 5 : i64}
// CHECK-NEXT:    func.return
func.func @clamp_into_pool(%x: tensor<1x2x4x2x!y>) -> tensor<1x1x2x2x!y> {
  %p = qnn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x2x!y>) -> tensor<1x1x2x2x!y>
  %c = qnn.clamp %p {act_min = 5 : i64} : (tensor<1x1x2x2x!y>) -> tensor<1x1x2x2x!y>
  func.return %c : tensor<1x1x2x2x!y>
}

// A requantize after a reshape moves before it when it then folds with the requantize before.
// CHECK-LABEL: func.func @requantize_through_reshape
// CHECK-NEXT:    %[[Q:.*]] = qnn.requantize %{{.*}} : (tensor<2x2x!quant.uniform<i8:f32, 1.000000e-01>>) -> tensor<2x2x!quant.uniform<i8:f32, 1.000000e-01:3>>
// CHECK-NEXT:    qnn.reshape %[[Q]] : (tensor<2x2x!quant.uniform<i8:f32, 1.000000e-01:3>>) -> tensor<4x!quant.uniform<i8:f32, 1.000000e-01:3>>
// CHECK-NEXT:    func.return
func.func @requantize_through_reshape(%x: tensor<2x2x!quant.uniform<i8:f32, 0.1>>) -> tensor<4x!quant.uniform<i8:f32, 0.1:3>> {
  %a = qnn.requantize %x : (tensor<2x2x!quant.uniform<i8:f32, 0.1>>) -> tensor<2x2x!quant.uniform<i16:f32, 0.05>>
  %r = qnn.reshape %a : (tensor<2x2x!quant.uniform<i16:f32, 0.05>>) -> tensor<4x!quant.uniform<i16:f32, 0.05>>
  %b = qnn.requantize %r : (tensor<4x!quant.uniform<i16:f32, 0.05>>) -> tensor<4x!quant.uniform<i8:f32, 0.1:3>>
  func.return %b : tensor<4x!quant.uniform<i8:f32, 0.1:3>>
}

// Through a pad, the pad value goes through the clamp too (-100 clamps to the zero point 5).
// CHECK-LABEL: func.func @clamp_through_pad
// CHECK:         qnn.add %{{.*}}, %{{.*}} {act_min = 5 : i64}
// CHECK-NEXT:    qnn.pad %{{.*}} {paddings = array<i64: 1, 1>} :
func.func @clamp_through_pad(%x: tensor<4x!y>) -> tensor<6x!y> {
  %a = qnn.add %x, %x : (tensor<4x!y>, tensor<4x!y>) -> tensor<4x!y>
  %p = qnn.pad %a {paddings = array<i64: 1, 1>, pad_value = -100 : i64} : (tensor<4x!y>) -> tensor<6x!y>
  %c = qnn.clamp %p {act_min = 5 : i64} : (tensor<6x!y>) -> tensor<6x!y>
  func.return %c : tensor<6x!y>
}

// A requantize of a constant is computed now.
// CHECK-LABEL: func.func @requantize_constant
// CHECK-NEXT:    %{{.*}} = qnn.constant dense<"0xFCFE0002"> : tensor<4x!quant.uniform<i8:f32, 1.000000e-01>>
// CHECK-NEXT:    func.return
func.func @requantize_constant() -> tensor<4x!quant.uniform<i8:f32, 0.1>> {
  %c = qnn.constant dense<"0xFEFF0001"> : tensor<4x!quant.uniform<i8:f32, 0.2>>
  %r = qnn.requantize %c : (tensor<4x!quant.uniform<i8:f32, 0.2>>) -> tensor<4x!quant.uniform<i8:f32, 0.1>>
  func.return %r : tensor<4x!quant.uniform<i8:f32, 0.1>>
}

// logistic's kernel does not clamp, so a clamp after it stays.
// CHECK-LABEL: func.func @clamp_after_logistic_stays
// CHECK:         qnn.logistic
// CHECK-NEXT:    qnn.clamp
func.func @clamp_after_logistic_stays(%x: tensor<4x!x>) -> tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>> {
  %l = qnn.logistic %x : (tensor<4x!x>) -> tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>>
  %c = qnn.clamp %l {act_min = 0 : i64} : (tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>>) -> tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>>
  func.return %c : tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>>
}

// A producer with another use keeps its clamp bounds.
// CHECK-LABEL: func.func @second_use_blocks_folding
// CHECK:         qnn.add %{{.*}}, %{{.*}} :
// CHECK-NEXT:    qnn.clamp
func.func @second_use_blocks_folding(%x: tensor<4x!y>) -> (tensor<4x!y>, tensor<4x!y>) {
  %a = qnn.add %x, %x : (tensor<4x!y>, tensor<4x!y>) -> tensor<4x!y>
  %c = qnn.clamp %a {act_min = 5 : i64} : (tensor<4x!y>) -> tensor<4x!y>
  func.return %c, %a : tensor<4x!y>, tensor<4x!y>
}

// A requantize to the same grid with a narrower storage range is a clamp: the
// conv takes the narrower result type (its arithmetic does not depend on the range).
// CHECK-LABEL: func.func @narrowing_requantize
// CHECK:         %[[C:.*]] = qnn.conv2d {{.*}} -> tensor<1x2x2x2x!quant.uniform<i8<-127:127>:f32, 1.000000e-01:5>>
// CHECK-NEXT:    func.return %[[C]]
func.func @narrowing_requantize(%x: tensor<1x2x2x3x!x>) -> tensor<1x2x2x2x!quant.uniform<i8<-127:127>:f32, 0.1:5>> {
  %w = qnn.constant dense<"0x0AF6147FE281"> : tensor<2x1x1x3x!w>
  %b = qnn.constant dense<"0x64000000CEFFFFFF"> : tensor<2x!b>
  %c = qnn.conv2d %x, %w, %b : (tensor<1x2x2x3x!x>, tensor<2x1x1x3x!w>, tensor<2x!b>) -> tensor<1x2x2x2x!y>
  %r = qnn.requantize %c : (tensor<1x2x2x2x!y>) -> tensor<1x2x2x2x!quant.uniform<i8<-127:127>:f32, 0.1:5>>
  func.return %r : tensor<1x2x2x2x!quant.uniform<i8<-127:127>:f32, 0.1:5>>
}
