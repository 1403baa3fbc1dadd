"""pt2format.exporter: torch.export.ExportedProgram -> pt2format schema objects and data (imports torch).

`save_programs` writes a file; `export_package` does the conversion in memory
and returns (Package, storage payloads); `export_program` converts one
program into shared tensor/operator tables. The loaders never import this
package: what both directions share is in `pt2format.vocab`.
"""

from __future__ import annotations

from ._program import export_package, export_program
from ._save import save_programs, save_weights
from ._weights import export_weights

__all__ = ["export_program", "export_package", "export_weights", "save_programs", "save_weights"]
