// L3 form of models/zoo/elementwise_movement.tflite (qd-import | qd-opt -p qnn-to-l3), a fuzzing seed
builtin.module @elementwise_movement {
  func.func @main(%0: tensor<1x6x8x4xi8> {tflite.name = "input_0"}, %1: tensor<1x6x8x4xi8> {tflite.name = "input_1"}) -> (tensor<1x20xi8> {tflite.name = "Identity"}, tensor<1x6x14x20xi8> {tflite.name = "Identity_1"}) {
    %2 = tensor.empty() : tensor<1x6x8x4xi32>
    %3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%0 : tensor<1x6x8x4xi8>) outs(%2 : tensor<1x6x8x4xi32>) {
    ^bb0(%4: i8, %5: i32):
      %6 = arith.extsi %4 : i8 to i64
      %7 = arith.constant 12 : i64
      %8 = arith.subi %6, %7 : i64
      %9 = arith.constant 20 : i64
      %10 = arith.shli %8, %9 : i64
      %11 = arith.trunci %10 : i64 to i32
      %12 = arith.extsi %11 : i32 to i64
      %13 = arith.constant 1073741824 : i64
      %14 = arith.constant -2147483648 : i64
      %15 = arith.cmpi eq, %12, %14 : i64
      %16 = arith.constant -2147483648 : i64
      %17 = arith.cmpi eq, %13, %16 : i64
      %18 = arith.andi %15, %17 : i1
      %19 = arith.muli %12, %13 : i64
      %20 = arith.constant 0 : i64
      %21 = arith.cmpi sge, %19, %20 : i64
      %22 = arith.constant 1073741824 : i64
      %23 = arith.constant -1073741823 : i64
      %24 = arith.select %21, %22, %23 : i64
      %25 = arith.addi %19, %24 : i64
      %26 = arith.constant 2147483648 : i64
      %27 = arith.divsi %25, %26 : i64
      %28 = arith.constant 2147483647 : i64
      %29 = arith.select %18, %28, %27 : i64
      %30 = arith.constant 0 : i64
      %31 = arith.constant 1 : i64
      %32 = arith.shli %31, %30 : i64
      %33 = arith.constant 1 : i64
      %34 = arith.subi %32, %33 : i64
      %35 = arith.andi %29, %34 : i64
      %36 = arith.constant 1 : i64
      %37 = arith.shrsi %34, %36 : i64
      %38 = arith.constant 0 : i64
      %39 = arith.cmpi slt, %29, %38 : i64
      %40 = arith.extui %39 : i1 to i64
      %41 = arith.addi %37, %40 : i64
      %42 = arith.shrsi %29, %30 : i64
      %43 = arith.cmpi sgt, %35, %41 : i64
      %44 = arith.extui %43 : i1 to i64
      %45 = arith.addi %42, %44 : i64
      %46 = arith.constant -2147483648 : i64
      %47 = arith.maxsi %45, %46 : i64
      %48 = arith.constant 2147483647 : i64
      %49 = arith.minsi %47, %48 : i64
      %50 = arith.trunci %49 : i64 to i32
      linalg.yield %50 : i32
    } -> tensor<1x6x8x4xi32>
    %51 = tensor.empty() : tensor<1x6x8x4xi32>
    %52 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%1 : tensor<1x6x8x4xi8>) outs(%51 : tensor<1x6x8x4xi32>) {
    ^bb0(%53: i8, %54: i32):
      %55 = arith.extsi %53 : i8 to i64
      %56 = arith.constant 12 : i64
      %57 = arith.subi %55, %56 : i64
      %58 = arith.constant 20 : i64
      %59 = arith.shli %57, %58 : i64
      %60 = arith.trunci %59 : i64 to i32
      %61 = arith.extsi %60 : i32 to i64
      %62 = arith.constant 1073741824 : i64
      %63 = arith.constant -2147483648 : i64
      %64 = arith.cmpi eq, %61, %63 : i64
      %65 = arith.constant -2147483648 : i64
      %66 = arith.cmpi eq, %62, %65 : i64
      %67 = arith.andi %64, %66 : i1
      %68 = arith.muli %61, %62 : i64
      %69 = arith.constant 0 : i64
      %70 = arith.cmpi sge, %68, %69 : i64
      %71 = arith.constant 1073741824 : i64
      %72 = arith.constant -1073741823 : i64
      %73 = arith.select %70, %71, %72 : i64
      %74 = arith.addi %68, %73 : i64
      %75 = arith.constant 2147483648 : i64
      %76 = arith.divsi %74, %75 : i64
      %77 = arith.constant 2147483647 : i64
      %78 = arith.select %67, %77, %76 : i64
      %79 = arith.constant 0 : i64
      %80 = arith.constant 1 : i64
      %81 = arith.shli %80, %79 : i64
      %82 = arith.constant 1 : i64
      %83 = arith.subi %81, %82 : i64
      %84 = arith.andi %78, %83 : i64
      %85 = arith.constant 1 : i64
      %86 = arith.shrsi %83, %85 : i64
      %87 = arith.constant 0 : i64
      %88 = arith.cmpi slt, %78, %87 : i64
      %89 = arith.extui %88 : i1 to i64
      %90 = arith.addi %86, %89 : i64
      %91 = arith.shrsi %78, %79 : i64
      %92 = arith.cmpi sgt, %84, %90 : i64
      %93 = arith.extui %92 : i1 to i64
      %94 = arith.addi %91, %93 : i64
      %95 = arith.constant -2147483648 : i64
      %96 = arith.maxsi %94, %95 : i64
      %97 = arith.constant 2147483647 : i64
      %98 = arith.minsi %96, %97 : i64
      %99 = arith.trunci %98 : i64 to i32
      linalg.yield %99 : i32
    } -> tensor<1x6x8x4xi32>
    %100 = tensor.empty() : tensor<1x6x8x4xi32>
    %101 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%3, %52 : tensor<1x6x8x4xi32>, tensor<1x6x8x4xi32>) outs(%100 : tensor<1x6x8x4xi32>) {
    ^bb0(%102: i32, %103: i32, %104: i32):
      %105 = arith.extsi %102 : i32 to i64
      %106 = arith.extsi %103 : i32 to i64
      %107 = arith.addi %105, %106 : i64
      %108 = arith.trunci %107 : i64 to i32
      linalg.yield %108 : i32
    } -> tensor<1x6x8x4xi32>
    %109 = tensor.empty() : tensor<1x6x8x4xi8>
    %110 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%101 : tensor<1x6x8x4xi32>) outs(%109 : tensor<1x6x8x4xi8>) {
    ^bb0(%111: i32, %112: i8):
      %113 = arith.extsi %111 : i32 to i64
      %114 = arith.trunci %113 : i64 to i32
      %115 = arith.extsi %114 : i32 to i64
      %116 = arith.constant 1073741824 : i64
      %117 = arith.constant -2147483648 : i64
      %118 = arith.cmpi eq, %115, %117 : i64
      %119 = arith.constant -2147483648 : i64
      %120 = arith.cmpi eq, %116, %119 : i64
      %121 = arith.andi %118, %120 : i1
      %122 = arith.muli %115, %116 : i64
      %123 = arith.constant 0 : i64
      %124 = arith.cmpi sge, %122, %123 : i64
      %125 = arith.constant 1073741824 : i64
      %126 = arith.constant -1073741823 : i64
      %127 = arith.select %124, %125, %126 : i64
      %128 = arith.addi %122, %127 : i64
      %129 = arith.constant 2147483648 : i64
      %130 = arith.divsi %128, %129 : i64
      %131 = arith.constant 2147483647 : i64
      %132 = arith.select %121, %131, %130 : i64
      %133 = arith.constant 18 : i64
      %134 = arith.constant 1 : i64
      %135 = arith.shli %134, %133 : i64
      %136 = arith.constant 1 : i64
      %137 = arith.subi %135, %136 : i64
      %138 = arith.andi %132, %137 : i64
      %139 = arith.constant 1 : i64
      %140 = arith.shrsi %137, %139 : i64
      %141 = arith.constant 0 : i64
      %142 = arith.cmpi slt, %132, %141 : i64
      %143 = arith.extui %142 : i1 to i64
      %144 = arith.addi %140, %143 : i64
      %145 = arith.shrsi %132, %133 : i64
      %146 = arith.cmpi sgt, %138, %144 : i64
      %147 = arith.extui %146 : i1 to i64
      %148 = arith.addi %145, %147 : i64
      %149 = arith.constant 12 : i64
      %150 = arith.addi %148, %149 : i64
      %151 = arith.constant -128 : i64
      %152 = arith.maxsi %150, %151 : i64
      %153 = arith.constant 127 : i64
      %154 = arith.minsi %152, %153 : i64
      %155 = arith.trunci %154 : i64 to i8
      linalg.yield %155 : i8
    } -> tensor<1x6x8x4xi8>
    %156 = tensor.empty() : tensor<1x6x8x4xi8>
    %157 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%0, %1 : tensor<1x6x8x4xi8>, tensor<1x6x8x4xi8>) outs(%156 : tensor<1x6x8x4xi8>) {
    ^bb0(%158: i8, %159: i8, %160: i8):
      %161 = arith.extsi %158 : i8 to i64
      %162 = arith.extsi %159 : i8 to i64
      %163 = arith.maxsi %161, %162 : i64
      %164 = arith.trunci %163 : i64 to i8
      linalg.yield %164 : i8
    } -> tensor<1x6x8x4xi8>
    %165 = tensor.empty() : tensor<1x6x8x4xi8>
    %166 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%0, %1 : tensor<1x6x8x4xi8>, tensor<1x6x8x4xi8>) outs(%165 : tensor<1x6x8x4xi8>) {
    ^bb0(%167: i8, %168: i8, %169: i8):
      %170 = arith.extsi %167 : i8 to i64
      %171 = arith.extsi %168 : i8 to i64
      %172 = arith.minsi %170, %171 : i64
      %173 = arith.trunci %172 : i64 to i8
      linalg.yield %173 : i8
    } -> tensor<1x6x8x4xi8>
    %174 = tensor.empty() : tensor<1x6x8x4xi32>
    %175 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%0, %1 : tensor<1x6x8x4xi8>, tensor<1x6x8x4xi8>) outs(%174 : tensor<1x6x8x4xi32>) {
    ^bb0(%176: i8, %177: i8, %178: i32):
      %179 = arith.extsi %176 : i8 to i64
      %180 = arith.extsi %177 : i8 to i64
      %181 = arith.constant 12 : i64
      %182 = arith.subi %179, %181 : i64
      %183 = arith.constant 12 : i64
      %184 = arith.subi %180, %183 : i64
      %185 = arith.muli %182, %184 : i64
      %186 = arith.trunci %185 : i64 to i32
      linalg.yield %186 : i32
    } -> tensor<1x6x8x4xi32>
    %187 = tensor.empty() : tensor<1x6x8x4xi8>
    %188 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%175 : tensor<1x6x8x4xi32>) outs(%187 : tensor<1x6x8x4xi8>) {
    ^bb0(%189: i32, %190: i8):
      %191 = arith.extsi %189 : i32 to i64
      %192 = arith.trunci %191 : i64 to i32
      %193 = arith.extsi %192 : i32 to i64
      %194 = arith.constant 1491976704 : i64
      %195 = arith.constant -2147483648 : i64
      %196 = arith.cmpi eq, %193, %195 : i64
      %197 = arith.constant -2147483648 : i64
      %198 = arith.cmpi eq, %194, %197 : i64
      %199 = arith.andi %196, %198 : i1
      %200 = arith.muli %193, %194 : i64
      %201 = arith.constant 0 : i64
      %202 = arith.cmpi sge, %200, %201 : i64
      %203 = arith.constant 1073741824 : i64
      %204 = arith.constant -1073741823 : i64
      %205 = arith.select %202, %203, %204 : i64
      %206 = arith.addi %200, %205 : i64
      %207 = arith.constant 2147483648 : i64
      %208 = arith.divsi %206, %207 : i64
      %209 = arith.constant 2147483647 : i64
      %210 = arith.select %199, %209, %208 : i64
      %211 = arith.constant 3 : i64
      %212 = arith.constant 1 : i64
      %213 = arith.shli %212, %211 : i64
      %214 = arith.constant 1 : i64
      %215 = arith.subi %213, %214 : i64
      %216 = arith.andi %210, %215 : i64
      %217 = arith.constant 1 : i64
      %218 = arith.shrsi %215, %217 : i64
      %219 = arith.constant 0 : i64
      %220 = arith.cmpi slt, %210, %219 : i64
      %221 = arith.extui %220 : i1 to i64
      %222 = arith.addi %218, %221 : i64
      %223 = arith.shrsi %210, %211 : i64
      %224 = arith.cmpi sgt, %216, %222 : i64
      %225 = arith.extui %224 : i1 to i64
      %226 = arith.addi %223, %225 : i64
      %227 = arith.constant 12 : i64
      %228 = arith.addi %226, %227 : i64
      %229 = arith.constant -128 : i64
      %230 = arith.maxsi %228, %229 : i64
      %231 = arith.constant 127 : i64
      %232 = arith.minsi %230, %231 : i64
      %233 = arith.trunci %232 : i64 to i8
      linalg.yield %233 : i8
    } -> tensor<1x6x8x4xi8>
    %234 = tensor.empty() : tensor<1x6x8x4xi32>
    %235 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%0 : tensor<1x6x8x4xi8>) outs(%234 : tensor<1x6x8x4xi32>) {
    ^bb0(%236: i8, %237: i32):
      %238 = arith.extsi %236 : i8 to i64
      %239 = arith.constant 12 : i64
      %240 = arith.subi %238, %239 : i64
      %241 = arith.constant 20 : i64
      %242 = arith.shli %240, %241 : i64
      %243 = arith.trunci %242 : i64 to i32
      %244 = arith.extsi %243 : i32 to i64
      %245 = arith.constant 1073741824 : i64
      %246 = arith.constant -2147483648 : i64
      %247 = arith.cmpi eq, %244, %246 : i64
      %248 = arith.constant -2147483648 : i64
      %249 = arith.cmpi eq, %245, %248 : i64
      %250 = arith.andi %247, %249 : i1
      %251 = arith.muli %244, %245 : i64
      %252 = arith.constant 0 : i64
      %253 = arith.cmpi sge, %251, %252 : i64
      %254 = arith.constant 1073741824 : i64
      %255 = arith.constant -1073741823 : i64
      %256 = arith.select %253, %254, %255 : i64
      %257 = arith.addi %251, %256 : i64
      %258 = arith.constant 2147483648 : i64
      %259 = arith.divsi %257, %258 : i64
      %260 = arith.constant 2147483647 : i64
      %261 = arith.select %250, %260, %259 : i64
      %262 = arith.constant 0 : i64
      %263 = arith.constant 1 : i64
      %264 = arith.shli %263, %262 : i64
      %265 = arith.constant 1 : i64
      %266 = arith.subi %264, %265 : i64
      %267 = arith.andi %261, %266 : i64
      %268 = arith.constant 1 : i64
      %269 = arith.shrsi %266, %268 : i64
      %270 = arith.constant 0 : i64
      %271 = arith.cmpi slt, %261, %270 : i64
      %272 = arith.extui %271 : i1 to i64
      %273 = arith.addi %269, %272 : i64
      %274 = arith.shrsi %261, %262 : i64
      %275 = arith.cmpi sgt, %267, %273 : i64
      %276 = arith.extui %275 : i1 to i64
      %277 = arith.addi %274, %276 : i64
      %278 = arith.constant -2147483648 : i64
      %279 = arith.maxsi %277, %278 : i64
      %280 = arith.constant 2147483647 : i64
      %281 = arith.minsi %279, %280 : i64
      %282 = arith.trunci %281 : i64 to i32
      linalg.yield %282 : i32
    } -> tensor<1x6x8x4xi32>
    %283 = tensor.empty() : tensor<1x6x8x4xi32>
    %284 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%1 : tensor<1x6x8x4xi8>) outs(%283 : tensor<1x6x8x4xi32>) {
    ^bb0(%285: i8, %286: i32):
      %287 = arith.extsi %285 : i8 to i64
      %288 = arith.constant 12 : i64
      %289 = arith.subi %287, %288 : i64
      %290 = arith.constant 20 : i64
      %291 = arith.shli %289, %290 : i64
      %292 = arith.trunci %291 : i64 to i32
      %293 = arith.extsi %292 : i32 to i64
      %294 = arith.constant 1073741824 : i64
      %295 = arith.constant -2147483648 : i64
      %296 = arith.cmpi eq, %293, %295 : i64
      %297 = arith.constant -2147483648 : i64
      %298 = arith.cmpi eq, %294, %297 : i64
      %299 = arith.andi %296, %298 : i1
      %300 = arith.muli %293, %294 : i64
      %301 = arith.constant 0 : i64
      %302 = arith.cmpi sge, %300, %301 : i64
      %303 = arith.constant 1073741824 : i64
      %304 = arith.constant -1073741823 : i64
      %305 = arith.select %302, %303, %304 : i64
      %306 = arith.addi %300, %305 : i64
      %307 = arith.constant 2147483648 : i64
      %308 = arith.divsi %306, %307 : i64
      %309 = arith.constant 2147483647 : i64
      %310 = arith.select %299, %309, %308 : i64
      %311 = arith.constant 0 : i64
      %312 = arith.constant 1 : i64
      %313 = arith.shli %312, %311 : i64
      %314 = arith.constant 1 : i64
      %315 = arith.subi %313, %314 : i64
      %316 = arith.andi %310, %315 : i64
      %317 = arith.constant 1 : i64
      %318 = arith.shrsi %315, %317 : i64
      %319 = arith.constant 0 : i64
      %320 = arith.cmpi slt, %310, %319 : i64
      %321 = arith.extui %320 : i1 to i64
      %322 = arith.addi %318, %321 : i64
      %323 = arith.shrsi %310, %311 : i64
      %324 = arith.cmpi sgt, %316, %322 : i64
      %325 = arith.extui %324 : i1 to i64
      %326 = arith.addi %323, %325 : i64
      %327 = arith.constant -2147483648 : i64
      %328 = arith.maxsi %326, %327 : i64
      %329 = arith.constant 2147483647 : i64
      %330 = arith.minsi %328, %329 : i64
      %331 = arith.trunci %330 : i64 to i32
      linalg.yield %331 : i32
    } -> tensor<1x6x8x4xi32>
    %332 = tensor.empty() : tensor<1x6x8x4xi32>
    %333 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%235, %284 : tensor<1x6x8x4xi32>, tensor<1x6x8x4xi32>) outs(%332 : tensor<1x6x8x4xi32>) {
    ^bb0(%334: i32, %335: i32, %336: i32):
      %337 = arith.extsi %334 : i32 to i64
      %338 = arith.extsi %335 : i32 to i64
      %339 = arith.subi %337, %338 : i64
      %340 = arith.trunci %339 : i64 to i32
      linalg.yield %340 : i32
    } -> tensor<1x6x8x4xi32>
    %341 = tensor.empty() : tensor<1x6x8x4xi8>
    %342 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%333 : tensor<1x6x8x4xi32>) outs(%341 : tensor<1x6x8x4xi8>) {
    ^bb0(%343: i32, %344: i8):
      %345 = arith.extsi %343 : i32 to i64
      %346 = arith.trunci %345 : i64 to i32
      %347 = arith.extsi %346 : i32 to i64
      %348 = arith.constant 1073741824 : i64
      %349 = arith.constant -2147483648 : i64
      %350 = arith.cmpi eq, %347, %349 : i64
      %351 = arith.constant -2147483648 : i64
      %352 = arith.cmpi eq, %348, %351 : i64
      %353 = arith.andi %350, %352 : i1
      %354 = arith.muli %347, %348 : i64
      %355 = arith.constant 0 : i64
      %356 = arith.cmpi sge, %354, %355 : i64
      %357 = arith.constant 1073741824 : i64
      %358 = arith.constant -1073741823 : i64
      %359 = arith.select %356, %357, %358 : i64
      %360 = arith.addi %354, %359 : i64
      %361 = arith.constant 2147483648 : i64
      %362 = arith.divsi %360, %361 : i64
      %363 = arith.constant 2147483647 : i64
      %364 = arith.select %353, %363, %362 : i64
      %365 = arith.constant 18 : i64
      %366 = arith.constant 1 : i64
      %367 = arith.shli %366, %365 : i64
      %368 = arith.constant 1 : i64
      %369 = arith.subi %367, %368 : i64
      %370 = arith.andi %364, %369 : i64
      %371 = arith.constant 1 : i64
      %372 = arith.shrsi %369, %371 : i64
      %373 = arith.constant 0 : i64
      %374 = arith.cmpi slt, %364, %373 : i64
      %375 = arith.extui %374 : i1 to i64
      %376 = arith.addi %372, %375 : i64
      %377 = arith.shrsi %364, %365 : i64
      %378 = arith.cmpi sgt, %370, %376 : i64
      %379 = arith.extui %378 : i1 to i64
      %380 = arith.addi %377, %379 : i64
      %381 = arith.constant 12 : i64
      %382 = arith.addi %380, %381 : i64
      %383 = arith.constant -128 : i64
      %384 = arith.maxsi %382, %383 : i64
      %385 = arith.constant 127 : i64
      %386 = arith.minsi %384, %385 : i64
      %387 = arith.trunci %386 : i64 to i8
      linalg.yield %387 : i8
    } -> tensor<1x6x8x4xi8>
    %388 = tensor.concat dim(3) %110, %342, %188, %157, %166 : (tensor<1x6x8x4xi8>, tensor<1x6x8x4xi8>, tensor<1x6x8x4xi8>, tensor<1x6x8x4xi8>, tensor<1x6x8x4xi8>) -> tensor<1x6x8x20xi8>
    %389 = arith.constant dense<[127, -9, 115, -36, -23, -69, -40, -23, 124, -35, 5, 43, 101, 101, 58, 55, 72, -45, -56, 103]> : tensor<20xi8>
    %390 = tensor.empty() : tensor<1x6x8x20xi32>
    %391 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%388, %389 : tensor<1x6x8x20xi8>, tensor<20xi8>) outs(%390 : tensor<1x6x8x20xi32>) {
    ^bb0(%392: i8, %393: i8, %394: i32):
      %395 = arith.extsi %392 : i8 to i64
      %396 = arith.extsi %393 : i8 to i64
      %397 = arith.constant 12 : i64
      %398 = arith.subi %395, %397 : i64
      %399 = arith.constant -128 : i64
      %400 = arith.subi %396, %399 : i64
      %401 = arith.muli %398, %400 : i64
      %402 = arith.trunci %401 : i64 to i32
      linalg.yield %402 : i32
    } -> tensor<1x6x8x20xi32>
    %403 = tensor.empty() : tensor<1x6x8x20xi8>
    %404 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%391 : tensor<1x6x8x20xi32>) outs(%403 : tensor<1x6x8x20xi8>) {
    ^bb0(%405: i32, %406: i8):
      %407 = arith.extsi %405 : i32 to i64
      %408 = arith.trunci %407 : i64 to i32
      %409 = arith.extsi %408 : i32 to i64
      %410 = arith.constant 2111951232 : i64
      %411 = arith.constant -2147483648 : i64
      %412 = arith.cmpi eq, %409, %411 : i64
      %413 = arith.constant -2147483648 : i64
      %414 = arith.cmpi eq, %410, %413 : i64
      %415 = arith.andi %412, %414 : i1
      %416 = arith.muli %409, %410 : i64
      %417 = arith.constant 0 : i64
      %418 = arith.cmpi sge, %416, %417 : i64
      %419 = arith.constant 1073741824 : i64
      %420 = arith.constant -1073741823 : i64
      %421 = arith.select %418, %419, %420 : i64
      %422 = arith.addi %416, %421 : i64
      %423 = arith.constant 2147483648 : i64
      %424 = arith.divsi %422, %423 : i64
      %425 = arith.constant 2147483647 : i64
      %426 = arith.select %415, %425, %424 : i64
      %427 = arith.constant 7 : i64
      %428 = arith.constant 1 : i64
      %429 = arith.shli %428, %427 : i64
      %430 = arith.constant 1 : i64
      %431 = arith.subi %429, %430 : i64
      %432 = arith.andi %426, %431 : i64
      %433 = arith.constant 1 : i64
      %434 = arith.shrsi %431, %433 : i64
      %435 = arith.constant 0 : i64
      %436 = arith.cmpi slt, %426, %435 : i64
      %437 = arith.extui %436 : i1 to i64
      %438 = arith.addi %434, %437 : i64
      %439 = arith.shrsi %426, %427 : i64
      %440 = arith.cmpi sgt, %432, %438 : i64
      %441 = arith.extui %440 : i1 to i64
      %442 = arith.addi %439, %441 : i64
      %443 = arith.constant 12 : i64
      %444 = arith.addi %442, %443 : i64
      %445 = arith.constant -128 : i64
      %446 = arith.maxsi %444, %445 : i64
      %447 = arith.constant 127 : i64
      %448 = arith.minsi %446, %447 : i64
      %449 = arith.trunci %448 : i64 to i8
      linalg.yield %449 : i8
    } -> tensor<1x6x8x20xi8>
    %450 = tensor.collapse_shape %404 [[0 : i64, 1 : i64, 2 : i64, 3 : i64]] : tensor<1x6x8x20xi8> into tensor<960xi8>
    %451 = tensor.expand_shape %450 [[0 : i64, 1 : i64, 2 : i64, 3 : i64]] output_shape [1, 12, 4, 20] : tensor<960xi8> into tensor<1x12x4x20xi8>
    %452 = tensor.empty() : tensor<1x4x12x20xi8>
    %453 = linalg.transpose ins(%451:tensor<1x12x4x20xi8>) outs(%452:tensor<1x4x12x20xi8>) permutation = [0, 2, 1, 3]
    %454 = arith.constant 12 : i8
    %455 = tensor.pad %453 low[0, 1, 2, 0] high[0, 1, 0, 0] {
    ^bb0(%456: index, %457: index, %458: index, %459: index):
      tensor.yield %454 : i8
    } : tensor<1x4x12x20xi8> to tensor<1x6x14x20xi8>
    %460 = arith.constant 0 : i32
    %461 = tensor.empty() : tensor<1x20xi32>
    %462 = linalg.fill ins(%460 : i32) outs(%461 : tensor<1x20xi32>) -> tensor<1x20xi32>
    %463 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%455 : tensor<1x6x14x20xi8>) outs(%462 : tensor<1x20xi32>) {
    ^bb0(%464: i8, %465: i32):
      %466 = arith.extsi %464 : i8 to i32
      %467 = arith.addi %465, %466 : i32
      linalg.yield %467 : i32
    } -> tensor<1x20xi32>
    %468 = tensor.empty() : tensor<1x20xi8>
    %469 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%463 : tensor<1x20xi32>) outs(%468 : tensor<1x20xi8>) {
    ^bb0(%470: i32, %471: i8):
      %472 = arith.extsi %470 : i32 to i64
      %473 = arith.constant 1008 : i64
      %474 = arith.subi %472, %473 : i64
      %475 = arith.trunci %474 : i64 to i32
      %476 = arith.extsi %475 : i32 to i64
      %477 = arith.constant 1231795121 : i64
      %478 = arith.constant -2147483648 : i64
      %479 = arith.cmpi eq, %476, %478 : i64
      %480 = arith.constant -2147483648 : i64
      %481 = arith.cmpi eq, %477, %480 : i64
      %482 = arith.andi %479, %481 : i1
      %483 = arith.muli %476, %477 : i64
      %484 = arith.constant 0 : i64
      %485 = arith.cmpi sge, %483, %484 : i64
      %486 = arith.constant 1073741824 : i64
      %487 = arith.constant -1073741823 : i64
      %488 = arith.select %485, %486, %487 : i64
      %489 = arith.addi %483, %488 : i64
      %490 = arith.constant 2147483648 : i64
      %491 = arith.divsi %489, %490 : i64
      %492 = arith.constant 2147483647 : i64
      %493 = arith.select %482, %492, %491 : i64
      %494 = arith.constant 2 : i64
      %495 = arith.constant 1 : i64
      %496 = arith.shli %495, %494 : i64
      %497 = arith.constant 1 : i64
      %498 = arith.subi %496, %497 : i64
      %499 = arith.andi %493, %498 : i64
      %500 = arith.constant 1 : i64
      %501 = arith.shrsi %498, %500 : i64
      %502 = arith.constant 0 : i64
      %503 = arith.cmpi slt, %493, %502 : i64
      %504 = arith.extui %503 : i1 to i64
      %505 = arith.addi %501, %504 : i64
      %506 = arith.shrsi %493, %494 : i64
      %507 = arith.cmpi sgt, %499, %505 : i64
      %508 = arith.extui %507 : i1 to i64
      %509 = arith.addi %506, %508 : i64
      %510 = arith.constant -5 : i64
      %511 = arith.addi %509, %510 : i64
      %512 = arith.constant -128 : i64
      %513 = arith.maxsi %511, %512 : i64
      %514 = arith.constant 127 : i64
      %515 = arith.minsi %513, %514 : i64
      %516 = arith.trunci %515 : i64 to i8
      linalg.yield %516 : i8
    } -> tensor<1x20xi8>
    func.return %469, %455 : tensor<1x20xi8>, tensor<1x6x14x20xi8>
  }
}

