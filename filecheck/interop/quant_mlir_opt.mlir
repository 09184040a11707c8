// REQUIRES: mlir-opt
// MLIR 22 reads what we print, and we read what MLIR prints, with the same types.
// RUN: %qd-opt %s | %mlir-opt | filecheck %s --check-prefix=MLIR
// RUN: %qd-opt %s | %mlir-opt | %qd-opt | filecheck %s
// RUN: %qd-opt %s | %mlir-opt --mlir-print-op-generic | %qd-opt | filecheck %s

// MLIR: func.func @types(%arg0: tensor<2x3x!quant.uniform<i8:f32, 5.000000e-01:-3>>, %arg1: tensor<4x!quant.uniform<i8<-127:127>:f32, 7.812500e-03>>, %arg2: tensor<4x!quant.uniform<u8:f32, 2.000000e-02:128>>, %arg3: tensor<3x2x!quant.uniform<i8:f32:0, {1.000000e-01:1,2.000000e-01:2,3.000000e-01:3}>>, %arg4: tensor<4x!quant.uniform<i4:f16, 0.023529412224888802:7>>, %arg5: tensor<4x!quant.uniform<i16:bf16, 3.0517578125E-5>>
// CHECK: func.func @types(%{{.*}}: tensor<2x3x!quant.uniform<i8:f32, 5.000000e-01:-3>>, %{{.*}}: tensor<4x!quant.uniform<i8<-127:127>:f32, 7.812500e-03>>, %{{.*}}: tensor<4x!quant.uniform<u8:f32, 2.000000e-02:128>>, %{{.*}}: tensor<3x2x!quant.uniform<i8:f32:0, {1.000000e-01:1,2.000000e-01:2,3.000000e-01:3}>>, %{{.*}}: tensor<4x!quant.uniform<i4:f16, 0.023529412224888802:7>>, %{{.*}}: tensor<4x!quant.uniform<i16:bf16, 3.0517578125E-5>>)
func.func @types(%a: tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>, %b: tensor<4x!quant.uniform<i8<-127:127>:f32, 0.0078125>>, %c: tensor<4x!quant.uniform<u8:f32, 0.02:128>>, %d: tensor<3x2x!quant.uniform<i8:f32:0, {0.1:1, 0.2:2, 0.3:3}>>, %e: tensor<4x!quant.uniform<i4:f16, 0.0235294122248888:7>>, %f: tensor<4x!quant.uniform<i16:bf16, 3.0517578125e-05>>) {
  func.return
}

// MLIR-LABEL: func.func @casts
// MLIR: quant.dcast %{{.*}} : tensor<2x3x!quant.uniform<i8:f32, 5.000000e-01:-3>> to tensor<2x3xf32>
// MLIR: quant.qcast %{{.*}} : tensor<2x3xf32> to tensor<2x3x!quant.uniform<u8:f32, 2.500000e-01:1>>
// MLIR: quant.scast %{{.*}} : tensor<2x3x!quant.uniform<u8:f32, 2.500000e-01:1>> to tensor<2x3xi8>
// CHECK-LABEL: func.func @casts
// CHECK: quant.dcast %{{.*}} : tensor<2x3x!quant.uniform<i8:f32, 5.000000e-01:-3>> to tensor<2x3xf32>
// CHECK: quant.qcast %{{.*}} : tensor<2x3xf32> to tensor<2x3x!quant.uniform<u8:f32, 2.500000e-01:1>>
// CHECK: quant.scast %{{.*}} : tensor<2x3x!quant.uniform<u8:f32, 2.500000e-01:1>> to tensor<2x3xi8>
func.func @casts(%a: tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<2x3xi8> {
  %0 = quant.dcast %a : tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>> to tensor<2x3xf32>
  %1 = quant.qcast %0 : tensor<2x3xf32> to tensor<2x3x!quant.uniform<u8:f32, 0.25:1>>
  %2 = quant.scast %1 : tensor<2x3x!quant.uniform<u8:f32, 0.25:1>> to tensor<2x3xi8>
  func.return %2 : tensor<2x3xi8>
}
