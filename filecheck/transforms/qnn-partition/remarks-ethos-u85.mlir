// RUN: %qd-opt %s --split-input-file -p 'qnn-partition{target=ethos-u85}' 2>&1 >/dev/null | filecheck %s

// The Ethos-U85 table's own reasons (Vela 5.2): input zero points 0 for 16-bit
// tensors, GATHER only along its batch dimensions; and what the U85 takes that
// the U55 does not (a depthwise stride of 4).

// CHECK:      remark: qnn.add %r stays on host for ethos-u85: operand 0 (lhs) zero point 3 is outside what the U85 takes for i16 [zero-point]
!h = !quant.uniform<i16:f32, 0.5:3>
func.func @zero_point(%x: tensor<4x!h>) -> tensor<4x!h> {
  %r = qnn.add %x, %x : (tensor<4x!h>, tensor<4x!h>) -> tensor<4x!h>
  func.return %r : tensor<4x!h>
}

// -----

// CHECK-NOT:  remark
!x = !quant.uniform<i8:f32, 0.5:-3>
!w = !quant.uniform<i8:f32, 0.1>
!b = !quant.uniform<i32:f32, 0.05>
!o = !quant.uniform<i8:f32, 0.25:0>
func.func @accepted(%x: tensor<1x8x8x2x!x>) -> tensor<1x2x2x2x!o> {
  %w = qnn.constant dense<"0x0102"> : tensor<1x1x1x2x!w>
  %b = qnn.constant dense<"0x0100000002000000"> : tensor<2x!b>
  %c = qnn.depthwise_conv2d %x, %w, %b {strides = array<i64: 4, 4>} : (tensor<1x8x8x2x!x>, tensor<1x1x1x2x!w>, tensor<2x!b>) -> tensor<1x2x2x2x!o>
  func.return %c : tensor<1x2x2x2x!o>
}
