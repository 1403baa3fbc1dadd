"""The steps of a large save, each alone: CRC-32 implementations, one or two writer threads, rename or exchange.

    python benchmarks/bench_write_steps.py --dir DIR [--mb 475] [--repeat 5]

* CRC-32 of the same buffer with zlib, ISA-L (`isal`) and, if installed,
  libdeflate (`deflate`): the values must agree;
* writing the buffer to a new file with one thread (`os.write`) and with two
  threads (`os.pwrite` of each half);
* writing it and putting the file in place of an existing one (no sync in
  between, as a save with `fsync=False`) with `os.replace` (on ext4 a rename
  over a file starts the new file's writeback, and dropping the old file frees
  its blocks), with a second link kept across the rename (the old file freed
  later), and by exchanging the two names (`renameat2(RENAME_EXCHANGE)`, what
  pt2format's writer does on Linux); the old file is unlinked untimed;
* the write + exchange with the old file's page cache kept, and dropped
  first (`page_cache.release_cache_of_replaced`, what pt2format's writer
  does), each after `--settle` seconds (3): on a VM that reports free
  memory to its host, memory free for about two seconds goes back to the
  host and costs a host fault per page when a write takes it again, as it
  does when a save comes a while after whatever freed memory last.

Every timing starts after `os.sync()`; best and median of `--repeat`. DIR must
be on the disk to measure (the buffer is written there as files of `--mb` MB).
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
import zlib

from pt2format._container.exchange import swap
from pt2format._container.page_cache import release_cache_of_replaced

_STEP = 64 << 20


def _crcs():
    out = {"zlib": zlib.crc32}
    try:
        from isal.isal_zlib import crc32
        out["isal"] = crc32
    except ImportError:
        pass
    try:
        import deflate
        out["deflate"] = deflate.crc32
    except ImportError:
        pass
    return out


def _write(path: str, view: memoryview, threads: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        bounds = [len(view) * k // threads // 4096 * 4096 for k in range(threads)] + [len(view)]

        def part(lo: int, hi: int) -> None:
            pos = lo
            while pos < hi:
                pos += os.pwrite(fd, view[pos:min(hi, pos + _STEP)], pos)

        workers = [threading.Thread(target=part, args=(bounds[k], bounds[k + 1])) for k in range(1, threads)]
        for w in workers:
            w.start()
        part(bounds[0], bounds[1])
        for w in workers:
            w.join()
    finally:
        os.close(fd)


def _timed(fn) -> float:
    os.sync()
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--mb", type=int, default=475)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--settle", type=float, default=3.0,
                    help="seconds between the sync and the write of the page-cache steps")
    a = ap.parse_args()
    buf = memoryview(os.urandom(a.mb << 20))
    results: dict[str, list] = {}

    crcs = _crcs()
    values = {name: fn(buf) for name, fn in crcs.items()}
    if len(set(values.values())) != 1:
        raise SystemExit(f"CRC values disagree: {values}")
    for _ in range(a.repeat):
        for name, fn in crcs.items():
            results.setdefault(f"CRC-32, {name}", []).append(_timed(lambda: fn(buf)))

    target, tmp, old = (os.path.join(a.dir, n) for n in ("steps.bin", "steps.tmp", "steps.old"))
    _write(target, buf, 1)
    for _ in range(a.repeat):
        for threads in (1, 2):
            results.setdefault(f"write, {threads} thread(s)", []).append(_timed(lambda: _write(tmp, buf, threads)))
            os.unlink(tmp)
        for how in ("os.replace", "link + os.replace", "exchange"):
            os.sync()
            t0 = time.perf_counter()
            _write(tmp, buf, 1)  # no sync before the rename: as in a save with fsync=False
            t1 = time.perf_counter()
            if how == "os.replace":
                os.replace(tmp, target)
            elif how == "link + os.replace":
                os.link(target, old)
                os.replace(tmp, target)
            elif not swap(tmp, target):
                raise SystemExit("this system cannot exchange names (renameat2)")
            t2 = time.perf_counter()
            results.setdefault(f"put in place: {how} (the call alone)", []).append(t2 - t1)
            results.setdefault(f"write + {how}", []).append(t2 - t0)
            for leftover in (tmp, old):
                if os.path.exists(leftover):
                    os.unlink(leftover)
        for cache in ("kept", "dropped first"):
            os.sync()
            time.sleep(a.settle)
            t0 = time.perf_counter()
            if cache != "kept" and not release_cache_of_replaced(target):
                cache = "dropped first (refused here: see pt2format/_container/page_cache.py)"
            _write(tmp, buf, 1)
            if not swap(tmp, target):
                raise SystemExit("this system cannot exchange names (renameat2)")
            results.setdefault(f"write + exchange, the old file's page cache {cache}", []).append(
                time.perf_counter() - t0)
            os.unlink(tmp)
    os.unlink(target)

    print(f"{a.mb} MB, best / median of {a.repeat} (seconds)\n\n| step | time |\n|---|---|")
    for name, ts in results.items():
        print(f"| {name} | {min(ts):.3f} / {statistics.median(ts):.3f} |")


if __name__ == "__main__":
    main()
