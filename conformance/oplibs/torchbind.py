"""A small torchbind class (`pt2f_tb::Scaler`), compiled on first use with load_inline and cached.

The build directory is `<system tmp>/pt2format-cache/torchbind` (override
with PT2F_TORCHBIND_CACHE; kept out of the repository); rebuilding takes about 30 s on this machine, a cached
build loads in well under a second. Importing this module builds (if needed),
loads the library and registers the fake class export needs.
"""

from __future__ import annotations

import os
import tempfile

import torch
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/custom_class.h>
#include <torch/script.h>

struct Scaler : torch::CustomClassHolder {
  double scale;
  int64_t bias;
  Scaler(double s, int64_t b) : scale(s), bias(b) {}
  torch::Tensor apply(torch::Tensor x) { return x * scale + bias; }
};

torch::Tensor scaler_apply(c10::intrusive_ptr<Scaler> obj, torch::Tensor x) { return obj->apply(x); }

TORCH_LIBRARY(pt2f_tb, m) {
  m.class_<Scaler>("Scaler")
      .def(torch::init<double, int64_t>())
      .def("apply", &Scaler::apply)
      .def("__obj_flatten__", [](const c10::intrusive_ptr<Scaler>& self) {
        return std::make_tuple(std::make_tuple(std::string("scale"), self->scale),
                               std::make_tuple(std::string("bias"), self->bias));
      })
      .def_pickle(
          [](const c10::intrusive_ptr<Scaler>& self) -> std::tuple<double, int64_t> {
            return std::make_tuple(self->scale, self->bias);
          },
          [](std::tuple<double, int64_t> s) {
            return c10::make_intrusive<Scaler>(std::get<0>(s), std::get<1>(s));
          });
  m.def("scaler_apply(__torch__.torch.classes.pt2f_tb.Scaler obj, Tensor x) -> Tensor");
}

TORCH_LIBRARY_IMPL(pt2f_tb, CPU, m) { m.impl("scaler_apply", scaler_apply); }
"""

CACHE_DIR = os.environ.get("PT2F_TORCHBIND_CACHE",
                           os.path.join(tempfile.gettempdir(), "pt2format-cache", "torchbind"))


def _build() -> None:
    """Build (or reuse) and load the library, one process at a time.

    torch's own build lock is a plain file (`lock`) that stays behind when
    its holder dies (a killed test run), and every later build then waits
    on it forever. An flock dies with its process: under it, no live
    process holds torch's lock, so a leftover one is stale and removed.
    """
    import fcntl

    os.makedirs(CACHE_DIR, exist_ok=True)
    with open(os.path.join(CACHE_DIR, "build.flock"), "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        try:
            stale = os.path.join(CACHE_DIR, "lock")
            if os.path.exists(stale):
                os.remove(stale)
            load_inline("pt2f_tb", cpp_sources=[_SOURCE], build_directory=CACHE_DIR, is_python_module=False,
                        verbose=False)
        finally:
            fcntl.flock(guard, fcntl.LOCK_UN)


_build()


@torch._library.register_fake_class("pt2f_tb::Scaler")
class FakeScaler:
    """Export-time stand-in for pt2f_tb::Scaler (built from `__obj_flatten__`)."""

    def __init__(self, scale: float, bias: int):
        self.scale, self.bias = scale, bias

    @classmethod
    def __obj_unflatten__(cls, flat):
        return cls(**dict(flat))

    def apply(self, x):
        return x * self.scale + self.bias


@torch.library.register_fake("pt2f_tb::scaler_apply")
def _(obj, x):
    return torch.empty_like(x)


def make_scaler(scale: float, bias: int):
    return torch.classes.pt2f_tb.Scaler(scale, bias)
