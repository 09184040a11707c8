// RUN: %qd-opt %s --split-input-file --verify-diagnostics -p 'qnn-overflow-check{fail=true}' | filecheck %s
// RUN: not %qd-opt %s --split-input-file -p 'qnn-overflow-check{fail=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=EXIT

// `fail=true` makes the first accumulator that can overflow an error (exit
// status 2, one line); modules whose accumulators all fit pass unchanged.
// Every function is checked, also the private ones qnn-partition outlines.

// 2 taps of 127 on x - zp in [0, 255]: 64770 > 32767.
// EXIT:       error: qnn-overflow-check: qnn.fully_connected %y in @main can overflow its i16 accumulator
!x = !quant.uniform<i8:f32, 0.5:-128>
!w = !quant.uniform<i8:f32, 0.5>
!o = !quant.uniform<i8:f32, 0.25>
func.func @main(%x: tensor<1x2x!x>) -> tensor<1x1x!o> {
  %w = qnn.constant dense<"0x7F7F"> : tensor<1x2x!w>
  %b = arith.constant dense<0> : tensor<1xi32>
  // expected-error@+1 {{qnn-overflow-check: qnn.fully_connected %y in @main can overflow its i16 accumulator: sums reach [0, 64770] (high end at output channel 0); i16 holds [-32768, 32767]}}
  %y = qnn.fully_connected %x, %w, %b {acc = "i16"} : (tensor<1x2x!x>, tensor<1x2x!w>, tensor<1xi32>) -> tensor<1x1x!o>
  func.return %y : tensor<1x1x!o>
}

// -----

// CHECK:      func.func @fits
// CHECK:      qnn.fully_connected
!x = !quant.uniform<i8:f32, 0.5:-128>
!w = !quant.uniform<i8:f32, 0.5>
!o = !quant.uniform<i8:f32, 0.25>
func.func @fits(%x: tensor<1x2x!x>) -> tensor<1x1x!o> {
  %w = qnn.constant dense<"0x7F7F"> : tensor<1x2x!w>
  %b = arith.constant dense<0> : tensor<1xi32>
  %y = qnn.fully_connected %x, %w, %b : (tensor<1x2x!x>, tensor<1x2x!w>, tensor<1xi32>) -> tensor<1x1x!o>
  func.return %y : tensor<1x1x!o>
}

// -----

// x - zp in [-125, 130]: 2 taps of 127 reach [-31750, 33020].
!x = !quant.uniform<i8:f32, 0.5:-3>
!w = !quant.uniform<i8:f32:0, {0.5}>
!o = !quant.uniform<i8:f32, 0.25>
func.func @main(%x: tensor<1x1x1x2x!x>) -> tensor<1x1x1x1x!o> {
  %y = func.call @main_ethos_u_0(%x) : (tensor<1x1x1x2x!x>) -> tensor<1x1x1x1x!o>
  func.return %y : tensor<1x1x1x1x!o>
}
func.func private @main_ethos_u_0(%x: tensor<1x1x1x2x!x>) -> tensor<1x1x1x1x!o> attributes {qd.target = "ethos-u"} {
  %w = qnn.constant dense<"0x7F7F"> : tensor<1x1x1x2x!w>
  %b = arith.constant dense<0> : tensor<1xi32>
  // expected-error@+1 {{qnn-overflow-check: qnn.conv2d %0 in @main_ethos_u_0 can overflow its i16 accumulator: sums reach [-31750, 33020] (high end at output channel 0); i16 holds [-32768, 32767]}}
  %0 = qnn.conv2d %x, %w, %b {acc = "i16"} : (tensor<1x1x1x2x!x>, tensor<1x1x1x2x!w>, tensor<1xi32>) -> tensor<1x1x1x1x!o>
  func.return %0 : tensor<1x1x1x1x!o>
}
