"""Child process of the injection test: runs one mutated file at a time through everything a user does.

Protocol: prints "ready", then reads one JSON job per line ({"path", "thorough"})
and answers one JSON line: {"outcome", "stage", "error"} where outcome is
"refused" (a Pt2FormatError from pt2format's own read/validate/CLI/load),
"untyped" (any other exception from those), "survived" (loaded and every
follow-up worked) or "torch-error" (loaded, then torch raised in a follow-up:
reported, judged by the lead). The parent kills this process on a timeout and
checks the marker file after each job. Argument list: modules to import first
(the corpus case's custom-op libraries).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import sys
import traceback
import warnings


def _err(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    where = f" @ {tb[-1].filename.rsplit('/', 2)[-1]}:{tb[-1].lineno}" if tb else ""
    return f"{type(e).__name__}: {str(e)[:300]}{where}"


_STAGE_FILE = os.environ.get("PT2F_INJECT_STAGE")


def _stage(name: str) -> None:
    """Record the step about to run, so the parent can say where a hang happened."""
    if _STAGE_FILE:
        with open(_STAGE_FILE, "w") as f:
            f.write(name)


class Stop(Exception):
    def __init__(self, outcome, stage, error):
        super().__init__(outcome)
        self.result = {"outcome": outcome, "stage": stage, "error": error}


def _ours(stage, fn):
    """A pt2format entry point: a Pt2FormatError is a clean refusal; anything else is a finding."""
    from pt2format.errors import Pt2FormatError

    _stage(stage)
    try:
        return fn()
    except Pt2FormatError as e:
        raise Stop("refused", stage, _err(e)) from None
    except Exception as e:  # noqa: BLE001 - any other type is exactly what we look for
        raise Stop("untyped", stage, _err(e)) from None


def _torch(stage, fn):
    _stage(stage)
    try:
        return fn()
    except Exception as e:  # noqa: BLE001
        raise Stop("torch-error", stage, _err(e)) from None


def _cli(sub, path):
    from pt2format import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            cli.main([sub, path])
        except SystemExit:
            pass


def run(path: str, thorough: bool) -> dict:
    import torch

    import pt2format

    def read():
        with pt2format.read(path) as f:
            return [p.name for p in f.package.programs]

    names = _ours("read", read)
    _ours("validate", lambda: pt2format.validate(path))
    for sub in ("inspect", "dump", "validate"):
        _ours(f"cli {sub}", lambda sub=sub: _cli(sub, path))
    unflatten_mod = importlib.import_module("torch.export.unflatten")
    for name in names:
        ep = _ours("load", lambda name=name: pt2format.load(path, program=name))
        _torch("print(ep)", lambda: str(ep))
        _torch("print_readable", lambda: ep.graph_module.print_readable(print_output=False))
        mod = _torch("module()", ep.module)
        args, kwargs = ep.example_inputs if ep.example_inputs is not None else ((), {})
        _torch("call", lambda: mod(*args, **kwargs))
        if thorough:
            _torch("run_decompositions", ep.run_decompositions)
            with unflatten_mod._disable_interpreter():  # the generated code, not the interpreter
                uf = _torch("unflatten (codegen)", lambda: torch.export.unflatten(ep))
            _torch("unflattened print_readable",
                   lambda: [m.print_readable(print_output=False) for m in uf.modules()
                            if hasattr(m, "print_readable")])
            _torch("call unflattened (codegen)", lambda: uf(*args, **kwargs))
    return {"outcome": "survived", "stage": "done", "error": ""}


def main(argv) -> int:
    # Answers go to a private copy of stdout; fd 1 itself goes to stderr so that
    # anything torch or C code prints cannot corrupt the protocol.

    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    for name in argv:
        importlib.import_module(name)
    import torch  # noqa: F401  (imported before "ready" so jobs time only their own work)

    import pt2format  # noqa: F401

    warnings.simplefilter("ignore")
    proto.write("ready\n")
    for line in sys.stdin:
        job = json.loads(line)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                res = run(job["path"], job.get("thorough", True))
        except Stop as s:
            res = s.result
        except BaseException as e:  # noqa: BLE001 - a harness bug; say so rather than die silently
            res = {"outcome": "untyped", "stage": "harness", "error": _err(e)}
        proto.write(json.dumps(res) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
