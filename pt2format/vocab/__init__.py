"""pt2format.vocab: the torch-side vocabulary the exporter and the loaders share (imports torch).

What torch calls a thing and what the schema calls it, in both directions:
dtypes, layouts and devices (`enums`), the builtin callables a graph may
call (`operators`), pytree names (`treespec`), derived node metadata
(`metadata`), symbolic operators (`symbols`), composite tensors
(`composite`), user-input paths (`inputs`) and where loaded tensors came
from (`origins`). Both directions import it by these public names, so
neither imports the other's private modules. It is a package of its own,
not part of `pt2format.exporter`, so that loading never imports the
exporter (and sympy with it); `import pt2format` never imports it, and
the torch-free core never does (tests/core/test_import_rules.py).
"""
