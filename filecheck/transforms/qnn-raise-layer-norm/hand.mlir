// RUN: %qd-opt %s -p qnn-raise-layer-norm | filecheck %s

// The hand-spelled layer norm `d = x - mean(x); d * (rsqrt(mean(d * d) + eps) * gamma)`
// (TFLite 16x8 encoders spell it so; here in int8) becomes one qnn.layer_norm whose body
// is the chain, constants included; near-misses are left alone.

!x = !quant.uniform<i8:f32, 0.05:3>
!m = !quant.uniform<i8:f32, 0.01:2>
!d = !quant.uniform<i8:f32, 0.04:0>
!s = !quant.uniform<i8:f32, 0.02:-128>
!v = !quant.uniform<i8:f32, 0.01:-128>
!e = !quant.uniform<i8:f32, 1.0e-05:-128>
!r = !quant.uniform<i8:f32, 0.05:-128>
!gm = !quant.uniform<i8:f32, 0.01:-128>
!g = !quant.uniform<i8:f32, 0.05:-128>
!y = !quant.uniform<i8:f32, 0.03:-2>

// CHECK-LABEL: func.func @hand
// CHECK-NEXT:    %[[LN:.*]] = qnn.layer_norm %x {axis = 1 : i64, epsilon = {{.*}} : f64, spelling = "tflite_hand"} : (tensor<2x8x!quant.uniform<i8:f32, {{.*}}:3>>) -> tensor<2x8x!quant.uniform<i8:f32, {{.*}}:-2>> {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<2x8x!quant.uniform<i8:f32, {{.*}}:3>>):
// CHECK-NEXT:      %[[M:.*]] = qnn.mean %[[X]] {axes = array<i64: -1>, keep_dims = true}
// CHECK-NEXT:      %[[D:.*]] = qnn.sub %[[X]], %[[M]]
// CHECK-NEXT:      %[[S:.*]] = qnn.mul %[[D]], %[[D]]
// CHECK-NEXT:      %[[V:.*]] = qnn.mean %[[S]] {axes = array<i64: -1>, keep_dims = true}
// CHECK-NEXT:      %[[E:.*]] = qnn.constant dense<"0x7F">
// CHECK-NEXT:      %[[A:.*]] = qnn.add %[[V]], %[[E]]
// CHECK-NEXT:      %[[R:.*]] = qnn.rsqrt %[[A]]
// CHECK-NEXT:      %[[GAMMA:.*]] = qnn.constant dense<"0x6A7F5C70657A6E61">
// CHECK-NEXT:      %[[G:.*]] = qnn.mul %[[R]], %[[GAMMA]]
// CHECK-NEXT:      %[[P:.*]] = qnn.mul %[[D]], %[[G]]
// CHECK-NEXT:      qnn.yield %[[P]] : tensor<2x8x!quant.uniform<i8:f32, {{.*}}:-2>>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[LN]]
func.func @hand(%x: tensor<2x8x!x>) -> tensor<2x8x!y> {
  %m = qnn.mean %x {axes = array<i64: -1>, keep_dims = true} : (tensor<2x8x!x>) -> tensor<2x1x!m>
  %d = qnn.sub %x, %m : (tensor<2x8x!x>, tensor<2x1x!m>) -> tensor<2x8x!d>
  %s = qnn.mul %d, %d : (tensor<2x8x!d>, tensor<2x8x!d>) -> tensor<2x8x!s>
  %v = qnn.mean %s {axes = array<i64: -1>, keep_dims = true} : (tensor<2x8x!s>) -> tensor<2x1x!v>
  %e = qnn.constant dense<"0x7F"> : tensor<!e>
  %a = qnn.add %v, %e : (tensor<2x1x!v>, tensor<!e>) -> tensor<2x1x!v>
  %r = qnn.rsqrt %a : (tensor<2x1x!v>) -> tensor<2x1x!r>
  %gamma = qnn.constant dense<"0x6A7F5C70657A6E61"> : tensor<8x!gm>
  %g = qnn.mul %r, %gamma : (tensor<2x1x!r>, tensor<8x!gm>) -> tensor<2x8x!g>
  %p = qnn.mul %d, %g : (tensor<2x8x!d>, tensor<2x8x!g>) -> tensor<2x8x!y>
  func.return %p : tensor<2x8x!y>
}

// The variance reduces another axis than the mean: not a layer norm.
// CHECK-LABEL: func.func @variance_over_another_axis
// CHECK-NOT:     qnn.layer_norm
// CHECK:         qnn.rsqrt
func.func @variance_over_another_axis(%x: tensor<2x8x!x>) -> tensor<2x8x!y> {
  %m = qnn.mean %x {axes = array<i64: -1>, keep_dims = true} : (tensor<2x8x!x>) -> tensor<2x1x!m>
  %d = qnn.sub %x, %m : (tensor<2x8x!x>, tensor<2x1x!m>) -> tensor<2x8x!d>
  %s = qnn.mul %d, %d : (tensor<2x8x!d>, tensor<2x8x!d>) -> tensor<2x8x!s>
  %v = qnn.mean %s {axes = array<i64: 0>, keep_dims = true} : (tensor<2x8x!s>) -> tensor<1x8x!v>
  %e = qnn.constant dense<"0x7F"> : tensor<!e>
  %a = qnn.add %v, %e : (tensor<1x8x!v>, tensor<!e>) -> tensor<1x8x!v>
  %r = qnn.rsqrt %a : (tensor<1x8x!v>) -> tensor<1x8x!r>
  %gamma = qnn.constant dense<"0x6A7F5C70657A6E61"> : tensor<8x!gm>
  %g = qnn.mul %r, %gamma : (tensor<1x8x!r>, tensor<8x!gm>) -> tensor<1x8x!g>
  %p = qnn.mul %d, %g : (tensor<2x8x!d>, tensor<1x8x!g>) -> tensor<2x8x!y>
  func.return %p : tensor<2x8x!y>
}

// Both means over the first axis: only the last axis is a layer norm's.
// CHECK-LABEL: func.func @mean_over_the_first_axis
// CHECK-NOT:     qnn.layer_norm
// CHECK:         qnn.rsqrt
func.func @mean_over_the_first_axis(%x: tensor<2x8x!x>) -> tensor<2x8x!y> {
  %m = qnn.mean %x {axes = array<i64: 0>, keep_dims = true} : (tensor<2x8x!x>) -> tensor<1x8x!m>
  %d = qnn.sub %x, %m : (tensor<2x8x!x>, tensor<1x8x!m>) -> tensor<2x8x!d>
  %s = qnn.mul %d, %d : (tensor<2x8x!d>, tensor<2x8x!d>) -> tensor<2x8x!s>
  %v = qnn.mean %s {axes = array<i64: 0>, keep_dims = true} : (tensor<2x8x!s>) -> tensor<1x8x!v>
  %e = qnn.constant dense<"0x7F"> : tensor<!e>
  %a = qnn.add %v, %e : (tensor<1x8x!v>, tensor<!e>) -> tensor<1x8x!v>
  %r = qnn.rsqrt %a : (tensor<1x8x!v>) -> tensor<1x8x!r>
  %gamma = qnn.constant dense<"0x6A7F5C70657A6E61"> : tensor<8x!gm>
  %g = qnn.mul %r, %gamma : (tensor<1x8x!r>, tensor<8x!gm>) -> tensor<1x8x!g>
  %p = qnn.mul %d, %g : (tensor<2x8x!d>, tensor<1x8x!g>) -> tensor<2x8x!y>
  func.return %p : tensor<2x8x!y>
}

// The subtracted mean is another tensor's.
// CHECK-LABEL: func.func @mean_of_another_tensor
// CHECK-NOT:     qnn.layer_norm
// CHECK:         qnn.rsqrt
func.func @mean_of_another_tensor(%x: tensor<2x8x!x>, %w: tensor<2x8x!x>) -> tensor<2x8x!y> {
  %m = qnn.mean %w {axes = array<i64: -1>, keep_dims = true} : (tensor<2x8x!x>) -> tensor<2x1x!m>
  %d = qnn.sub %x, %m : (tensor<2x8x!x>, tensor<2x1x!m>) -> tensor<2x8x!d>
  %s = qnn.mul %d, %d : (tensor<2x8x!d>, tensor<2x8x!d>) -> tensor<2x8x!s>
  %v = qnn.mean %s {axes = array<i64: -1>, keep_dims = true} : (tensor<2x8x!s>) -> tensor<2x1x!v>
  %e = qnn.constant dense<"0x7F"> : tensor<!e>
  %a = qnn.add %v, %e : (tensor<2x1x!v>, tensor<!e>) -> tensor<2x1x!v>
  %r = qnn.rsqrt %a : (tensor<2x1x!v>) -> tensor<2x1x!r>
  %gamma = qnn.constant dense<"0x6A7F5C70657A6E61"> : tensor<8x!gm>
  %g = qnn.mul %r, %gamma : (tensor<2x1x!r>, tensor<8x!gm>) -> tensor<2x8x!g>
  %p = qnn.mul %d, %g : (tensor<2x8x!d>, tensor<2x8x!g>) -> tensor<2x8x!y>
  func.return %p : tensor<2x8x!y>
}

// An intermediate (the rsqrt) is read outside the chain: raising would hide it.
// CHECK-LABEL: func.func @intermediate_read_outside
// CHECK-NOT:     qnn.layer_norm
// CHECK:         func.return %{{.*}}, %{{.*}}
func.func @intermediate_read_outside(%x: tensor<2x8x!x>) -> (tensor<2x8x!y>, tensor<2x1x!r>) {
  %m = qnn.mean %x {axes = array<i64: -1>, keep_dims = true} : (tensor<2x8x!x>) -> tensor<2x1x!m>
  %d = qnn.sub %x, %m : (tensor<2x8x!x>, tensor<2x1x!m>) -> tensor<2x8x!d>
  %s = qnn.mul %d, %d : (tensor<2x8x!d>, tensor<2x8x!d>) -> tensor<2x8x!s>
  %v = qnn.mean %s {axes = array<i64: -1>, keep_dims = true} : (tensor<2x8x!s>) -> tensor<2x1x!v>
  %e = qnn.constant dense<"0x7F"> : tensor<!e>
  %a = qnn.add %v, %e : (tensor<2x1x!v>, tensor<!e>) -> tensor<2x1x!v>
  %r = qnn.rsqrt %a : (tensor<2x1x!v>) -> tensor<2x1x!r>
  %gamma = qnn.constant dense<"0x6A7F5C70657A6E61"> : tensor<8x!gm>
  %g = qnn.mul %r, %gamma : (tensor<2x1x!r>, tensor<8x!gm>) -> tensor<2x8x!g>
  %p = qnn.mul %d, %g : (tensor<2x8x!d>, tensor<2x8x!g>) -> tensor<2x8x!y>
  func.return %p, %r : tensor<2x8x!y>, tensor<2x1x!r>
}

// Epsilon is a run-time value, not a constant.
// CHECK-LABEL: func.func @epsilon_not_constant
// CHECK-NOT:     qnn.layer_norm
// CHECK:         qnn.rsqrt
func.func @epsilon_not_constant(%x: tensor<2x8x!x>, %e: tensor<!e>) -> tensor<2x8x!y> {
  %m = qnn.mean %x {axes = array<i64: -1>, keep_dims = true} : (tensor<2x8x!x>) -> tensor<2x1x!m>
  %d = qnn.sub %x, %m : (tensor<2x8x!x>, tensor<2x1x!m>) -> tensor<2x8x!d>
  %s = qnn.mul %d, %d : (tensor<2x8x!d>, tensor<2x8x!d>) -> tensor<2x8x!s>
  %v = qnn.mean %s {axes = array<i64: -1>, keep_dims = true} : (tensor<2x8x!s>) -> tensor<2x1x!v>
  %a = qnn.add %v, %e : (tensor<2x1x!v>, tensor<!e>) -> tensor<2x1x!v>
  %r = qnn.rsqrt %a : (tensor<2x1x!v>) -> tensor<2x1x!r>
  %gamma = qnn.constant dense<"0x6A7F5C70657A6E61"> : tensor<8x!gm>
  %g = qnn.mul %r, %gamma : (tensor<2x1x!r>, tensor<8x!gm>) -> tensor<2x8x!g>
  %p = qnn.mul %d, %g : (tensor<2x8x!d>, tensor<2x8x!g>) -> tensor<2x8x!y>
  func.return %p : tensor<2x8x!y>
}
