"""qd-opt's contract for bad input: exit status 2, one line on stderr, never a traceback."""

import subprocess
import sys
from pathlib import Path

import pytest

QD_OPT = str(Path(sys.executable).parent / "qd-opt")


def _run(args, stdin: bytes = b""):
    return subprocess.run([QD_OPT, *args], input=stdin, capture_output=True, timeout=60)


@pytest.mark.parametrize(
    "args, stdin, message",
    [
        (["/nonexistent/x.mlir"], b"", "qd-opt: error: cannot read /nonexistent/x.mlir: No such file or directory"),
        (["-p", "no-such-pass"], b"func.func @f() { func.return }", "qd-opt: error: Unrecognized passes: ['no-such-pass']"),
        ([], b"\x00\xff garbage", "qd-opt: error: input is not UTF-8 text (byte 0xff at offset 1)"),
        ([], b"func.func @f(", "stdin:1:14: error: Expected argument or type"),
        ([], b"func.func @f(%a: tensor<4x!quant.uniform<i8:f32, 5.000000e-01:300>>) { %0 = qnn.reshape %a : (tensor<4x!quant.uniform<i8:f32, 5.000000e-01:300>>) -> tensor<4x!quant.uniform<i8:f32, 5.000000e-01:300>> func.return }",
         "stdin:1:72: error: qnn.reshape: operand 0 (input): zero point 300 is outside i8 [-128:127]"),
    ],
)
def test_bad_input_one_line(args, stdin, message):
    proc = _run(args, stdin)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert err.strip() == message
    assert "Traceback" not in err


def test_good_input_round_trips():
    text = b"func.func @f(%a: tensor<4x!quant.uniform<i8:f32, 5.000000e-01:-3>>) { func.return }"
    proc = _run([], text)
    assert proc.returncode == 0, proc.stderr.decode()
    assert "tensor<4x!quant.uniform<i8:f32, 5.000000e-01:-3>>" in proc.stdout.decode()
