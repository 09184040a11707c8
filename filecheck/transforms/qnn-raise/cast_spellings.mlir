// RUN: %qd-opt %s -p qnn-raise | filecheck %s

// The integer spellings frontends emit for average pooling and mean.

!x = !quant.uniform<i8:f32, 0.05:-3>
!y = !quant.uniform<i8:f32, 0.1:5>

// cast -> avg_pool -> cast on the stored values is exactly qnn.avg_pool2d.
// CHECK-LABEL: func.func @cast_avg_pool_cast
// CHECK-NEXT:    %[[P:.*]] = qnn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x3x!quant.uniform<i8:f32, 5.000000e-02:-3>>) -> tensor<1x2x2x3x!quant.uniform<i8:f32, 5.000000e-02:-3>>
// CHECK-NEXT:    func.return %[[P]]
func.func @cast_avg_pool_cast(%x: tensor<1x4x4x3x!x>) -> tensor<1x2x2x3x!x> {
  %i = nn.cast %x : (tensor<1x4x4x3x!x>) -> tensor<1x4x4x3xi32>
  %p = nn.avg_pool2d %i {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x3xi32>) -> tensor<1x2x2x3xi32>
  %q = nn.cast %p : (tensor<1x2x2x3xi32>) -> tensor<1x2x2x3x!x>
  func.return %q : tensor<1x2x2x3x!x>
}

// cast -> mean -> (read as i32 with the input's parameters) -> requantize is qnn.mean.
// CHECK-LABEL: func.func @cast_mean_requantize
// CHECK-NEXT:    %[[M:.*]] = qnn.mean %x {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<1x4x4x3x!quant.uniform<i8:f32, 5.000000e-02:-3>>) -> tensor<1x1x1x3x!quant.uniform<i8:f32, 1.000000e-01:5>>
// CHECK-NEXT:    func.return %[[M]]
func.func @cast_mean_requantize(%x: tensor<1x4x4x3x!x>) -> tensor<1x1x1x3x!y> {
  %i = nn.cast %x : (tensor<1x4x4x3x!x>) -> tensor<1x4x4x3xi32>
  %m = nn.mean %i {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<1x4x4x3xi32>) -> tensor<1x1x1x3xi32>
  %s = quant.scast %m : tensor<1x1x1x3xi32> to tensor<1x1x1x3x!quant.uniform<i32:f32, 0.05:-3>>
  %r = qnn.requantize %s : (tensor<1x1x1x3x!quant.uniform<i32:f32, 0.05:-3>>) -> tensor<1x1x1x3x!y>
  func.return %r : tensor<1x1x1x3x!y>
}

// Cast back to other parameters: not an average pool of the input, left (with a remark).
// CHECK-LABEL: func.func @cast_back_to_other_params
// CHECK:         nn.avg_pool2d
func.func @cast_back_to_other_params(%x: tensor<1x2x2x1x!x>) -> tensor<1x1x1x1x!y> {
  %i = nn.cast %x : (tensor<1x2x2x1x!x>) -> tensor<1x2x2x1xi32>
  %p = nn.avg_pool2d %i {kernel = array<i64: 2, 2>} : (tensor<1x2x2x1xi32>) -> tensor<1x1x1x1xi32>
  %q = nn.cast %p : (tensor<1x1x1x1xi32>) -> tensor<1x1x1x1x!y>
  func.return %q : tensor<1x1x1x1x!y>
}
