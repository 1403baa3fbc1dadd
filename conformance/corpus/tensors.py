"""State that is not one dense tensor: sparse layouts, quantized dtypes, wrapper tensor subclasses, torchao.

Every case here failed to save before schema 1.1 ("only dense strided tensors
have data in a file" / "tensor subclasses cannot be saved"). Quantized
tensors cannot be state of an exported program with torch 2.13 (fake tensors
do not support them), so those cases are pinned in not_exportable.toml and
quantized round trips are tested through weight files instead
(tests/exporter/test_composite.py; trust and hostile rows: tests/loaders/test_composite_trust.py).
"""

from __future__ import annotations

import torch
import torch.nn as nn

from conformance.corpus._case import Program, case

_SUBCLASSES = ("conformance.oplibs.subclasses",)


def _fixed(shape, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


def _sparse_source(seed: int) -> torch.Tensor:
    """A 6x5 matrix with zeros in most places, so the sparse forms hold few entries."""
    d = _fixed((6, 5), seed)
    return d * (d.abs() > 0.8)


class SparseCoo(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("adj", _sparse_source(1).to_sparse())
        # An uncoalesced COO constant (a duplicate index): saved as stored, its flag kept.
        self.dup = torch.sparse_coo_tensor(torch.tensor([[0, 0, 3], [1, 1, 4]]), torch.tensor([1.0, 2.0, -3.0]),
                                           (6, 5))

    def forward(self, x):
        return torch.sparse.mm(self.adj, x) + torch.sparse.mm(self.dup, x)


@case("sparse_coo_state", tags=("fast",))
def sparse_coo_state():
    """A COO buffer and an uncoalesced COO constant used by torch.sparse.mm."""
    return Program(SparseCoo(), (_fixed((5, 3), 2),), strict=True)


class SparseCompressed(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("csr", _sparse_source(3).to_sparse_csr())
        self.register_buffer("csc", _sparse_source(4).to_sparse_csc())

    def forward(self, x):
        return self.csr @ x + self.csc.to_dense() @ x


@case("sparse_compressed_state", tags=("fast",))
def sparse_compressed_state():
    """CSR and CSC buffers (matmul, to_dense)."""
    return Program(SparseCompressed(), (_fixed((5, 3), 5),))


class ScaledLinear(nn.Module):
    def __init__(self):
        from conformance.oplibs.subclasses import ScaledTensor

        super().__init__()
        self.lin = nn.Linear(8, 4)
        with torch.no_grad():
            self.lin.weight.copy_(_fixed((4, 8), 6))
            self.lin.bias.copy_(_fixed((4,), 7))
        self.lin.weight = nn.Parameter(ScaledTensor.from_float(self.lin.weight.detach()), requires_grad=False)
        self.register_buffer("table", ScaledTensor.from_float(_fixed((5, 8), 8)))

    def forward(self, x):
        return self.lin(x) + self.table.sum(0)[:4]


@case("subclass_state", tags=("fast",), child_imports=_SUBCLASSES)
def subclass_state():
    """A wrapper tensor subclass (int8 data + per-row scale, context with a dtype) as a parameter and a buffer."""
    return Program(ScaledLinear(), (_fixed((2, 8), 9),))


class QuantizedBuffer(nn.Module):
    def __init__(self, per_channel: bool):
        super().__init__()
        w = _fixed((4, 3), 10)
        if per_channel:
            q = torch.quantize_per_channel(w, torch.tensor([0.05, 0.1, 0.02, 0.2], dtype=torch.float64),
                                           torch.tensor([0, 3, -2, 1]), 0, torch.qint8)
        else:
            q = torch.quantize_per_tensor(w, 0.05, 7, torch.quint8)
        self.register_buffer("qw", q)

    def forward(self, x):
        return x @ self.qw.dequantize().T


@case("quantized_per_tensor_state", tags=("full",))
def quantized_per_tensor_state():
    """A quint8 per-tensor-affine buffer, dequantized in forward (torch 2.13 cannot export it)."""
    return Program(QuantizedBuffer(per_channel=False), (_fixed((2, 3), 11),))


@case("quantized_per_channel_state", tags=("full",))
def quantized_per_channel_state():
    """A qint8 per-channel-affine buffer, dequantized in forward (torch 2.13 cannot export it)."""
    return Program(QuantizedBuffer(per_channel=True), (_fixed((2, 3), 12),))


class _Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(16, 32)
        self.down = nn.Linear(32, 8)
        for i, p in enumerate(self.parameters()):
            with torch.no_grad():
                p.copy_(_fixed(p.shape, 20 + i))

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


def _torchao_int8_mlp():
    from torchao.quantization import Int8WeightOnlyConfig, quantize_

    m = _Mlp().eval()
    quantize_(m, Int8WeightOnlyConfig())
    return m


@case("torchao_int8_weight_only", tags=("full",), child_imports=("conformance.oplibs.torchao_classes",))
def torchao_int8_weight_only():
    """An MLP quantized by torchao (Int8WeightOnlyConfig: Int8Tensor weights), exported as users do."""
    return Program(_torchao_int8_mlp(), (_fixed((4, 16), 30),))


_QDQ = ("conformance.oplibs.quantized_decomposed",)


class DecomposedQuantized(nn.Module):
    """int8 buffers with their quantization parameters, dequantized by the `quantized_decomposed`
    operators: how PT2E quantization (torchao.quantization.pt2e) stores quantized weights in an
    exported program, since torch's quantized tensors cannot be program state."""

    def __init__(self, per_channel: bool):
        import conformance.oplibs.quantized_decomposed  # noqa: F401 - the operators forward calls

        super().__init__()
        w = _fixed((4, 3), 13)
        self.per_channel = per_channel
        if per_channel:
            scales = torch.tensor([0.05, 0.1, 0.02, 0.2], dtype=torch.float32)
            zps = torch.tensor([0, 3, -2, 1], dtype=torch.int64)
            q = torch.clamp(torch.round(w / scales[:, None]) + zps[:, None], -128, 127).to(torch.int8)
            self.register_buffer("scales", scales)
            self.register_buffer("zero_points", zps)
        else:
            q = torch.clamp(torch.round(w / 0.05) + 7, -128, 127).to(torch.int8)
        self.register_buffer("qw", q)

    def forward(self, x):
        qd = torch.ops.quantized_decomposed
        if self.per_channel:
            w = qd.dequantize_per_channel(self.qw, self.scales, self.zero_points, 0, -128, 127, torch.int8)
        else:
            w = qd.dequantize_per_tensor(self.qw, 0.05, 7, -128, 127, torch.int8)
        return x @ w.T


@case("quantized_decomposed_per_tensor", tags=("full",), child_imports=_QDQ)
def quantized_decomposed_per_tensor():
    """A per-tensor int8 buffer dequantized by quantized_decomposed.dequantize_per_tensor (PT2E's form)."""
    return Program(DecomposedQuantized(per_channel=False), (_fixed((2, 3), 14),))


@case("quantized_decomposed_per_channel", tags=("full",), child_imports=_QDQ)
def quantized_decomposed_per_channel():
    """A per-channel int8 buffer with scale and zero-point buffers, dequantized per channel (PT2E's form)."""
    return Program(DecomposedQuantized(per_channel=True), (_fixed((2, 3), 15),))
