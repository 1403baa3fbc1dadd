"""load_program: open a .pt2f file and rebuild one of its programs as a torch ExportedProgram."""

from __future__ import annotations

import os

from pt2format.errors import Pt2FormatError

from ._program import build_program


def load_program(path, *, program: str | None = None, map_location=None, weights: bool = True, copy: bool = False,
                 verify_data: bool = False, prefetch: bool = False):
    """Load program `program` (default: the only one, or "forward") of the file at `path`.

    Tensors are views of a private (copy-on-write) map of the file: nothing is
    copied and writes never reach the file. `copy=True` gives tensors their
    own memory; `weights=False` builds meta-device state and reads no data;
    `map_location` remaps devices as torch.load does (str, device or dict).
    `prefetch=True` reads the weight pages in the background while the
    program is rebuilt (see _prefetch.py), so the first call does not fault
    them in one by one.
    """
    from pt2format._api import read

    path = os.fspath(path)
    f = read(path, verify_data=verify_data, copy_on_write=True)
    try:
        if prefetch and weights and not copy and f.package.storages:
            from ._prefetch import prefetch as start_prefetch
            start_prefetch(path, [f.storage_view(i) for i in range(len(f.package.storages))])
        st = os.stat(path)
        return build_program(f.package, program, f.storage_view, map_location=map_location, weights=weights,
                             copy=copy, file_key=(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    except Pt2FormatError as e:
        raise e.with_context(file=path)
    finally:
        f.close()  # tensors keep their views (and so the map) alive
