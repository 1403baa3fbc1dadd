"""CustomObject rows -> torchbind ScriptObjects, rebuilt through the registered class's own __setstate__.

The class is found in torch's custom-class registry by its qualified name
(`__torch__.torch.classes.<namespace>.<name>`); the state is a plain Value
tree, so nothing is unpickled. A class that is not registered in this process
is a LoadError naming it.
"""

from __future__ import annotations

import torch

from pt2format.errors import LoadError

from ._names import check_dotted_identifiers
from ._values import from_value


def rebuild_custom_object(c, tensor, path: str):
    fqn = c.class_fqn
    parts = check_dotted_identifiers(fqn, f"{path}.class_fqn")
    if len(parts) != 5 or parts[:3] != ["__torch__", "torch", "classes"]:
        raise LoadError("custom object class must be a registered torchbind class", path=f"{path}.class_fqn",
                        expected="__torch__.torch.classes.<namespace>.<name>", got=fqn)
    try:
        torch._C._get_custom_class_python_wrapper(parts[3], parts[4])
    except RuntimeError:
        raise LoadError(f"custom class {fqn} is not registered in this process (load its library first)",
                        path=f"{path}.class_fqn", got=fqn) from None
    if c.state is None:
        raise LoadError("custom object has no state", path=f"{path}.state")
    state = from_value(c.state, tensor=tensor, path=f"{path}.state")
    obj = torch.ScriptObject.__new__(torch.ScriptObject)
    try:
        obj.__setstate__((state, fqn))
    except (RuntimeError, TypeError) as e:
        raise LoadError(f"custom class {fqn} rejected its saved state: {e}", path=f"{path}.state") from None
    return obj
