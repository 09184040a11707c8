// RUN: %qd-opt %s -p qnn-decompose --verify-diagnostics
// qnn-decompose names every op it cannot lower in one diagnostic: the refused decompositions
// (qnn.add under half_even) and the ops that have none (qnn.gather).  The diagnostic is at
// the first op it names.

!a = !quant.uniform<i8:f32, 0.5:-3>
!o = !quant.uniform<i8:f32, 0.25:5>
func.func @both_kinds(%a: tensor<2x3x!a>, %i: tensor<1xi32>) -> (tensor<2x3x!o>, tensor<1x3x!a>) {
  // expected-error-re@+1 {{qnn-decompose cannot lower: qnn.add: qnn.add with rounding 'half_even'{{.*}}; qnn.gather (no decomposition)}}
  %0 = qnn.add %a, %a {rounding = "half_even"} : (tensor<2x3x!a>, tensor<2x3x!a>) -> tensor<2x3x!o>
  %1 = qnn.gather %a, %i {axis = 0 : i64} : (tensor<2x3x!a>, tensor<1xi32>) -> tensor<1x3x!a>
  func.return %0, %1 : tensor<2x3x!o>, tensor<1x3x!a>
}
