"""`load_module(f, device_mesh=..., placements=...)`: an exported program that runs sharded over a DeviceMesh.

Every rank builds the module's graph from the file with meta-device state
(no weight byte is read), makes an empty `DTensor` per state entry under the
user's placement plan (first matching name pattern; `Replicate()` for the
rest), and fills them with `torch.distributed.checkpoint.load` through
`pt2format.dcp.StorageReader`: DCP plans each rank's slices and the reader
copies only those bytes out of the mapped file. The graph then runs on
DTensors: torch's sharding propagation inserts the collectives, so outputs
equal the single-process program's within float tolerance, whatever the plan.

Failures are the same typed error on every rank and no rank waits for
another forever: the steps before DCP (building the graph, checking the plan)
end with an exchange of outcomes, and DCP gathers the errors of its own steps
(`CheckpointException`), of which the first rank's is re-raised.
"""

from __future__ import annotations

import fnmatch

import torch
import torch.distributed as dist
import torch.fx
import torch.utils._pytree as pytree

from pt2format.errors import LoadError


def compile_plan(placements, mesh) -> list:
    """[(pattern, placements tuple)] from a dict pattern -> Placement or sequence of Placements (one per mesh dim)."""
    from torch.distributed.tensor import Placement

    if placements is None:
        placements = {}
    if not isinstance(placements, dict):
        raise TypeError("placements must be a dict: name pattern (fnmatch, e.g. '*.q_proj.weight') -> "
                        f"Placement or a sequence of Placements, one per mesh dimension; got {type(placements).__name__}")
    plan = []
    for pattern, value in placements.items():
        value = (value,) if isinstance(value, Placement) else tuple(value)
        if not isinstance(pattern, str) or len(value) != mesh.ndim or not all(isinstance(p, Placement) for p in value):
            raise TypeError(f"placements[{pattern!r}]: expected {mesh.ndim} Placement(s) (Shard(d), Replicate()) for "
                            f"a mesh of {mesh.ndim} dimension(s), got {value!r}")
        plan.append((pattern, value))
    return plan


def placement_for(name: str, plan, mesh) -> tuple:
    from torch.distributed.tensor import Replicate

    for pattern, value in plan:
        if fnmatch.fnmatchcase(name, pattern):
            return value
    return (Replicate(),) * mesh.ndim


def check_divides(name: str, shape, placements, mesh, path: str) -> None:
    """Refuse a Shard(d) whose dimension the mesh does not divide (every rank computes the same answer)."""
    from torch.distributed.tensor import Shard

    for mesh_dim, p in enumerate(placements):
        if not isinstance(p, Shard):
            continue
        n = mesh.size(mesh_dim)
        if p.dim >= len(shape) or p.dim < -len(shape):
            raise LoadError(f"Shard({p.dim}) of a tensor with {len(shape)} dimension(s)", file=path, path=repr(name),
                            expected=f"a dimension < {len(shape)}", got=p.dim)
        size = shape[p.dim]
        if size % n:
            raise LoadError(f"Shard({p.dim}) over {n} ranks of mesh dimension {mesh_dim} does not divide "
                            f"dimension {p.dim} of size {size}", file=path, path=repr(name),
                            expected=f"a size divisible by {n}", got=size)


def agree(fn, group=None):
    """Run `fn()` on every rank; if it raised on any rank, raise on every rank (the first failing rank's error)."""
    try:
        result, error = fn(), None
    except Exception as e:  # noqa: BLE001 - every error is sent to the other ranks, then re-raised
        result, error = None, e
    outcomes = [None] * dist.get_world_size(group)
    dist.all_gather_object(outcomes, None if error is None else _portable(error), group=group)
    if error is not None:
        raise error
    for other in outcomes:
        if other is not None:
            raise other
    return result


def _portable(error: Exception) -> Exception:
    """The error, or a LoadError with its text when it cannot cross a process boundary."""
    import pickle

    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:  # noqa: BLE001
        return LoadError(f"{type(error).__name__} on another rank: {error}")


def first_failure(exc):
    """The exception of the lowest failing rank inside DCP's CheckpointException."""
    failures = getattr(exc, "failures", None) or {}
    for rank in sorted(failures):
        err = failures[rank]
        return err[0] if isinstance(err, tuple) else err
    return exc


_RULES_REGISTERED = False


def register_rules() -> None:
    """Sharding rules DTensor lacks (or finds only by slow decomposition) for ops torch.export leaves in graphs.

    * `aten._assert_tensor_metadata` checks dtype, device and layout, which a
      shard shares with its whole tensor: it runs on each shard as placed.
      When it also checks sizes or strides (the whole tensor's), the tensor
      is replicated first so the check sees what it was written for.
    * attention (`aten._scaled_dot_product_flash_attention_for_cpu`, what
      `scaled_dot_product_attention` becomes on CPU) is independent per head: with
      query, key and value split on the head dimension (what a Shard(0)
      q/k/v projection gives) it runs on each rank's heads; otherwise on
      replicated inputs. Without this rule DTensor derives one through the
      op's decomposition, which takes minutes per call.
    """
    global _RULES_REGISTERED
    if _RULES_REGISTERED:
        return
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.experimental import register_sharding

    @register_sharding(torch.ops.aten._assert_tensor_metadata.default)
    def _assert_tensor_metadata(a, size=None, stride=None, dtype=None, *, device=None, layout=None):
        if size is not None or stride is not None:
            return [([], [Replicate()])]
        return [([], [p]) for p in (Replicate(), *(Shard(d) for d in range(a.ndim)))]

    @register_sharding(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default)
    def _sdpa_cpu(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
        def rule(head: bool):
            p = Shard(1) if head else Replicate()
            mask = [] if attn_mask is None else [Shard(1) if head and attn_mask.shape[1] > 1 else Replicate()]
            return [p, p], [p, p, p, None, None, *mask]  # (output, logsumexp), (q, k, v, dropout_p, is_causal, mask)
        return [rule(False), rule(True)]

    _RULES_REGISTERED = True


class ShardedModule(torch.nn.Module):
    """The unlifted module of a program whose state is `DTensor`s; takes and returns plain (replicated) tensors.

    `module` is the graph module (its parameters and buffers are DTensors);
    outputs that come out sharded are gathered to full tensors.
    """

    def __init__(self, module: torch.nn.Module, device_mesh):
        super().__init__()
        self.module = module
        self.device_mesh = device_mesh
        self.pt2format_fallback = getattr(module, "pt2format_fallback", None)

    def forward(self, *args, **kwargs):
        from torch.distributed.tensor import DTensor
        from torch.distributed.tensor.experimental import implicit_replication

        with implicit_replication():
            out = self.module(*args, **kwargs)
        return pytree.tree_map(lambda x: x.full_tensor() if isinstance(x, DTensor) else x, out)


def load_sharded_module(path, *, device_mesh, placements, program, verify_data: bool, mmap: bool,
                        allow_subclasses, meta_module) -> ShardedModule:
    """See `pt2format.load_module`'s `device_mesh` and `placements`.

    `meta_module()` gives the program's module with meta-device state (load_module's, passed in by it, so
    this module does not import _module.py, which imports this one).
    """
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.api import CheckpointException

    from pt2format.dcp import StorageReader

    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("load_module(device_mesh=...) needs an initialised process group (torch.distributed)")
    label = path if isinstance(path, str) else getattr(path, "name", "<file>")
    reader = StorageReader(path, program=program, verify_data=verify_data, mmap=mmap)

    def skeleton():
        plan = compile_plan(placements, device_mesh)
        module = meta_module()
        meta = reader.read_metadata().state_dict_metadata
        state = {}
        for name, md in sorted(meta.items()):
            if not _has_attr(module, name):
                continue
            where = placement_for(name, plan, device_mesh)
            check_divides(name, tuple(md.size), where, device_mesh, label)
            state[name] = _empty_dtensor(md, device_mesh, where)
        return module, state

    register_rules()
    module, state = agree(skeleton)
    try:
        dcp.load(state, storage_reader=reader)
    except CheckpointException as e:
        raise first_failure(e) from None
    finally:
        reader.close()
    for name, value in state.items():
        _install(module, name, value)
    _views_to_reshapes(module)
    return ShardedModule(module, device_mesh)


def contiguous_reshape(x, shape):
    """`reshape` of a contiguous copy: valid whatever strides DTensor gave the local shard."""
    return torch.ops.aten.reshape.default(torch.ops.aten.clone.default(x, memory_format=torch.contiguous_format),
                                          shape)


def _views_to_reshapes(module: torch.nn.Module) -> None:
    """`aten.view` / `aten.reshape` -> `contiguous_reshape` in the graph (and its subgraphs).

    A traced `view` or `reshape` was valid for the strides eager execution
    produced. The local shards of a DTensor have the strides DTensor's
    redistributions give them, and DTensor runs a reshape as a `view` of
    each shard, which may not exist there. A contiguous copy first gives the
    same values. Exported graphs are functional (mutations are `copy_` into
    inputs and buffers themselves), so no aliasing is lost.
    """
    targets = (torch.ops.aten.view.default, torch.ops.aten.reshape.default)
    for gm in module.modules():
        graph = getattr(gm, "graph", None)
        if not isinstance(graph, torch.fx.Graph):
            continue
        changed = False
        for node in graph.nodes:
            if node.op == "call_function" and node.target in targets:
                node.target = contiguous_reshape
                changed = True
        if changed:
            gm.recompile()


def _empty_dtensor(md, mesh, placements):
    from torch.distributed.tensor import empty as dtensor_empty

    return dtensor_empty(tuple(md.size), dtype=md.properties.dtype, device_mesh=mesh, placements=placements)


def _owner(module: torch.nn.Module, name: str):
    *parents, leaf = name.split(".")
    owner = module
    for part in parents:
        owner = getattr(owner, part, None)
        if owner is None:
            return None, leaf
    return owner, leaf


def _has_attr(module, name) -> bool:
    owner, leaf = _owner(module, name)
    return owner is not None and hasattr(owner, leaf)


def _install(module: torch.nn.Module, name: str, value) -> None:
    """Put `value` where the meta tensor `name` was: a parameter stays a parameter, a buffer a buffer."""
    owner, leaf = _owner(module, name)
    if leaf in getattr(owner, "_parameters", {}):
        old = owner._parameters[leaf]
        owner._parameters[leaf] = torch.nn.Parameter(value, requires_grad=old.requires_grad)
    elif leaf in getattr(owner, "_buffers", {}):
        owner._buffers[leaf] = value
    else:
        setattr(owner, leaf, value)
