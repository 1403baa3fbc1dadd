"""Runs injection mutants in worker processes (pt2f_injection_worker) and turns their answers into verdicts.

A worker is reused until it dies or exceeds the per-mutant budget (then it is
killed and the stage it was in is reported as a hang). The marker directory
is emptied before and checked after every mutant.
"""

from __future__ import annotations

import collections
import json
import os
import select
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUPPORT = Path(__file__).resolve().parent


class Worker:
    """One child process (pt2f_injection_worker) that runs mutants one at a time, killed on timeout."""

    def __init__(self, child_imports=()):
        env = dict(os.environ)
        extra = [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(SUPPORT)] + extra)
        env.setdefault("OMP_NUM_THREADS", "1")
        fd, self.stage_file = tempfile.mkstemp(prefix="pt2f-inject-stage-")
        os.close(fd)
        env["PT2F_INJECT_STAGE"] = self.stage_file
        self.proc = subprocess.Popen([sys.executable, "-m", "pt2f_injection_worker", *child_imports],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, text=True, bufsize=1, cwd=str(ROOT))
        self.child_imports = tuple(child_imports)
        line = self._readline(120)
        if line is None or not line.startswith("ready"):
            self.close()
            raise RuntimeError(f"injection worker did not start: {line!r}")

    def _readline(self, timeout):
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not r:
            return None
        return self.proc.stdout.readline()

    def run(self, job: dict, timeout: float):
        """The worker's result dict, or {"outcome": "hang"} after killing it when it takes longer than timeout."""
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        line = self._readline(timeout)
        if not line:
            dead = self.proc.poll() is not None
            with open(self.stage_file) as f:
                stage = f.read()
            self.close()
            return {"outcome": "crash" if dead else "hang", "stage": stage,
                    "error": f"no answer within {timeout:.0f} s" if not dead else f"exit {self.proc.returncode}"}
        return json.loads(line)

    def alive(self):
        return self.proc.poll() is None

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        try:
            os.unlink(self.stage_file)
        except OSError:
            pass


def classify(result: dict, marker_made: bool) -> str:
    """The verdict: ok-refused | ok-survived | torch-error (reported, not a failure) | FAIL-*."""
    if marker_made:
        return "FAIL-marker"
    outcome = result["outcome"]
    if outcome == "refused":
        return "ok-refused"
    if outcome == "survived":
        return "ok-survived"
    if outcome == "torch-error":
        return "torch-error"
    if outcome == "untyped":
        return "FAIL-untyped"
    return "FAIL-" + outcome  # hang, crash


def run_mutants(mutants, marker_dir: Path, *, timeout=60.0, thorough=True, on_result=None):
    """Run each mutant in a worker; return [(mutant, result, verdict)]. Workers are reused until one dies."""
    workers = {}
    results = []
    try:
        for mut, imports in mutants:
            w = workers.get(imports)
            if w is None or not w.alive():
                w = workers[imports] = Worker(imports)
            for f in marker_dir.iterdir():
                f.unlink()
            res = w.run({"path": mut.path, "encoding": mut.encoding, "thorough": thorough}, timeout)
            made = any(marker_dir.iterdir())
            verdict = classify(res, made)
            results.append((mut, res, verdict))
            if on_result:
                on_result(mut, res, verdict)
            try:
                os.unlink(mut.path)
            except OSError:
                pass
    finally:
        for w in workers.values():
            w.close()
    return results


def summarize(results) -> str:
    verdicts = collections.Counter(v for _, _, v in results)
    modes = collections.Counter(m.mode for m, _, _ in results)
    fields = {(m.schema_path, m.mode) for m, _, _ in results}
    payloads = {m.payload for m, _, _ in results}
    stages = collections.Counter(f"{r.get('stage')}" for _, r, v in results if v == "torch-error")
    lines = [f"mutants: {len(results)} ({', '.join(f'{k} {v}' for k, v in sorted(modes.items()))})",
             f"distinct fields x payloads: {len({(m.schema_path, m.payload) for m, _, _ in results})} "
             f"({len(fields)} field/mode pairs, {len(payloads)} payloads)",
             "verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items()))]
    if stages:
        lines.append("torch errors after a successful load, by stage: "
                     + ", ".join(f"{k} {v}" for k, v in sorted(stages.items())))
    return "\n".join(lines)


def finding_line(mut, res: dict, verdict: str) -> str:
    err = (res.get("error") or "").replace("\n", " ")[:200]
    return (f"- [injection] {mut.base}: `{mut.site}` ({mut.schema_path}), payload {mut.payload!r} ({mut.mode}, "
            f"{mut.note}): {verdict} at {res.get('stage')}: {err}")


