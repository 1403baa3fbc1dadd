"""Deliberately wrong writers for the conformance runner's negative controls (tests/conformance).

They follow the writer interface of conformance/adapters.py and are named on
the runner's target list as `conformance_fakes:NAME`, so they must be
importable by the loader process too (the test puts tests/support on its
PYTHONPATH).
"""

from __future__ import annotations

import torch


class MutatingWriter:
    """Saves correctly, then changes one weight of the program it was given."""

    label = "mutating"
    multi_program = True

    def save(self, obj, path) -> None:
        import pt2format

        pt2format.save(obj, path, fsync=False, progress=False)
        with torch.no_grad():
            next(iter(obj.state_dict.values())).add_(1)


mutating_writer = MutatingWriter()


# --------------------------------------------------------------------------- the second audit's defects (issue 27)
#
# Each loader below loads correctly with pt2format and then breaks one thing the
# first round of checks did not look at. `python -m conformance.runner --loader
# conformance_fakes:NAME` must catch every one of them; so must the machinery tests.

def _loaded(path, program):
    from conformance.adapters import pt2format_loader

    return pt2format_loader.load(path, program=program)


def _on_module(ep, install):
    """Make ep.module() return its usual module with `install(module)` applied."""
    original = ep.module

    def module(*args, **kwargs):
        m = original(*args, **kwargs)
        install(m)
        return m

    ep.module = module
    return ep


def _map_outputs(fn):
    def install(m):
        m.register_forward_hook(lambda mod, args, out: torch.utils._pytree.tree_map_only(torch.Tensor, fn, out))
    return install


class FrozenBuffersLoader:
    """Defect 1: the module drops every update of its buffers (BatchNorm's running statistics)."""

    multi_program = True

    def load(self, path, program=None):
        def install(m):
            saved = {}

            def before(mod, args):
                saved.update({n: b.detach().clone() for n, b in mod.named_buffers()})

            def after(mod, args, out):
                with torch.no_grad():
                    for n, b in mod.named_buffers():
                        b.copy_(saved[n])

            m.register_forward_pre_hook(before)
            m.register_forward_hook(after)

        return _on_module(_loaded(path, program), install)


class ColumnMajorLoader:
    """Defect 2: outputs with two or more dims come back column-major, with the same values."""

    multi_program = True

    def load(self, path, program=None):
        def col(t):
            return t.transpose(-1, -2).contiguous().transpose(-1, -2) if t.dim() >= 2 and t.layout == torch.strided \
                else t

        return _on_module(_loaded(path, program), _map_outputs(col))


class DetachedLoader:
    """Defect 3: outputs come back detached (requires_grad lost)."""

    multi_program = True

    def load(self, path, program=None):
        return _on_module(_loaded(path, program), _map_outputs(lambda t: t.detach()))


class DecompUlpLoader:
    """Defect 4: run_decompositions() returns a program whose first floating-point state
    tensor is one ulp off (a copy: the loaded program itself keeps torch's values)."""

    multi_program = True

    def load(self, path, program=None):
        ep = _loaded(path, program)
        original = ep.run_decompositions

        def run_decompositions(*args, **kwargs):
            d = original(*args, **kwargs)
            for name, t in d.state_dict.items():
                if t.is_floating_point() and t.numel() and t.layout == torch.strided:
                    bumped = torch.nextafter(t.detach(), torch.full_like(t.detach(), float("inf")))
                    d.state_dict[name] = torch.nn.Parameter(bumped, t.requires_grad) \
                        if isinstance(t, torch.nn.Parameter) else bumped
                    break
            return d

        ep.run_decompositions = run_decompositions
        return ep


class NamelessAsDictLoader:
    """Defect 5: a registered container with no field names in its context comes back as a
    dict with keys it never had (k0, k1, ...)."""

    multi_program = True

    def load(self, path, program=None):
        import torch.utils._pytree as pytree

        from conformance._behave import fallback_names
        from conformance._describe import describe_treespec

        plain = (tuple, list, dict)

        def convert(x):
            t = type(x)
            node = pytree.SUPPORTED_NODES.get(t)
            if node is None:
                return x
            children, ctx = node.flatten_fn(x)
            children = [convert(c) for c in children]
            desc = describe_treespec(pytree.tree_structure(x))
            if t in plain or fallback_names(desc) is not None:  # named containers stay as they are
                return node.unflatten_fn(children, ctx)
            return {f"k{i}": c for i, c in enumerate(children)}

        def install(m):
            m.register_forward_hook(lambda mod, args, out: convert(out))

        return _on_module(_loaded(path, program), install)


class NoFileWriter:
    """Defect 6: returns without an error and writes nothing."""

    label = "nofile"

    def save(self, obj, path) -> None:
        return None


frozen_buffers_loader = FrozenBuffersLoader()
column_major_loader = ColumnMajorLoader()
detached_loader = DetachedLoader()
decomp_ulp_loader = DecompUlpLoader()
nameless_as_dict_loader = NamelessAsDictLoader()
no_file_writer = NoFileWriter()
