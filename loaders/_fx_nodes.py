"""FX nodes made without `Graph.create_node`'s pytree walk over their arguments (loader and `module()`'s copy)."""

from __future__ import annotations

import torch.fx

#: torch's own create_node, taken before loaders/_deferred.py installs its wrapper (it imports this module first).
TORCH_CREATE_NODE = torch.fx.Graph.create_node


def node_without_walk(graph, op, target, args, kwargs, name, type_expr=None) -> torch.fx.Node:
    """`graph.create_node(op, target, args, kwargs, name, type_expr)` for arguments without raw symbolic leaves.

    create_node walks every call node's arguments with pytree only to warn
    about raw SymInt/SymFloat/SymBool leaves, a cost paid on every node. The node is
    created without arguments, then given them as `node.args = ...` gives
    them (`_update_args_kwargs`, which Node.__init__ runs itself): the same
    node, name and users. The caller vouches that there is nothing to warn
    about.
    """
    node = TORCH_CREATE_NODE(graph, op, target, (), None, name, type_expr)
    if args or kwargs:
        node._update_args_kwargs(args, kwargs if kwargs is not None else {})
    return node
