"""A first output without waiting for code generation: `ep.module()` of a loaded program runs the graph directly.

torch's `ExportedProgram.module()` generates and compiles the Python code of
the graph four times (every GraphModule it builds on the way, then the
final one after the guard call is inserted): 3.5 s for 20,000 nodes, before
the first output. Inside `deferred_codegen()`, a GraphModule (of this
thread only) that would compile does not: until its code exists, a call runs
its nodes one by one (`_Runner`: the calls the generated code would make,
in its order, with the same arguments, so outputs are bit-identical), and
after the first call a background thread generates and compiles the code,
which then replaces the runner. Anything that reads the code (`.code`,
`print`, pickling) compiles it at once, and so does dynamo when it traces
the module (torch.compile, strict export): it traces torch's generated code.

Inside the same block, `Graph.create_node` skips its pytree walk over the
arguments when a plain walk of ours shows they cannot hold the raw
SymInt/SymFloat/SymBool it warns about (`_create_node`): `module()`
copies the whole graph (`copy.deepcopy(ep.graph)`), and that walk was two
thirds of the copy. Anything else, or a graph with creation hooks, goes
through torch's `create_node` unchanged.

Nothing is generated that torch would not generate: the code is torch's own
`recompile()` of the same graph, only later. Graphs whose calling
convention the runner does not reproduce exactly (a codegen other than
torch's pytree one or the plain one, placeholders with defaults or `*args`,
an argument named `self`) compile at once, as before, and so do graphs that
call subgraphs (`_has_subgraphs`). Once compiled, the module's class is
torch's again (`_torch_recompile_now`).
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import weakref

import torch.fx
import torch.fx._pytree as fx_pytree
import torch.utils._pytree as pytree
from torch.fx.graph import CodeGen, _PyTreeCodeGen
from torch.fx._lazy_graph_module import _LazyGraphModule
from torch.fx.graph_module import GraphModule

from pt2format._nogc import no_gc

from ._background import start as start_thread
from ._fx_nodes import TORCH_CREATE_NODE, node_without_walk

_local = threading.local()
_install_lock = threading.Lock()
_torch_recompile = None
_CODE_ATTRS = frozenset({"_code", "_lineno_map", "_prologue_start"})


@contextlib.contextmanager
def deferred_codegen():
    """GraphModules built by this thread inside the block compile on first need, not at once."""
    _install()
    prior = getattr(_local, "active", False)
    _local.active = True
    try:
        yield
    finally:
        _local.active = prior


def _install() -> None:
    global _torch_recompile
    with _install_lock:
        if _torch_recompile is None:
            _torch_recompile = GraphModule.recompile
            GraphModule.recompile = _recompile
            torch.fx.Graph.create_node = _create_node


_CALLS = frozenset({"call_function", "call_method", "call_module"})
# Leaves that are not pytree containers and not symbolic: create_node's walk passes over them silently.
_PLAIN_LEAVES = frozenset({torch.fx.Node, int, float, bool, str, type(None), torch.dtype, torch.device,
                           torch.layout, torch.memory_format})


def _plain(a) -> bool:
    """Whether `a` is made of lists, tuples and dicts of plain leaves only (no symbolic value can hide in it).

    Containers of any subclass are searched (more than pytree flattens), and
    any leaf of another type makes this False: False only sends the node
    through torch's own create_node.
    """
    t = type(a)
    if t in _PLAIN_LEAVES:
        return True
    if isinstance(a, (tuple, list)):
        return all(map(_plain, a))
    if isinstance(a, dict):
        return all(map(_plain, a.values()))
    return False


def _create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
    """Graph.create_node; inside deferred_codegen(), without the pytree walk where `_plain` shows it finds nothing."""
    if (getattr(_local, "active", False) and op in _CALLS and (args or kwargs) and type(args) is tuple
            and (kwargs is None or isinstance(kwargs, dict))
            and not getattr(self.owning_module, "_create_node_hooks", None)  # hooks see the node with its arguments
            and _plain(args) and (not kwargs or _plain(kwargs))):
        return node_without_walk(self, op, target, args, kwargs, name, type_expr)
    return TORCH_CREATE_NODE(self, op, target, args, kwargs, name, type_expr)


def _recompile(self):
    """GraphModule.recompile, deferred inside deferred_codegen() when the runner can stand in for the code."""
    if getattr(_local, "active", False) and _can_defer(self):
        _defer(self)
        return None
    st = _STATE.get(self)
    if st is None:  # never deferred: torch's recompile, untouched
        return _torch_recompile(self)
    with st.lock:
        st.pending = False
        return _torch_recompile_now(self)


class _State:
    """A deferred module's state, kept outside its __dict__ (which deepcopy and pickling copy)."""

    def __init__(self):
        self.lock = threading.RLock()
        self.pending = True
        self.runner = None
        self.started = False


#: GraphModule -> _State, for the modules whose code generation is deferred.
_STATE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_STATE_LOCK = threading.Lock()


def pending(gm) -> bool:
    """Whether `gm`'s code is still to be generated (its calls run the graph node by node)."""
    st = _STATE.get(gm)
    return st is not None and st.pending


def background_compile(gm, enabled: bool) -> None:
    """Turn off (or back on) the background compile after the first call: calls keep running node by node."""
    st = _STATE.get(gm)
    if st is not None:
        st.started = not enabled


def _params(gm) -> list[str] | None:
    """The generated forward's parameter names (after self), or None if the runner cannot bind like it."""
    g = gm._graph
    cg = g._codegen
    if type(cg) is _PyTreeCodeGen and cg.pytree_info is not None:
        names = list(cg.pytree_info.orig_args)
    elif type(cg) is CodeGen:
        names = []
        for n in g.find_nodes(op="placeholder"):
            if n.args or str(n.target).startswith("*"):
                return None
            names.append(n.target)
    else:
        return None
    if names[:1] == ["self"] or any(not isinstance(n, str) or not n.isidentifier() for n in names):
        return None
    return names


def defer(gm) -> bool:
    """Defer `gm`'s code generation now (a module built elsewhere, such as load_module's); False if it cannot be."""
    _install()
    if type(gm).__qualname__.split(".")[-1] != "GraphModuleImpl" or _params(gm) is None or _has_subgraphs(gm):
        return False
    _defer(gm)
    return True


def _can_defer(gm) -> bool:
    # Every GraphModule instance has a class of its own (GraphModule.__new__): the runner is installed there.
    return (type(gm).__qualname__.split(".")[-1] == "GraphModuleImpl" and not isinstance(gm, _LazyGraphModule)
            and _params(gm) is not None and not _has_subgraphs(gm))


def _has_subgraphs(gm) -> bool:
    """Whether `gm` calls graphs of its own (the branches and bodies of cond, while_loop, map, ...).

    Such a module compiles at once, as torch's: when dynamo first meets it
    with its code still to be generated, a fullgraph torch.compile of it
    works on the first call but fails on the next input (torch 2.13: the
    generated forward then runs outside dynamo, which traces the control-flow
    operator's own `__call__` and cannot).
    """
    return any(isinstance(m, GraphModule) for m in gm._modules.values())


def _defer(gm) -> None:
    cls = type(gm)
    names = _params(gm)
    cg = gm._graph._codegen
    if isinstance(cg, _PyTreeCodeGen):  # what torch's recompile sets before generating code
        gm._in_spec = cg.pytree_info.in_spec
        gm._out_spec = cg.pytree_info.out_spec
    with _STATE_LOCK:
        _STATE[gm] = _State()

    def forward(self, *args, **kwargs):
        if torch.compiler.is_compiling():  # dynamo (torch.compile, strict export) traces the generated code
            _compiled_for_tracing(self)
            return type(self).forward(self, *args, **kwargs)
        return _run(self, args, kwargs)

    forward.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    forward.__name__ = "forward"
    cls.forward = forward
    cls.__getattr__ = _getattr


def _compiled_for_tracing(gm) -> bool:
    """Run eagerly while dynamo traces (it takes the result as a constant): the code then exists to be traced."""
    compile_now(gm)
    return True


# What torch._dynamo.assume_constant_result sets, without importing torch._dynamo (seconds, cold).
_compiled_for_tracing._dynamo_marked_constant = True


def _getattr(self, name):
    """The code attributes torch's recompile would have set: generated when first read."""
    if name in _CODE_ATTRS and pending(self):
        compile_now(self)
        return self.__dict__[name]
    return torch.nn.Module.__getattr__(self, name)


def compile_now(gm) -> None:
    """Generate and compile `gm`'s code now (no-op if it has been)."""
    st = _STATE.get(gm)
    if st is None:
        return
    with st.lock:
        if st.pending:
            _torch_recompile_now(gm)
            st.pending = False


def _torch_recompile_now(gm):
    """torch's recompile, then the class as torch's: its forward (set by recompile) and no `__getattr__` of ours.

    A `__getattr__` left on the class makes dynamo compile it as a frame of
    its own on every attribute read of a traced module, and a fullgraph
    torch.compile of a graph with a control-flow operator then fails on its
    first retrace.
    """
    code = _torch_recompile(gm)
    cls = type(gm)
    if cls.__dict__.get("__getattr__") is _getattr:
        del cls.__getattr__
    return code


def _compile_in_background(gm) -> None:
    try:
        compile_now(gm)
    except Exception:  # noqa: BLE001 - the runner keeps serving; a later read of .code raises it again
        pass


def _run(gm, args, kwargs):
    st = _STATE.get(gm)
    if st is None or not st.pending:  # compiled meanwhile (by another thread or a read of .code)
        return type(gm).forward(gm, *args, **kwargs)
    runner = st.runner
    if runner is None:
        with st.lock:
            runner = st.runner
            if runner is None:
                with no_gc(lasting=True):  # tens of thousands of small objects, none of them garbage
                    runner = st.runner = _Runner(gm)
    out = runner(gm, args, kwargs)
    if not st.started:
        st.started = True
        start_thread(_compile_in_background, (gm,), "pt2format-codegen")
    return out


def _loader(a, slot):
    """A function env -> the value of argument `a` as the generated code would build it."""
    if isinstance(a, torch.fx.Node):
        i = slot[a]
        return lambda env: env[i]
    if type(a) is tuple or type(a) is list or isinstance(a, torch.fx.immutable_collections.immutable_list):
        parts = [_loader(x, slot) for x in a]
        if type(a) is tuple and all(getattr(p, "constant", False) for p in parts):
            return _constant(tuple(p.value for p in parts))
        make = tuple if type(a) is tuple else list
        return lambda env: make([p(env) for p in parts])
    if isinstance(a, tuple) and hasattr(a, "_fields"):  # a named tuple
        parts = [_loader(x, slot) for x in a]
        t = type(a)
        return lambda env: t(*[p(env) for p in parts])
    if isinstance(a, dict):
        items = [(k, _loader(v, slot)) for k, v in a.items()]
        return lambda env: {k: p(env) for k, p in items}
    if isinstance(a, slice):
        s = [_loader(x, slot) for x in (a.start, a.stop, a.step)]
        return lambda env: slice(s[0](env), s[1](env), s[2](env))
    return _constant(a)


_SCALARS = (int, float, bool, str, type(None), torch.dtype, torch.device, torch.layout, torch.memory_format)


def _flat(args, slot):
    """(template, ((position, slot), ...)) when `args` holds only values and immutable scalars, else None."""
    template, pos = [], []
    for p, a in enumerate(args):
        if isinstance(a, torch.fx.Node):
            template.append(None)
            pos.append((p, slot[a]))
        elif type(a) in _SCALARS:
            template.append(a)
        else:
            return None
    return tuple(template), tuple(pos)


def _constant(value):
    def load(env):
        return value

    load.constant, load.value = True, value
    return load


def _fetch(root, target: str):
    obj = root
    for item in target.split("."):
        obj = getattr(obj, item)
    return obj


class _Runner:
    """The graph's nodes as a list of steps over a flat list of values, freed after their last use."""

    def __init__(self, gm):
        graph = gm._graph
        nodes = list(graph.nodes)
        slot = {n: i for i, n in enumerate(nodes)}
        last = {}
        for n in nodes:
            for u in n._input_nodes:
                last[u] = n
        frees = {}
        for u, n in last.items():
            frees.setdefault(n, []).append(slot[u])
        for n in nodes:  # a value nobody uses is dropped at once, as in the generated code
            if not n.users and n.op != "output":
                frees.setdefault(n, []).append(slot[n])
        self.size = len(nodes)
        self.placeholders = [slot[n] for n in nodes if n.op == "placeholder"]
        self.names = _params(gm)
        cg = graph._codegen
        self.pytree = isinstance(cg, _PyTreeCodeGen)
        if self.pytree:
            spec = cg.pytree_info.in_spec
            self.kw_split = None
            if (spec.type is tuple and spec.num_children == 2 and spec.child(0).type is tuple
                    and spec.child(1).type is dict):
                self.kw_split = (spec.child(0).num_children, list(spec.child(1).context))
        steps = []
        self.output = None
        for n in nodes:
            i = slot[n]
            free = tuple(frees.get(n, ()))
            if n.op == "placeholder":
                continue
            if n.op == "output":
                self.output = _loader(n.args[0], slot)
                break
            flat = _flat(n.args, slot)
            args = _loader(tuple(n.args), slot) if flat is None else None
            kwargs = _loader(dict(n.kwargs), slot) if n.kwargs else None
            steps.append((n.op, n.target, flat, args, kwargs, i, free))
        self.steps = steps

    def _bind(self, args, kwargs, in_spec):
        names = self.names
        if kwargs or len(args) != len(names):
            bound = inspect.Signature(
                [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]).bind(*args, **kwargs)
            args = tuple(bound.arguments[n] for n in names)
        if not self.pytree:
            return list(args)
        if self.kw_split is None:
            return fx_pytree.tree_flatten_spec(list(args), in_spec)
        k, keys = self.kw_split
        return fx_pytree.tree_flatten_spec((list(args[:k]), dict(zip(keys, args[k:]))), in_spec)

    def __call__(self, gm, args, kwargs):
        flat = self._bind(args, kwargs, gm._in_spec if self.pytree else None)
        env = [None] * self.size
        if len(flat) != len(self.placeholders):
            raise TypeError(f"forward() takes {len(self.placeholders)} flat inputs, got {len(flat)}")
        for i, v in zip(self.placeholders, flat):
            env[i] = v
        for op, target, flat, a, k, i, free in self.steps:
            if flat is not None:
                a = list(flat[0])
                for p, j in flat[1]:
                    a[p] = env[j]
            else:
                a = a(env)
            k = k(env) if k is not None else {}
            if op == "call_function":
                env[i] = target(*a, **k)
            elif op == "get_attr":
                env[i] = _fetch(gm, target)
            elif op == "call_module":
                env[i] = _fetch(gm, target)(*a, **k)
            elif op == "call_method":
                env[i] = getattr(a[0], target)(*a[1:], **k)
            else:
                raise RuntimeError(f"unknown node op {op!r}")
            for j in free:
                env[j] = None
        out = self.output(env) if self.output is not None else None
        if self.pytree and gm._out_spec is not None:
            return pytree.tree_unflatten(out, gm._out_spec)
        return out


__all__ = ["background_compile", "compile_now", "defer", "deferred_codegen", "pending"]
