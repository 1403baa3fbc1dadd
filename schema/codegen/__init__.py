"""The code generator of pt2format: one package, one table of targets (targets.py), one set of constants.

Modules: bfbs (flatc's binary schema), constants (base types, struct formats,
integer ranges), schema_view (field kinds and string classes), the emitters
(py_model, fb_reader, fb_writer, msgpack_codec, json_codec, strings, native,
minors) and templates/ (the fixed code the emitters fill in). The runtime
helpers the generated Python modules share are hand-written, in
pt2format/_codecs/_runtime.py, not emitted into each module.
"""
