"""Program state: parameters, buffers (persistent or not, mutated), constants, tied weights, odd inputs."""

from __future__ import annotations

import torch
import torch.nn as nn

from conformance.corpus._case import Program, case


class Buffers(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))
        self.frozen = nn.Parameter(torch.randn(4), requires_grad=False)
        self.register_buffer("mean", torch.randn(4))
        self.register_buffer("scratch", torch.arange(4.0), persistent=False)

    def forward(self, x):
        return (x @ self.w + self.frozen - self.mean) * self.scratch


@case("params_and_buffers", tags=("fast",))
def params_and_buffers():
    """Trainable and frozen parameters, a persistent and a non-persistent buffer."""
    return Program(Buffers(), (torch.randn(2, 4),))


class Mutations(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))
        self.register_buffer("ema", torch.zeros(3))
        self.register_buffer("hidden", torch.ones(3), persistent=False)

    def forward(self, x, out):
        self.count.add_(1)
        self.ema.mul_(0.9).add_(x.mean(0) * 0.1)
        self.hidden.copy_(self.hidden * 2)
        out.copy_(x.sum(0))  # user input mutated in place
        return self.ema + self.hidden, self.count


@case("mutations", tags=("fast",))
def mutations():
    """Persistent and non-persistent buffers and a user input, all mutated in forward."""
    return Program(Mutations(), (torch.randn(2, 3), torch.zeros(3)))


class Constants(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = torch.tensor([[1.0, -2.0], [0.5, 4.0]])  # plain attribute: lifted constant
        self.ids = torch.tensor([1, 0, 1])

    def forward(self, x):
        return x @ self.table + self.ids.sum(), torch.tensor([3.0, 4.0]) * x[:, 0].sum()


@case("lifted_constants", tags=("fast",))
def lifted_constants():
    """Tensor attributes and a tensor created from a literal in forward (lifted tensor constants)."""
    return Program(Constants(), (torch.randn(3, 2),))


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 6)
        self.head = nn.Linear(6, 10, bias=False)
        self.head.weight = self.emb.weight  # tied
        self.register_buffer("emb_view", self.emb.weight.detach()[2:5], persistent=True)

    def forward(self, ids):
        return self.head(self.emb(ids)), self.emb_view.sum()


@case("tied_weights", tags=("fast",))
def tied_weights():
    """An embedding tied to the output head, plus a buffer that is a view of the same storage."""
    return Program(Tied(), (torch.tensor([[1, 2, 3]]),))


class Scalars(nn.Module):
    def forward(self, x, n: int, scale: float, flag: bool, mask=None, *, bias, name: str = "a"):
        y = x * scale + n
        if flag:
            y = y + 1
        if mask is not None:
            y = y * mask
        return y + bias


@case("scalar_none_kwargs_inputs", tags=("fast",))
def scalar_none_kwargs_inputs():
    """int/float/bool inputs (specialized), a None input and a kwargs-only tensor input."""
    return Program(Scalars(), (torch.randn(2, 3), 3, 0.5, True, None), {"bias": torch.ones(3), "name": "a"},
                   invalid_inputs=[((torch.randn(2, 3), 4, 0.5, True, None), {"bias": torch.ones(3), "name": "a"})])


class KwOnly(nn.Module):
    def forward(self, *, a, b, c=None):
        return a * b if c is None else a * b + c


@case("kwargs_only", tags=("full",))
def kwargs_only():
    """Only keyword inputs, one optional left at its default (None)."""
    return Program(KwOnly(), (), {"a": torch.randn(3), "b": torch.randn(3)})


class Views(nn.Module):
    def __init__(self):
        super().__init__()
        base = torch.arange(48, dtype=torch.float32).reshape(6, 8)
        self.register_buffer("transposed", base.t())                   # non-contiguous
        self.register_buffer("offset", base[2:4, 1:7])                 # offset, non-contiguous
        self.register_buffer("strided", base[::2, ::3])                # step slicing
        self.register_buffer("expanded", torch.arange(3.0).expand(4, 3))  # stride 0
        self.const_view = torch.arange(20.0).reshape(4, 5)[1:, 2:]     # constant view with offset

    def forward(self, x):
        return (x + self.transposed.sum() + self.offset.sum() + self.strided.sum() + self.expanded.sum()
                + self.const_view.sum())


@case("views_as_state", tags=("fast",))
def views_as_state():
    """Non-contiguous, offset, step-sliced and expanded (stride 0) views as buffers and as a constant."""
    return Program(Views(), (torch.randn(2),))


class Empty(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("nothing", torch.empty(0, 4))
        self.register_buffer("scalar", torch.tensor(2.5))

    def forward(self, x):
        return torch.cat([self.nothing, x]) * self.scalar


@case("empty_and_scalar_state", tags=("full",))
def empty_and_scalar_state():
    """A zero-element buffer and a 0-d buffer."""
    return Program(Empty(), (torch.randn(2, 4),))


class MetaState(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.register_buffer("scale", torch.linspace(0.5, 2.0, 3))
        self.register_buffer("tail", self.scale[1:], persistent=False)  # a view of another buffer

    def forward(self, x):
        return self.lin(x) * self.scale + self.tail.sum()


def _export_meta_state():
    with torch.device("meta"):
        m = MetaState()
    return torch.export.export(m, (torch.randn(2, 4, device="meta"),))


@case("meta_device_state", tags=("full",))
def meta_device_state():
    """Parameters and buffers on the meta device (a model built without weights): shapes, dtypes, aliasing, no data."""
    return Program(None, (torch.randn(2, 4, device="meta"),), export_fn=_export_meta_state,
                   extra_inputs=[((torch.empty(2, 4, device="meta"),), {})])


class ChannelsLast(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1).to(memory_format=torch.channels_last)
        self.register_buffer("bias_map", torch.randn(1, 4, 5, 5).to(memory_format=torch.channels_last))

    def forward(self, x):
        return self.conv(x) + self.bias_map


@case("channels_last_state", tags=("fast",))
def channels_last_state():
    """A conv weight and a buffer in channels_last (NHWC strides) memory format."""
    return Program(ChannelsLast(), (torch.randn(2, 3, 5, 5).to(memory_format=torch.channels_last),))


class ReturnsSize(nn.Module):
    def forward(self, x):
        return x.shape, x.sum(), x.size()[1:]


@case("returns_torch_size", tags=("fast",))
def returns_torch_size():
    """A program returning torch.Size values (the whole shape and a slice of it) beside a tensor."""
    return Program(ReturnsSize(), (torch.randn(3, 4, 2),))


class ConjNeg(nn.Module):
    def forward(self, z):
        return z.conj(), z.conj().imag, z * 2


@case("conj_neg_outputs", tags=("fast",))
def conj_neg_outputs():
    """Outputs with the conjugate bit (`z.conj()`) and the negative bit (`z.conj().imag`) set."""
    g = torch.Generator().manual_seed(5)
    return Program(ConjNeg(), (torch.randn(3, 2, dtype=torch.complex64, generator=g),))
