// RUN: %qd-opt %s -p 'qnn-partition{target=ethos-u}' 2>&1 | filecheck %s --check-prefix=ETHOS
// RUN: %qd-opt %s -p 'qnn-partition{target=cmsis-nn}' 2>&1 | filecheck %s --check-prefix=CMSIS

// conv -> max pool -> reshape -> fully connected.  Both targets take it all
// (Vela 5.2 and CMSIS-NN run a per-channel fully connected layer).  The
// outlined function is private, marked with the target, and the weights
// travel with it; main keeps a func.call where the region was.

!x = !quant.uniform<i8:f32, 0.5:-3>
!c = !quant.uniform<i8:f32, 0.25:-128>
!w = !quant.uniform<i8:f32:0, {0.1, 0.2}>
!b = !quant.uniform<i32:f32:0, {0.05, 0.1}>
!fw = !quant.uniform<i8:f32:0, {0.1, 0.2, 0.3}>
!fb = !quant.uniform<i32:f32:0, {0.025, 0.05, 0.075}>
!o = !quant.uniform<i8:f32, 0.125:1>

// ETHOS-NOT:  remark
// ETHOS-LABEL: func.func @main(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 5.000000e-01:-3>>)
// ETHOS-NEXT:   %fc = func.call @main_ethos_u_0(%x) : (tensor<1x4x4x2x!quant.uniform<i8:f32, 5.000000e-01:-3>>) -> tensor<1x3x!quant.uniform<i8:f32, 1.250000e-01:1>>
// ETHOS-NEXT:   func.return %fc
// ETHOS-NEXT: }
// ETHOS-NEXT: func.func private @main_ethos_u_0(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 5.000000e-01:-3>>) -> tensor<1x3x!quant.uniform<i8:f32, 1.250000e-01:1>> attributes {qd.target = "ethos-u"} {
// ETHOS-NEXT:   %w = qnn.constant dense<"0x01020304">
// ETHOS-NEXT:   %b = qnn.constant dense<"0x0100000002000000">
// ETHOS-NEXT:   %conv = qnn.conv2d %x, %w, %b
// ETHOS-NEXT:   %pool = qnn.max_pool2d %conv
// ETHOS-NEXT:   %flat = qnn.reshape %pool
// ETHOS-NEXT:   %fw = qnn.constant
// ETHOS-NEXT:   %fb = qnn.constant
// ETHOS-NEXT:   %fc = qnn.fully_connected %flat, %fw, %fb
// ETHOS-NEXT:   func.return %fc : tensor<1x3x!quant.uniform<i8:f32, 1.250000e-01:1>>
// ETHOS-NEXT: }
// ETHOS-NOT:  func.func

// CMSIS-NOT:  remark
// CMSIS-LABEL: func.func @main(
// CMSIS-NEXT:   %fc = func.call @main_cmsis_nn_0(%x)
// CMSIS-NEXT:   func.return %fc
// CMSIS-NEXT: }
// CMSIS-NEXT: func.func private @main_cmsis_nn_0({{.*}}) -> tensor<1x3x!quant.uniform<i8:f32, 1.250000e-01:1>> attributes {qd.target = "cmsis-nn"} {
// CMSIS-NEXT:   %w = qnn.constant
// CMSIS-NEXT:   %b = qnn.constant
// CMSIS-NEXT:   %conv = qnn.conv2d
// CMSIS-NEXT:   %pool = qnn.max_pool2d
// CMSIS-NEXT:   %flat = qnn.reshape
// CMSIS-NEXT:   %fw = qnn.constant
// CMSIS-NEXT:   %fb = qnn.constant
// CMSIS-NEXT:   %fc = qnn.fully_connected %flat, %fw, %fb
// CMSIS-NEXT:   func.return %fc

func.func @main(%x: tensor<1x4x4x2x!x>) -> tensor<1x3x!o> {
  %w = qnn.constant dense<"0x01020304"> : tensor<2x1x1x2x!w>
  %b = qnn.constant dense<"0x0100000002000000"> : tensor<2x!b>
  %conv = qnn.conv2d %x, %w, %b {act_min = -128 : i64, act_max = 127 : i64} : (tensor<1x4x4x2x!x>, tensor<2x1x1x2x!w>, tensor<2x!b>) -> tensor<1x4x4x2x!c>
  %pool = qnn.max_pool2d %conv {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x2x!c>) -> tensor<1x2x2x2x!c>
  %flat = qnn.reshape %pool : (tensor<1x2x2x2x!c>) -> tensor<1x8x!c>
  %fw = qnn.constant dense<"0x010203040506070801020304050607080102030405060708"> : tensor<3x8x!fw>
  %fb = qnn.constant dense<"0x010000000200000003000000"> : tensor<3x!fb>
  %fc = qnn.fully_connected %flat, %fw, %fb : (tensor<1x8x!c>, tensor<3x8x!fw>, tensor<3x!fb>) -> tensor<1x3x!o>
  func.return %fc : tensor<1x3x!o>
}
