"""pt2format.loaders: .pt2f files -> torch.export.ExportedProgram (imports torch).

`load_program` reads a file; `build_program` rebuilds a program from a decoded
`Package` and a storage-view callback, without touching the disk.
"""

from ._load import load_program
from ._program import build_program
from ._weights import attach_weights, read_weights

__all__ = ["load_program", "build_program", "attach_weights", "read_weights"]
