// RUN: %qd-opt %s | %qd-opt | filecheck %s

// The mask ops of issue 22: comparisons and logic on i1, selection, integer arithmetic.

!q = !quant.uniform<i8:f32, 0.1:3>

// CHECK-LABEL: func.func @mask
func.func @mask(%ids: tensor<1x10xi32>, %s: tensor<1x2x10x10x!q>, %neg: tensor<1x!q>) -> tensor<1x2x10x10x!q> {
  %zero = nn.constant dense<"0x00000000"> : tensor<i32>
  // CHECK: nn.compare %{{.*}}, %{{.*}} {predicate = "ne"} : (tensor<1x10xi32>, tensor<i32>) -> tensor<1x10xi1>
  %valid = nn.compare %ids, %zero {predicate = "ne"} : (tensor<1x10xi32>, tensor<i32>) -> tensor<1x10xi1>
  // CHECK: nn.add %{{.*}}, %{{.*}} : (tensor<1x10xi32>, tensor<i32>) -> tensor<1x10xi32>
  %wrapped = nn.add %ids, %zero : (tensor<1x10xi32>, tensor<i32>) -> tensor<1x10xi32>
  %q = nn.reshape %valid : (tensor<1x10xi1>) -> tensor<1x1x10x1xi1>
  %k = nn.reshape %valid : (tensor<1x10xi1>) -> tensor<1x1x1x10xi1>
  // CHECK: nn.logical_and %{{.*}}, %{{.*}} : (tensor<1x1x10x1xi1>, tensor<1x1x1x10xi1>) -> tensor<1x1x10x10xi1>
  %m = nn.logical_and %q, %k : (tensor<1x1x10x1xi1>, tensor<1x1x1x10xi1>) -> tensor<1x1x10x10xi1>
  // CHECK: nn.logical_not %{{.*}} : (tensor<1x1x10x10xi1>) -> tensor<1x1x10x10xi1>
  %n = nn.logical_not %m : (tensor<1x1x10x10xi1>) -> tensor<1x1x10x10xi1>
  // CHECK: nn.logical_or
  %o = nn.logical_or %n, %m : (tensor<1x1x10x10xi1>, tensor<1x1x10x10xi1>) -> tensor<1x1x10x10xi1>
  // CHECK: nn.cast %{{.*}} : (tensor<1x1x10x10xi1>) -> tensor<1x1x10x10xf32>
  %f = nn.cast %o : (tensor<1x1x10x10xi1>) -> tensor<1x1x10x10xf32>
  // CHECK: nn.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x1x10x10xi1>, tensor<1x2x10x10x!quant.uniform<i8:f32, 1.000000e-01:3>>, tensor<1x!quant.uniform<i8:f32, 1.000000e-01:3>>) -> tensor<1x2x10x10x!quant.uniform<i8:f32, 1.000000e-01:3>>
  %r = nn.select %m, %s, %neg : (tensor<1x1x10x10xi1>, tensor<1x2x10x10x!q>, tensor<1x!q>) -> tensor<1x2x10x10x!q>
  func.return %r : tensor<1x2x10x10x!q>
}
