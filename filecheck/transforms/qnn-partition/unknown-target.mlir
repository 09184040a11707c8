// RUN: %qd-opt %s -p 'qnn-partition{target=npu9}' --verify-diagnostics

// An unknown target is one diagnostic naming the targets there are (it belongs to no op).
// expected-error@unknown {{qnn-partition: unknown target 'npu9' (known: cmsis-nn, ethos-u, ethos-u55, ethos-u65, ethos-u85)}}

func.func @main() {
  func.return
}
