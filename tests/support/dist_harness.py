"""Start a function on N ranks the way users do (torch.multiprocessing spawn, gloo on CPU), with a deadline.

`run(target, world_size, *args, timeout=...)` starts `target(rank, world_size,
*args)` in N spawned processes after `init_process_group("gloo")`, and
returns each rank's return value (JSON). No rank may hang: the process
group has a timeout, and every process still alive at the deadline is
killed and reported as hung (`HungError`).
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import tempfile
import time
import traceback


class HungError(AssertionError):
    """A rank did not finish before the deadline."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _entry(rank: int, world_size: int, port: int, target, args, out_dir: str, pg_timeout: float) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    result = {}
    try:
        dist.init_process_group("gloo", rank=rank, world_size=world_size, init_method=f"tcp://127.0.0.1:{port}",
                                timeout=datetime.timedelta(seconds=pg_timeout))
        result = {"value": target(rank, world_size, *args)}
    except BaseException as e:  # noqa: BLE001 - reported to the parent, which fails the test
        result = {"crash": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
    finally:
        with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
            json.dump(result, f)
        if dist.is_initialized():
            dist.destroy_process_group()


def run(target, world_size: int, *args, timeout: float = 120.0, pg_timeout: float = 60.0) -> list:
    """[rank 0's return value, rank 1's, ...]; HungError if a rank outlives `timeout` seconds."""
    import torch.multiprocessing as mp

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    ctx = mp.get_context("spawn")
    port = _free_port()
    with tempfile.TemporaryDirectory() as out_dir:
        procs = [ctx.Process(target=_entry, args=(r, world_size, port, target, args, out_dir, pg_timeout))
                 for r in range(world_size)]
        for p in procs:
            p.start()
        deadline = time.monotonic() + timeout
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
        hung = [r for r, p in enumerate(procs) if p.is_alive()]
        for r in hung:
            procs[r].kill()
            procs[r].join()
        if hung:
            raise HungError(f"ranks {hung} of {world_size} still running after {timeout} s (killed)")
        results = []
        for r in range(world_size):
            path = os.path.join(out_dir, f"rank{r}.json")
            if not os.path.exists(path):
                raise AssertionError(f"rank {r} exited with code {procs[r].exitcode} and no result")
            with open(path) as f:
                res = json.load(f)
            if "crash" in res:
                raise AssertionError(f"rank {r} crashed: {res['crash']}\n{res['traceback']}")
            results.append(res["value"])
        return results
