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


def _as(ep, name, method):
    """`ep` as an instance of a subclass of its class whose `name` is `method`: the fakes change what a
    method gives without an instance attribute standing for it, as a third-party loader's subclass would."""
    ep.__class__ = type(f"Fake{type(ep).__name__}", (type(ep),), {name: method})
    return ep


def _on_module(ep, install):
    """Make ep.module() return its usual module with `install(module)` applied."""
    original = type(ep).module

    def module(self, *args, **kwargs):
        m = original(self, *args, **kwargs)
        install(m)
        return m

    return _as(ep, "module", module)


def _on_decomposed(ep, edit):
    """Make ep.run_decompositions() return its usual program passed through `edit` (which returns it)."""
    original = type(ep).run_decompositions

    def run_decompositions(self, *args, **kwargs):
        return edit(original(self, *args, **kwargs))

    return _as(ep, "run_decompositions", run_decompositions)


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
        def bump_first(d):
            for name, t in d.state_dict.items():
                if t.is_floating_point() and t.numel() and t.layout == torch.strided:
                    bumped = torch.nextafter(t.detach(), torch.full_like(t.detach(), float("inf")))
                    d.state_dict[name] = torch.nn.Parameter(bumped, t.requires_grad) \
                        if isinstance(t, torch.nn.Parameter) else bumped
                    break
            return d
        return _on_decomposed(_loaded(path, program), bump_first)


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


# --------------------------------------------------------------------------- the third audit's defects (issue 42)
#
# Each passed every check before issue 42; each is caught now by the check named in its
# docstring (tests/conformance/test_conformance_fakes.py).

def _same_layout_copy(t: torch.Tensor) -> torch.Tensor:
    """A copy of `t` in a storage of its own with the same strides, storage offset and requires_grad."""
    if not isinstance(t, torch.Tensor) or t.layout != torch.strided or t.device.type == "meta":
        return t
    storage = t.untyped_storage().clone()
    out = torch.empty(0, dtype=t.dtype).set_(storage, t.storage_offset(), t.shape, t.stride())
    if t.is_conj():  # the stored bits are unconjugated: keep the lazy bits as they were
        out = out.conj()
    if t.is_neg():
        out = torch._neg_view(out)
    return out.requires_grad_(t.requires_grad) if t.requires_grad and t.is_floating_point() else out


class AliasCopyLoader:
    """Outputs (views of inputs, buffers, each other) come back as copies with the same values,
    strides and storage offsets. Caught by `outputs` (aliasing)."""

    multi_program = True

    def load(self, path, program=None):
        return _on_module(_loaded(path, program), _map_outputs(_same_layout_copy))


class _NoGuards(torch.nn.Module):
    def forward(self, *args, **kwargs):
        return None


def _without_guards(m):
    for key, hook in list(m._forward_pre_hooks.items()):
        if "constraints" in getattr(hook, "__name__", ""):
            del m._forward_pre_hooks[key]
    if "_guards_fn" in m._modules:
        m._modules["_guards_fn"] = _NoGuards()
    return m


class DecompNoGuardsLoader:
    """run_decompositions() returns a program whose module() checks no input (the loaded
    program itself keeps its guards). Caught by `decomp` (invalid inputs)."""

    multi_program = True

    def load(self, path, program=None):
        return _on_decomposed(_loaded(path, program), lambda d: _on_module(d, _without_guards))


class DecompNoMetaLoader:
    """run_decompositions() returns a program whose nodes lost their stack traces and module
    stacks (graph and results unchanged). Caught by `decomp` (node metadata)."""

    multi_program = True

    def load(self, path, program=None):
        def strip(d):
            for n in d.graph.nodes:
                n.meta.pop("stack_trace", None)
                n.meta.pop("nn_module_stack", None)
            return d
        return _on_decomposed(_loaded(path, program), strip)


class RegradLoader:
    """Outputs cut from the autograd graph, then made to require grad again (the flag is
    right, no gradient reaches a parameter). Caught by `outputs` (gradients)."""

    multi_program = True

    def load(self, path, program=None):
        return _on_module(_loaded(path, program),
                          _map_outputs(lambda t: t.detach().requires_grad_(t.requires_grad)))


class ResolvedBitsLoader:
    """Outputs with the conjugate or negative bit set come back resolved (same values, bit
    cleared). Caught by `outputs` (layouts: is_conj / is_neg)."""

    multi_program = True

    def load(self, path, program=None):
        return _on_module(_loaded(path, program), _map_outputs(lambda t: t.resolve_conj().resolve_neg()))


class ReversedModuleStackLoader:
    """Every node's nn_module_stack in reverse order (same entries). Caught by `meta`."""

    multi_program = True

    def load(self, path, program=None):
        ep = _loaded(path, program)
        for n in ep.graph.nodes:
            stack = n.meta.get("nn_module_stack")
            if stack and len(stack) > 1:
                n.meta["nn_module_stack"] = dict(reversed(list(stack.items())))
        return ep


class CopiedStateLoader:
    """Each program of a file gets its own copy of every state tensor (shared weights and
    caches no longer shared between programs). Caught by `programs`."""

    multi_program = True

    def load(self, path, program=None):
        ep = _loaded(path, program)
        copies = {}  # one copy per storage: sharing within the program stays as it was
        with torch.no_grad():
            for t in list(ep.state_dict.values()) + [v for v in ep.constants.values() if isinstance(v, torch.Tensor)]:
                if t.layout == torch.strided and t.device.type != "meta" and t.untyped_storage().nbytes():
                    st = t.untyped_storage()
                    copy = copies.setdefault(st.data_ptr(), st.clone())
                    t.data = torch.empty(0, dtype=t.dtype).set_(copy, t.storage_offset(), t.shape, t.stride())
        return ep


class Label10Writer:
    """Writes pt2format's file but labels it format 1.0 whatever it uses (a 1.1 file labelled
    1.0). Caught by `dump` (compared with pt2format's own file of the same program)."""

    label = "label10"
    multi_program = True

    def save(self, obj, path) -> None:
        import pt2format
        from pt2format import _content_minor
        from pt2format._generated import model as m

        original = _content_minor.label

        def label_10(package):
            package.format_version = m.FormatVersion(1, 0)

        _content_minor.label = label_10
        try:
            pt2format.save(obj, path, fsync=False, progress=False)
        finally:
            _content_minor.label = original


class DropOptionWriter:
    """Declares `extra_files` and `metadata` but drops one of them. Caught by `options`."""

    multi_program = True
    save_options = ("extra_files", "metadata")

    def __init__(self, drop: str):
        self.drop = drop
        self.label = f"drop_{drop}"

    def save(self, obj, path, **options) -> None:
        import pt2format

        options.pop(self.drop, None)
        pt2format.save(obj, path, fsync=False, progress=False, **options)


class IgnoreOptionLoader:
    """Declares `map_location` and `weights` but ignores one of them (the state stays on the
    CPU with its data). Caught by `options`."""

    multi_program = True
    load_options = ("map_location", "weights", "extra_files", "metadata")

    def __init__(self, ignore: str):
        self.ignore = ignore

    def load(self, path, program=None, **options):
        from conformance.adapters import trusted_subclasses
        import pt2format

        options.pop(self.ignore, None)
        return pt2format.load(path, program=program, allow_subclasses=trusted_subclasses(), **options)


alias_copy_loader = AliasCopyLoader()
decomp_no_guards_loader = DecompNoGuardsLoader()
decomp_no_meta_loader = DecompNoMetaLoader()
regrad_loader = RegradLoader()
resolved_bits_loader = ResolvedBitsLoader()
reversed_module_stack_loader = ReversedModuleStackLoader()
copied_state_loader = CopiedStateLoader()
label10_writer = Label10Writer()
drop_extra_files_writer = DropOptionWriter("extra_files")
drop_metadata_writer = DropOptionWriter("metadata")
ignore_map_location_loader = IgnoreOptionLoader("map_location")
ignore_weights_loader = IgnoreOptionLoader("weights")


class ThirdPartyWriter:
    """A correct writer that is not pt2format's own adapter (the positive control of the comparison with
    pt2format's own file): pt2format.save with the options it declares."""

    label = "thirdok"
    multi_program = True
    save_options = ("extra_files", "metadata")

    def save(self, obj, path, **options) -> None:
        import pt2format

        pt2format.save(obj, path, fsync=False, progress=False, **options)


third_party_writer = ThirdPartyWriter()
