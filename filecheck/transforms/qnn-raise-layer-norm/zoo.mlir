// RUN: %qd-import %S/../../../models/transformers/kws_attn.tflite | %qd-opt -p qnn-raise-layer-norm | %qd-opt | filecheck %s --check-prefix=INT8
// RUN: %qd-import %S/../../../models/transformers/kws_attn_16x8.tflite | %qd-opt -p qnn-raise-layer-norm | filecheck %s --check-prefix=I16

// The keyword spotter's three Keras LayerNormalization layers, as TFLite writes them in
// int8 (with the float NEG island) and in 16x8 (by hand), each become one qnn.layer_norm;
// the raised module prints and reads back.

// INT8:         qnn.layer_norm %{{.*}} {axis = 2 : i64, epsilon = {{.*}} : f64, spelling = "tflite"}
// INT8:           = nn.mul
// INT8:           qnn.squared_difference
// INT8:           qnn.rsqrt
// INT8:           qnn.yield
// INT8:         qnn.layer_norm %{{.*}} spelling = "tflite"
// INT8:         qnn.layer_norm %{{.*}} spelling = "tflite"
// INT8:           qnn.yield
// INT8-NOT:     qnn.layer_norm
// INT8-NOT:     qnn.rsqrt
// INT8:         func.return

// I16:          qnn.layer_norm %{{.*}} {axis = 2 : i64, epsilon = {{.*}} : f64, spelling = "tflite_hand"}
// I16:            qnn.sub
// I16:            qnn.rsqrt
// I16:            qnn.yield
// I16:          qnn.layer_norm %{{.*}} spelling = "tflite_hand"
// I16:          qnn.layer_norm %{{.*}} spelling = "tflite_hand"
// I16:            qnn.yield
// I16-NOT:      qnn.layer_norm
// I16-NOT:      qnn.rsqrt
// I16:          func.return
