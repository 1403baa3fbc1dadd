"""The `quantized_decomposed` operators (dequantize_per_tensor, dequantize_per_channel, ...) PT2E
quantized programs call: registered by torchao.quantization.pt2e, as a runtime that runs such
programs imports it."""

from __future__ import annotations

import torchao.quantization.pt2e  # noqa: F401 - registers torch.ops.quantized_decomposed
