// RUN: %qd-opt %s -p qnn-decompose --verify-diagnostics
// qnn-decompose names every op it cannot lower in one diagnostic: the refused decompositions
// (qnn.add under half_even) and the ops that have none (qnn.log_softmax).  The diagnostic is at
// the first op it names.

!a = !quant.uniform<i8:f32, 0.5:-3>
!o = !quant.uniform<i8:f32, 0.25:5>
!l = !quant.uniform<i8:f32, 0.0625:127>
func.func @both_kinds(%a: tensor<2x3x!a>) -> (tensor<2x3x!o>, tensor<2x3x!l>) {
  // expected-error-re@+1 {{qnn-decompose cannot lower: qnn.add: qnn.add with rounding 'half_even'{{.*}}; qnn.log_softmax (no decomposition)}}
  %0 = qnn.add %a, %a {rounding = "half_even"} : (tensor<2x3x!a>, tensor<2x3x!a>) -> tensor<2x3x!o>
  %1 = qnn.log_softmax %a : (tensor<2x3x!a>) -> tensor<2x3x!l>
  func.return %0, %1 : tensor<2x3x!o>, tensor<2x3x!l>
}
