// RUN: %qd-opt %s --split-input-file -p 'qnn-overflow-check{verbose=true}' 2>&1 >/dev/null | filecheck %s
// RUN: %qd-opt %s --split-input-file -p qnn-overflow-check 2>&1 >/dev/null | filecheck %s --check-prefix=QUIET

// Each accumulating op gets the exact range of its accumulator over every
// input inside the storage range; the arithmetic is written out per case.
// Without `verbose` only the ops that can overflow are reported.

// x - zp in [-128 - (-128), 127 - (-128)] = [0, 255]; channel 0 weights 1, 1
// (sum 0..510, + bias 0), channel 1 weights 127, 127: 255 * 254 = 64770, + bias 16.
// CHECK:      remark: qnn-overflow-check: qnn.conv2d %y in @conv can overflow its i16 accumulator: sums reach [0, 64786] (high end at output channel 1); i16 holds [-32768, 32767]
// QUIET:      remark: qnn-overflow-check: qnn.conv2d %y in @conv can overflow its i16 accumulator: sums reach [0, 64786] (high end at output channel 1); i16 holds [-32768, 32767]
!x = !quant.uniform<i8:f32, 0.5:-128>
!w = !quant.uniform<i8:f32:0, {0.5, 0.5}>
!b = !quant.uniform<i32:f32:0, {0.25, 0.25}>
!o = !quant.uniform<i8:f32, 0.25>
func.func @conv(%x: tensor<1x1x1x2x!x>) -> tensor<1x1x1x2x!o> {
  %w = qnn.constant dense<"0x01017F7F"> : tensor<2x1x1x2x!w>
  %b = qnn.constant dense<"0x0000000010000000"> : tensor<2x!b>
  %y = qnn.conv2d %x, %w, %b {acc = "i16"} : (tensor<1x1x1x2x!x>, tensor<2x1x1x2x!w>, tensor<2x!b>) -> tensor<1x1x1x2x!o>
  func.return %y : tensor<1x1x1x2x!o>
}

// -----

// The same conv with the default (i32) accumulator: 64786 needs 16 bits, 31 - 16 = 15 to spare.
// CHECK-NEXT: remark: qnn-overflow-check: qnn.conv2d %y in @conv fits its i32 accumulator: sums in [0, 64786], 15 bits to spare
!x = !quant.uniform<i8:f32, 0.5:-128>
!w = !quant.uniform<i8:f32:0, {0.5, 0.5}>
!b = !quant.uniform<i32:f32:0, {0.25, 0.25}>
!o = !quant.uniform<i8:f32, 0.25>
func.func @conv(%x: tensor<1x1x1x2x!x>) -> tensor<1x1x1x2x!o> {
  %w = qnn.constant dense<"0x01017F7F"> : tensor<2x1x1x2x!w>
  %b = qnn.constant dense<"0x0000000010000000"> : tensor<2x!b>
  %y = qnn.conv2d %x, %w, %b : (tensor<1x1x1x2x!x>, tensor<2x1x1x2x!w>, tensor<2x!b>) -> tensor<1x1x1x2x!o>
  func.return %y : tensor<1x1x1x2x!o>
}

// -----

// Padding: a 3x3 depthwise kernel of 127s over a 1x1 image with padding 1 on
// every side sees only its centre tap, so x - zp in [-128, 127] gives
// [-128 * 127, 127 * 127] = [-16256, 16129] and i16 suffices.  Over a 3x3
// image the centre output sees all nine taps: 9 * [-16256, 16129] does not fit.
// CHECK-NEXT: remark: qnn-overflow-check: qnn.depthwise_conv2d %y in @one_pixel fits its i16 accumulator: sums in [-16256, 16129], 1 bit to spare
// CHECK-NEXT: remark: qnn-overflow-check: qnn.depthwise_conv2d %y in @nine_pixels can overflow its i16 accumulator: sums reach [-146304, 145161] (high end at output channel 0, low end at output channel 0); i16 holds [-32768, 32767]
// QUIET-NEXT: remark: qnn-overflow-check: qnn.depthwise_conv2d %y in @nine_pixels can overflow its i16 accumulator
!x = !quant.uniform<i8:f32, 0.5>
!w = !quant.uniform<i8:f32:3, {0.5}>
!b = !quant.uniform<i32:f32:0, {0.25}>
!o = !quant.uniform<i8:f32, 0.25>
func.func @one_pixel(%x: tensor<1x1x1x1x!x>) -> tensor<1x1x1x1x!o> {
  %w = qnn.constant dense<"0x7F7F7F7F7F7F7F7F7F"> : tensor<1x3x3x1x!w>
  %b = qnn.constant dense<"0x00000000"> : tensor<1x!b>
  %y = qnn.depthwise_conv2d %x, %w, %b {acc = "i16", padding = array<i64: 1, 1, 1, 1>} : (tensor<1x1x1x1x!x>, tensor<1x3x3x1x!w>, tensor<1x!b>) -> tensor<1x1x1x1x!o>
  func.return %y : tensor<1x1x1x1x!o>
}
func.func @nine_pixels(%x: tensor<1x3x3x1x!x>) -> tensor<1x3x3x1x!o> {
  %w = qnn.constant dense<"0x7F7F7F7F7F7F7F7F7F"> : tensor<1x3x3x1x!w>
  %b = qnn.constant dense<"0x00000000"> : tensor<1x!b>
  %y = qnn.depthwise_conv2d %x, %w, %b {acc = "i16", padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x3x1x!x>, tensor<1x3x3x1x!w>, tensor<1x!b>) -> tensor<1x3x3x1x!o>
  func.return %y : tensor<1x3x3x1x!o>
}

// -----

// Transposed convolution with stride 2: an output position is reached by the
// taps of one stride phase only, at most 2 of the 3 taps per axis, 2 * 2 = 4
// taps of 100; x - zp in [-128, 127]: [-51200, 50800] (9 taps would be 114300).
// CHECK-NEXT: remark: qnn-overflow-check: qnn.transpose_conv2d %y in @phases can overflow its i16 accumulator: sums reach [-51200, 50800] (high end at output channel 0, low end at output channel 0); i16 holds [-32768, 32767]
// QUIET-NEXT: remark: qnn-overflow-check: qnn.transpose_conv2d %y in @phases can overflow
!x = !quant.uniform<i8:f32, 0.5>
!w = !quant.uniform<i8:f32, 0.5>
!b = !quant.uniform<i32:f32, 0.25>
!o = !quant.uniform<i8:f32, 0.25>
func.func @phases(%x: tensor<1x4x4x1x!x>) -> tensor<1x9x9x1x!o> {
  %w = qnn.constant dense<"0x646464646464646464"> : tensor<1x3x3x1x!w>
  %b = qnn.constant dense<"0x00000000"> : tensor<1x!b>
  %y = qnn.transpose_conv2d %x, %w, %b {acc = "i16", strides = array<i64: 2, 2>} : (tensor<1x4x4x1x!x>, tensor<1x3x3x1x!w>, tensor<1x!b>) -> tensor<1x9x9x1x!o>
  func.return %y : tensor<1x9x9x1x!o>
}

// -----

// Signs: weights [100, -100] on x - zp in [-128, 127] reach
// 127 * 100 + (-128) * -100 = 25500 at most and -25500 at least, plus the
// constant bias 10000 of channel 0: [-15500, 35500].  With bias = "output"
// the bias stays out of the accumulator: [-25500, 25500] fits.
// CHECK-NEXT: remark: qnn-overflow-check: qnn.fully_connected %y in @bias_in can overflow its i16 accumulator: sums reach [-15500, 35500] (high end at output channel 0); i16 holds [-32768, 32767]
// CHECK-NEXT: remark: qnn-overflow-check: qnn.fully_connected %y in @bias_out fits its i16 accumulator: sums in [-25500, 25500], 0 bits to spare
// QUIET-NEXT: remark: qnn-overflow-check: qnn.fully_connected %y in @bias_in can overflow
// QUIET-NOT:  @bias_out
!x = !quant.uniform<i8:f32, 0.5>
!w = !quant.uniform<i8:f32, 0.5>
!o = !quant.uniform<i8:f32, 0.25>
func.func @bias_in(%x: tensor<1x2x!x>) -> tensor<1x1x!o> {
  %w = qnn.constant dense<"0x649C"> : tensor<1x2x!w>
  %b = arith.constant dense<10000> : tensor<1xi32>
  %y = qnn.fully_connected %x, %w, %b {acc = "i16"} : (tensor<1x2x!x>, tensor<1x2x!w>, tensor<1xi32>) -> tensor<1x1x!o>
  func.return %y : tensor<1x1x!o>
}
func.func @bias_out(%x: tensor<1x2x!x>) -> tensor<1x1x!o> {
  %w = qnn.constant dense<"0x649C"> : tensor<1x2x!w>
  %b = arith.constant dense<10000> : tensor<1xi32>
  %y = qnn.fully_connected %x, %w, %b {acc = "i16", bias = "output"} : (tensor<1x2x!x>, tensor<1x2x!w>, tensor<1xi32>) -> tensor<1x1x!o>
  func.return %y : tensor<1x1x!o>
}

// -----

// Weights and bias that are not constants: their storage ranges.  x - zp in
// [-118, 137], w in [-127, 127] (narrowed), K = 2 * 2 * 1 = 4 taps:
// 4 * 137 * 127 = 69596 and 4 * 137 * -127 = -69596; the i32 bias adds its
// whole range, so even the i32 accumulator can overflow.
// CHECK-NEXT: remark: qnn-overflow-check: qnn.conv2d %y in @free can overflow its i32 accumulator: sums reach [-2147553244, 2147553243] (high end at output channel 0, low end at output channel 0); i32 holds [-2147483648, 2147483647]
// QUIET-NEXT: remark: qnn-overflow-check: qnn.conv2d %y in @free can overflow its i32 accumulator
!x = !quant.uniform<i8:f32, 0.5:-10>
!w = !quant.uniform<i8<-127:127>:f32, 0.5>
!o = !quant.uniform<i8:f32, 0.25>
func.func @free(%x: tensor<1x2x2x1x!x>, %w: tensor<1x2x2x1x!w>, %b: tensor<1xi32>) -> tensor<1x1x1x1x!o> {
  %y = qnn.conv2d %x, %w, %b : (tensor<1x2x2x1x!x>, tensor<1x2x2x1x!w>, tensor<1xi32>) -> tensor<1x1x1x1x!o>
  func.return %y : tensor<1x1x1x1x!o>
}

// -----

// batch_matmul of two inputs: K = 3 products of [-128, 127] x [-128, 127]
// lie in [-16256, 16384]: 3 * 16384 = 49152.
// CHECK-NEXT: remark: qnn-overflow-check: qnn.batch_matmul %y in @matmul can overflow its i16 accumulator: sums reach [-48768, 49152] (high end at every element, low end at every element); i16 holds [-32768, 32767]
// QUIET-NEXT: remark: qnn-overflow-check: qnn.batch_matmul %y in @matmul can overflow
!q = !quant.uniform<i8:f32, 0.5>
func.func @matmul(%a: tensor<2x3x!q>, %b: tensor<3x2x!q>) -> tensor<2x2x!q> {
  %y = qnn.batch_matmul %a, %b {acc = "i16"} : (tensor<2x3x!q>, tensor<3x2x!q>) -> tensor<2x2x!q>
  func.return %y : tensor<2x2x!q>
}

// -----

// Saturating accumulation: running sums must fit before the bias.  x - zp in
// [0, 255], weights 127, 127: running sums reach 64770; the bias -32003 brings
// the final sum back to [-32003, 32767].  Wrapping sums only need the final
// one to fit (32767: 15 bits, none to spare).
// CHECK-NEXT: remark: qnn-overflow-check: qnn.fully_connected %y in @saturate can overflow its i16 accumulator: running sums reach [0, 64770] before the bias (acc_overflow = saturate); i16 holds [-32768, 32767]
// CHECK-NEXT: remark: qnn-overflow-check: qnn.fully_connected %y in @wrap fits its i16 accumulator: sums in [-32003, 32767], 0 bits to spare
// QUIET-NEXT: remark: qnn-overflow-check: qnn.fully_connected %y in @saturate can overflow
// QUIET-NOT:  @wrap
!x = !quant.uniform<i8:f32, 0.5:-128>
!w = !quant.uniform<i8:f32, 0.5>
!o = !quant.uniform<i8:f32, 0.25>
func.func @saturate(%x: tensor<1x2x!x>) -> tensor<1x1x!o> {
  %w = qnn.constant dense<"0x7F7F"> : tensor<1x2x!w>
  %b = arith.constant dense<-32003> : tensor<1xi32>
  %y = qnn.fully_connected %x, %w, %b {acc = "i16", acc_overflow = "saturate"} : (tensor<1x2x!x>, tensor<1x2x!w>, tensor<1xi32>) -> tensor<1x1x!o>
  func.return %y : tensor<1x1x!o>
}
func.func @wrap(%x: tensor<1x2x!x>) -> tensor<1x1x!o> {
  %w = qnn.constant dense<"0x7F7F"> : tensor<1x2x!w>
  %b = arith.constant dense<-32003> : tensor<1xi32>
  %y = qnn.fully_connected %x, %w, %b {acc = "i16"} : (tensor<1x2x!x>, tensor<1x2x!w>, tensor<1xi32>) -> tensor<1x1x!o>
  func.return %y : tensor<1x1x!o>
}

// -----

// 16x8: an i64 bias makes the default accumulator i64 (as TFLite).  x in
// [-32768, 32767] (zp 0); channel 0 weights 127, 127: [-32768 * 254, 32767 * 254]
// = [-8323072, 8322818]; channel 1 weights -128, -128: [32767 * -256, -32768 * -256]
// = [-8388352, 8388608] = 2^23 (24 bits, 63 - 24 = 39 to spare).  An empty batch
// has no accumulator to overflow.
// CHECK-NEXT: remark: qnn-overflow-check: qnn.fully_connected %y in @wide fits its i64 accumulator: sums in [-8388352, 8388608], 39 bits to spare
// CHECK-NEXT: remark: qnn-overflow-check: qnn.fully_connected %e in @wide has no accumulator elements
// QUIET-NOT:  remark
!x = !quant.uniform<i16:f32, 0.5>
!w = !quant.uniform<i8:f32, 0.5>
!o = !quant.uniform<i16:f32, 0.25>
func.func @wide(%x: tensor<1x2x!x>, %z: tensor<0x2x!x>) -> (tensor<1x2x!o>, tensor<0x2x!o>) {
  %w = qnn.constant dense<"0x7F7F8080"> : tensor<2x2x!w>
  %b = arith.constant dense<0> : tensor<2xi64>
  %y = qnn.fully_connected %x, %w, %b : (tensor<1x2x!x>, tensor<2x2x!w>, tensor<2xi64>) -> tensor<1x2x!o>
  %e = qnn.fully_connected %z, %w, %b : (tensor<0x2x!x>, tensor<2x2x!w>, tensor<2xi64>) -> tensor<0x2x!o>
  func.return %y, %e : tensor<1x2x!o>, tensor<0x2x!o>
}
