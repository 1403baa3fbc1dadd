"""torchao's tensor subclasses (a real quantization library), imported and trusted by the loader process.

Importing torchao registers its operators and pytree constants; listing its
int8 weight-only tensor in `TENSOR_SUBCLASSES` is the user's explicit trust
(conformance's pt2format loader passes it as `allow_subclasses`).
"""

from __future__ import annotations

from torchao.quantization import Int8Tensor

TENSOR_SUBCLASSES = (Int8Tensor,)
