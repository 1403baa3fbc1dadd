"""What every saved Package shares, whether it holds programs or only weights: its header and state roles.

`_program.py` (programs) and `_weights.py` (weight sets, weights-only files)
both build a `Package` and classify state tensors; both come from here, so
the two kinds of file cannot drift apart (and neither module imports the
other's internals).
"""

from __future__ import annotations

import torch

import pt2format
from pt2format._generated.model import Package, Producer, StateKind
from pt2format.vocab.enums import ints as _ints

StateKind = _ints(StateKind)

PRODUCER_NAME = "pt2format"


def new_package(**fields) -> Package:
    """A `Package` with this writer's format version and producer; `fields` fill in the rest."""
    return Package(
        format_version=None,  # set by _content_minor.label: the smallest minor the tree needs (SPEC.md §8.1)
        producer=Producer(name=PRODUCER_NAME, version=pt2format.__version__, torch_version=str(torch.__version__)),
        **fields,
    )


def state_kind(t: torch.Tensor, name: str, *, constant: bool = False, non_persistent=frozenset()) -> int:
    """The `StateKind` of a state tensor, as torch's graph signature has it.

    A state_dict entry is a parameter (an `nn.Parameter`) or a buffer; a
    tensor of `ep.constants` is a non-persistent buffer when the signature
    lists it so, else a lifted tensor constant.
    """
    if constant:
        return StateKind.NON_PERSISTENT_BUFFER if name in non_persistent else StateKind.TENSOR_CONSTANT
    return StateKind.PARAMETER if isinstance(t, torch.nn.Parameter) else StateKind.BUFFER
