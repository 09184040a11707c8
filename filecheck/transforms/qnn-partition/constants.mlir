// RUN: %qd-opt %s -p 'qnn-partition{target=cmsis-nn}' 2>&1 | filecheck %s

// A constant used only inside a region moves into it; one also used on the
// host is copied, so the region's function owns every constant it reads and
// the host keeps its own.  cmsis-nn has no sub kernel.

!a = !quant.uniform<i8:f32, 0.5:-3>

// CHECK:      remark: qnn.sub %s stays on host for cmsis-nn: cmsis-nn has no row for qnn.sub [op]
// CHECK-LABEL: func.func @main(%x: tensor<4x!quant.uniform<i8:f32, 5.000000e-01:-3>>)
// CHECK-NEXT:   %shared = qnn.constant dense<"0x01020304">
// CHECK-NEXT:   %m = func.call @main_cmsis_nn_0(%x)
// CHECK-NEXT:   %s = qnn.sub %m, %shared
// CHECK-NEXT:   func.return %s
// CHECK-NEXT: }
// CHECK-NEXT: func.func private @main_cmsis_nn_0(%x: {{.*}}) -> {{.*}} attributes {qd.target = "cmsis-nn"} {
// CHECK-NEXT:   %shared = qnn.constant dense<"0x01020304">
// CHECK-NEXT:   %k = qnn.add %x, %shared
// CHECK-NEXT:   %own = qnn.constant dense<"0x05060708">
// CHECK-NEXT:   %m = qnn.mul %k, %own
// CHECK-NEXT:   func.return %m
// CHECK-NEXT: }

func.func @main(%x: tensor<4x!a>) -> tensor<4x!a> {
  %shared = qnn.constant dense<"0x01020304"> : tensor<4x!a>
  %own = qnn.constant dense<"0x05060708"> : tensor<4x!a>
  %k = qnn.add %x, %shared : (tensor<4x!a>, tensor<4x!a>) -> tensor<4x!a>
  %m = qnn.mul %k, %own : (tensor<4x!a>, tensor<4x!a>) -> tensor<4x!a>
  %s = qnn.sub %m, %shared : (tensor<4x!a>, tensor<4x!a>) -> tensor<4x!a>
  func.return %s : tensor<4x!a>
}
