"""Custom operators of the corpus, defined with torch.library.custom_op (namespace `pt2f_conf`)."""

from __future__ import annotations

import torch


@torch.library.custom_op("pt2f_conf::scaled_add", mutates_args=())
def scaled_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    return x + alpha * y


@scaled_add.register_fake
def _(x, y, alpha):
    return torch.empty_like(x)


@torch.library.custom_op("pt2f_conf::stack_sum", mutates_args=())
def stack_sum(xs: list[torch.Tensor], dim: int | None = None) -> torch.Tensor:
    s = torch.stack(xs).sum(0)
    return s if dim is None else s.sum(dim)


@stack_sum.register_fake
def _(xs, dim=None):
    s = torch.empty_like(xs[0])
    return s if dim is None else s.sum(dim)


@torch.library.custom_op("pt2f_conf::split_pair", mutates_args=())
def split_pair(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x * 2, x - 1


@split_pair.register_fake
def _(x):
    return torch.empty_like(x), torch.empty_like(x)


@torch.library.custom_op("pt2f_conf::add_into", mutates_args=("out",))
def add_into(out: torch.Tensor, x: torch.Tensor) -> None:
    out.add_(x)


@add_into.register_fake
def _(out, x):
    return None
