"""load_program: open a .pt2f file (path, bytes or file object) and rebuild one of its programs."""

from __future__ import annotations

import os

from pt2format._nogc import no_gc
from pt2format._options import LOAD
from pt2format.errors import Pt2FormatError

from ._program import build_program


@LOAD.implements
def load_program(path, *, program, map_location, weights, copy, verify_data, extra_files, metadata, weight_set,
                 prefetch, allow_subclasses, mmap):
    """Load program `program` of the file at `path`: the work of `pt2format.load`.

    Every option means what `pt2format.load` documents; its entries come from
    the options table (pt2format/_options.py, `LOAD`) and are not repeated
    here, so they cannot drift. `path` may also be bytes or a binary file
    object, read into memory (no mmap).
    """
    # See _read_and_build: the decoded tree is gone before the collector runs again, and what is left is the
    # program (lasting: it skips the young collection).
    with no_gc(lasting=True):
        return _read_and_build(path, program=program, map_location=map_location, weights=weights, copy=copy,
                               verify_data=verify_data, extra_files=extra_files, metadata=metadata,
                               weight_set=weight_set, prefetch=prefetch, allow_subclasses=allow_subclasses,
                               mmap=mmap)


def _read_and_build(path, *, program, map_location, weights, copy, verify_data, extra_files, metadata, weight_set,
                    prefetch, allow_subclasses, mmap):
    """load_program's work, with the collector off from the decode to the end (the caller's `no_gc`).

    The decoded `Package` (about 30 objects a node) is only needed while the program is built; it
    dies with this frame, by reference counting. Re-enabling the collector between the decode and the
    build (as a decode on its own does) would make the next young collection traverse the whole tree
    first, a pass over tens of objects per node that frees nothing.
    """
    from pt2format import _extras
    from pt2format._api import read
    from pt2format._source import is_pathlike

    f = read(path, verify_data=verify_data, copy_on_write=True, mmap=mmap)  # once, whatever the source
    try:
        if prefetch and mmap and weights and not copy and f.package.storages and is_pathlike(path):
            from ._prefetch import prefetch as start_prefetch
            start_prefetch(os.fspath(path), [f.storage_view(i) for i in range(len(f.package.storages))])
        if weight_set is None:
            # `f` is this load's own: the decoded nodes go as the graph is built (see GraphBuilder.build).
            ep = build_program(f.package, program, f.storage_view, map_location=map_location, weights=weights,
                               copy=copy, file_key=f.file_key, allow_subclasses=allow_subclasses,
                               release_nodes=True)
        else:  # the program with meta state, then the set's tensors from the same decoded file
            from ._weights import attach_tensors, tensors_of

            ep = build_program(f.package, program, f.storage_view, map_location=map_location, weights=False,
                               file_key=f.file_key, allow_subclasses=allow_subclasses, release_nodes=True)
            if weights:
                attach_tensors(ep, tensors_of(f, program=program, weight_set=weight_set, map_location=map_location,
                                              copy=copy, allow_subclasses=allow_subclasses), strict=True)
        if extra_files is not None:
            extra_files.clear()
            extra_files.update(_extras.extra_files_dict(f))
        if metadata is not None:
            metadata.clear()
            metadata.update(_extras.metadata_dict(f.package))
        return ep
    except Pt2FormatError as e:
        raise e.with_context(file=f.path)
    finally:
        f.close()  # tensors keep their views (and so the map) alive
