// RUN: %qd-opt %s --split-input-file --verify-diagnostics

// The mask ops' verifier rules, each a one-line diagnostic naming op, operand and type.

func.func @compare_mixed(%a: tensor<4xi32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{nn.compare: operand 1 (rhs) element type f32 differs from operand 0's i32}}
  %0 = nn.compare %a, %b {predicate = "lt"} : (tensor<4xi32>, tensor<4xf32>) -> tensor<4xi1>
  func.return
}

// -----

func.func @compare_result(%a: tensor<4xi32>) {
  // expected-error@+1 {{nn.compare: result element type i32 must be i1}}
  %0 = nn.compare %a, %a {predicate = "eq"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @compare_predicate(%a: tensor<4xi32>) {
  // expected-error@+1 {{nn.compare: attribute 'predicate' is 'less', expected one of eq, ne, lt, le, gt, ge}}
  %0 = nn.compare %a, %a {predicate = "less"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  func.return
}

// -----

func.func @and_of_ints(%a: tensor<4xi32>) {
  // expected-error@+1 {{nn.logical_and: operand 0 (lhs) element type i32 must be i1}}
  %0 = nn.logical_and %a, %a : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  func.return
}

// -----

func.func @select_condition(%c: tensor<4xi8>, %a: tensor<4xf32>) {
  // expected-error@+1 {{nn.select: operand 0 (condition) element type i8 must be i1}}
  %0 = nn.select %c, %a, %a : (tensor<4xi8>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @select_types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error@+1 {{nn.select: operand 2 (false_value) element type i32 differs from the result's f32}}
  %0 = nn.select %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @select_shapes(%c: tensor<3xi1>, %a: tensor<4xf32>) {
  // expected-error@+1 {{nn.select: operand shapes [[3], [4], [4]] do not broadcast}}
  %0 = nn.select %c, %a, %a : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}
