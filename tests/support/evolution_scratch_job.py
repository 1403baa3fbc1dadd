"""Child process of evolution_ext.run_scratch: the test-only next minor's package writes and dumps files.

Reads {"jobs": [...], ...} on stdin, writes one result per job as a JSON list
on stdout. Run with PYTHONPATH set to the scratch copy of pt2format (so
`import pt2format` is the next minor's); pt2f_samples (beside this script) builds
the tree with that package's model classes.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    spec = json.load(sys.stdin)
    import pt2format
    from pt2format import _api
    from pt2format._dump import dump
    from pt2format._generated import model as m

    import pt2f_samples

    version = tuple(spec["version"])
    assert pt2format.FORMAT_VERSION == version, f"not the scratch package: {pt2format.__file__}"
    enum_field, enum, union_field, _ = spec["refs"]
    results = []
    for job in spec["jobs"]:
        try:
            if job["op"] == "write":
                pkg = pt2f_samples.tiny_package()
                pkg.format_version = None  # the writer records the smallest minor the tree needs
                if "label" in job:
                    pkg.format_version = m.FormatVersion(*job["label"])
                node = pkg.programs[0].graph.nodes[0]
                variant = job["variant"]
                if variant in ("field", "feature"):
                    pkg.evolution_test_note = spec["note"]
                    node.evolution_test_weight = 2.5
                elif variant == "enum":
                    setattr(node.inputs[0], enum_field, spec["enum_value"])
                elif variant == "union":
                    setattr(node.inputs[1], union_field, getattr(m, spec["new_table"])(note="new"))
                if variant == "feature":  # the bit the next minor allocated (its writer knows it)
                    pkg.required_features |= spec["feature"]
                payloads = pt2f_samples.float_payloads()
                _api.write_package(job["path"], pkg, payloads, encoding=job["encoding"], fsync=False)
                fv = pkg.format_version
                results.append({"ok": True, "label": [fv.major, fv.minor]})
            else:
                results.append({"ok": True, "dump": dump(job["path"])})
        except pt2format.Pt2FormatError as e:
            results.append({"ok": False, "error": type(e).__name__, "message": str(e)})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
