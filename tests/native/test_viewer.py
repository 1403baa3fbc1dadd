"""`pt2format view` and the browser viewer (loaders/ts/viewer), tested as a person uses them.

Headless Chromium (the system's, through playwright-core) opens pages that
`pt2format view` wrote for corpus programs, then the test reads what the page
rendered through its `window.pt2fViewer` hook and compares it with torch's own
graphs: node counts per module box against `nn_module_stack`, subgraph boxes
against the higher-order op's submodules, search hits against node names and
targets, the side panel against the node's arguments and shapes, weight
statistics against the state dict, symbol ranges against `range_constraints`.
Screenshots of every page are saved next to it (tmp_path).
"""

from __future__ import annotations

import base64
import json
import operator
import re
import subprocess
import sys
import time
import urllib.request

import pytest

import native_util_ts as U
import viewer_driver as D
import viewer_programs as P

pytestmark = [pytest.mark.native, pytest.mark.xdist_group("ts_reader")]


@pytest.fixture(scope="module")
def built():
    why = U.missing_toolchain()
    if why:
        pytest.skip(why)
    U.build()  # scripts/build_ts.sh builds the reader, then the viewer
    assert D.PAGE.is_file()
    return D.PAGE


@pytest.fixture(scope="module")
def chromium(built):
    return D.chromium_or_skip()


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """Corpus programs saved once per module: name -> (path, {program name: ExportedProgram})."""
    out = tmp_path_factory.mktemp("viewer_programs")
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = P.save_case(name, out)
        return cache[name]

    return get


# Netron 9.3's text sizes at its default zoom (grapher.css: `.node-item text` 11px, `.edge-label` 10px):
# the opening view must be at least as legible (issue 25).
NETRON_NODE_PX = 11
NETRON_EDGE_PX = 10


def op_nodes(graph):
    """torch's operator nodes: call_function minus the getitem nodes pt2format folds into their producer."""
    return [n for n in graph.nodes if n.op == "call_function" and n.target is not operator.getitem]


def all_op_nodes(gm):
    """Operator nodes of a graph module and, recursively, of its subgraph modules."""
    import torch

    out = list(op_nodes(gm.graph))
    for _, child in gm.named_children():
        if isinstance(child, torch.fx.GraphModule):
            out += all_op_nodes(child)
    return out


def torch_module_counts(ep) -> dict:
    counts = {}
    for n in op_nodes(ep.graph):
        for path, _type in (n.meta.get("nn_module_stack") or {}).values():
            if path:
                counts[path] = counts.get(path, 0) + 1
    return counts


def shot(tmp_path, name):
    return {"do": "shot", "path": str(tmp_path / f"{name}.png")}


def test_viewer_typechecks(built):
    """esbuild bundles without checking types; tsc checks the viewer (and the reader sources it imports)."""
    r = subprocess.run(["node", str(U.TS_DIR / "node_modules" / "typescript" / "bin" / "tsc"), "-p", "tsconfig.json"],
                       cwd=D.VIEWER, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


# ---------------------------------------------------------------------------
# The command line (no browser)
# ---------------------------------------------------------------------------

def _embedded(html: str) -> tuple[bytes, str]:
    m = re.search(r'<script id="pt2f-data" type="application/octet-stream" data-name="[^"]*" '
                  r'data-weights="(\w+)">([A-Za-z0-9+/=]*)</script>', html)
    assert m, "no embedded program"
    return base64.b64decode(m.group(2)), m.group(1)


def test_view_page_is_self_contained_and_leaves_weights_out(built, programs, tmp_path):
    from pt2format._container.header import unpack_header

    path, _ = programs("cond")
    html = D.view(path, tmp_path / "cond.html").read_text(encoding="utf-8")
    # No external scripts, styles or images; the page's CSP forbids network access outright
    # (test_cond_shows_both_branches checks that Chromium requests nothing but the page and the worker).
    assert not re.search(r'<(script|link|img)[^>]+(src|href)=', html)
    assert "default-src 'none'" in html
    data, weights = _embedded(html)
    original = path.read_bytes()
    h_orig, h_emb = unpack_header(original), unpack_header(data)
    assert weights == "omitted" and len(h_emb.sections) == 1 and len(h_orig.sections) == 2
    p0, q0 = h_orig.sections[0], h_emb.sections[0]
    assert data[q0.offset:q0.end] == original[p0.offset:p0.end]  # the program is embedded byte for byte

    data, weights = _embedded(D.view(path, tmp_path / "w.html", "--with-weights").read_text(encoding="utf-8"))
    assert weights == "embedded" and data == original
    data_len = h_orig.sections[1].length
    _, weights = _embedded(D.view(path, tmp_path / "s.html", "--max-weight-bytes", str(data_len)).read_text(encoding="utf-8"))
    assert weights == "embedded"
    _, weights = _embedded(D.view(path, tmp_path / "t.html", "--max-weight-bytes", str(data_len - 1)).read_text(encoding="utf-8"))
    assert weights == "omitted"


def test_view_reencodes_msgpack_program_for_the_browser(built, programs, tmp_path):
    from pt2format._api import convert
    from pt2format._dump import dump

    path, _ = programs("cond")
    mp = tmp_path / "cond.msgpack.pt2f"
    convert(path, mp, "msgpack", fsync=False)
    data, weights = _embedded(D.view(mp, tmp_path / "mp.html", "--with-weights").read_text(encoding="utf-8"))
    fb = tmp_path / "embedded.pt2f"
    fb.write_bytes(data)
    assert weights == "embedded"
    assert dump(str(fb)) == dump(str(path))  # same package, now FlatBuffers


def test_view_serve_binds_localhost_and_stops_by_itself(built, programs, tmp_path):
    path, _ = programs("cond")
    expected = D.view(path, tmp_path / "cond.html").read_bytes()
    proc = subprocess.Popen([sys.executable, "-m", "pt2format", "view", str(path), "--serve", "--no-browser",
                             "--serve-seconds", "8"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=U.ROOT)
    try:
        line = proc.stdout.readline()
        m = re.search(r"serving (http://127\.0\.0\.1:(\d+)/)", line)
        assert m, line + proc.stderr.read()
        with urllib.request.urlopen(m.group(1), timeout=30) as r:
            assert r.read() == expected
        t0 = time.monotonic()
        assert proc.wait(timeout=60) == 0  # --serve-seconds: stops on its own
        assert time.monotonic() - t0 < 60
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_view_without_built_page_says_how_to_build(programs, tmp_path):
    path, _ = programs("cond")
    r = subprocess.run([sys.executable, "-m", "pt2format", "view", str(path), "-o", str(tmp_path / "x.html")],
                       capture_output=True, text=True, cwd=U.ROOT,
                       env={**__import__("os").environ, "PT2FORMAT_VIEWER_HTML": str(tmp_path / "missing.html")})
    assert r.returncode == 2 and "scripts/build_ts.sh" in r.stderr


# ---------------------------------------------------------------------------
# In the browser
# ---------------------------------------------------------------------------

def test_gpt2_module_boxes_expand_search_and_panel(chromium, programs, tmp_path):
    path, progs = programs("gpt2_tiny")
    ep = progs["forward"]
    page = D.view(path, tmp_path / "gpt2.html")
    torch_ops = op_nodes(ep.graph)
    addmm = [n for n in torch_ops if "addmm" in str(n.target)]
    sample = addmm[0]
    out = D.drive(chromium, page, [
        {"do": "state"}, {"do": "groups"}, shot(tmp_path, "gpt2_collapsed"),
        {"do": "click", "id": "root/m:transformer.h.0"}, {"do": "state"}, shot(tmp_path, "gpt2_h0"),
        {"do": "search", "query": "addmm"},
        {"do": "select", "name": sample.name},
    ])
    first, groups, _, clicked, expanded, _, hits, panel = out["results"]
    assert first["error"] is None
    assert first["nodeCount"] == len(torch_ops)
    # Every module box holds exactly the nodes torch traced inside that module.
    counts = torch_module_counts(ep)
    modules = {g["path"]: g for g in groups if g["kind"] == "module"}
    assert set(modules) == set(counts)
    for p, g in modules.items():
        assert g["size"] == counts[p], p
    # Collapsed by default past a size: the blocks start closed, and nothing shown is lost.
    boxes = {b["path"]: b for b in first["boxes"] if b["kind"] == "module"}
    assert boxes["transformer.h.0"]["expanded"] is False and boxes["transformer.h.0"]["drawn"] == 0
    assert first["drawnNodes"] + sum(b["size"] for b in first["boxes"] if not b["expanded"]) == len(torch_ops)
    # A click on the block box opens it: its sub-modules become boxes, its own nodes are drawn.
    assert clicked is True
    boxes = {b["path"]: b for b in expanded["boxes"] if b["kind"] == "module"}
    assert boxes["transformer.h.0"]["expanded"] is True
    children = {p for p in counts if p.startswith("transformer.h.0.") and p.count(".") == 3}
    assert children and children <= set(boxes)
    innermost = [([p for p, _ in (n.meta.get("nn_module_stack") or {}).values() if p] or [None])[-1] for n in torch_ops]
    direct = [n for n, p in zip(torch_ops, innermost) if p == "transformer.h.0"]
    assert boxes["transformer.h.0"]["drawn"] == len(direct)
    # Search by op.
    assert sorted(hits) == sorted(n.name for n in torch_ops if "addmm" in n.name or "addmm" in str(n.target))
    # The side panel: target, argument names, output shape, and the stack trace torch recorded.
    assert panel.splitlines()[0] == sample.name
    assert f"torch.ops.{sample.target}" in panel
    for a in sample.args:
        if hasattr(a, "name"):
            assert a.name in panel
    shape = ", ".join(str(d) for d in sample.meta["val"].shape)
    assert f"[{shape}]" in panel
    assert sample.meta["stack_trace"].strip().splitlines()[-1].strip() in panel


def test_cond_shows_both_branches(chromium, programs, tmp_path):
    path, progs = programs("cond")
    gm = progs["forward"].graph_module
    page = D.view(path, tmp_path / "cond.html")
    out = D.drive(chromium, page, [{"do": "state"}, shot(tmp_path, "cond")])
    state = out["results"][0]
    assert all(u.startswith(("file:", "blob:", "data:")) for u in out["requests"]), out["requests"]
    branches = {b["path"]: b for b in state["boxes"] if b["kind"] == "branch"}
    cond_node = next(n for n in gm.graph.nodes if n.op == "call_function" and "cond" in str(n.target))
    names = [a.target for a in cond_node.args if getattr(a, "op", None) == "get_attr"]
    assert sorted(branches) == sorted(names) and len(names) == 2
    for name in names:
        sub = getattr(gm, name)
        assert branches[name]["expanded"] is True
        assert branches[name]["drawn"] == branches[name]["size"] == len(op_nodes(sub.graph)), name
    assert state["nodeCount"] == len(all_op_nodes(gm))


def test_while_loop_body_collapses_and_expands(chromium, programs, tmp_path):
    path, progs = programs("while_loop")
    gm = progs["forward"].graph_module
    page = D.view(path, tmp_path / "while.html")
    hop = "g0:while_loop/hop"
    out = D.drive(chromium, page, [{"do": "collapse", "id": hop}, {"do": "state"},
                                   {"do": "expand", "id": hop}, {"do": "state"}, shot(tmp_path, "while")])
    closed, opened = out["results"][1], out["results"][3]
    box = next(b for b in closed["boxes"] if b["id"] == hop)
    assert box["expanded"] is False and box["drawn"] == 0
    subs = {b["path"]: b for b in opened["boxes"] if b["kind"] == "branch"}
    for name, child in gm.named_children():
        assert subs[name]["size"] == len(op_nodes(child.graph)), name
    assert opened["drawnNodes"] > closed["drawnNodes"]


def test_multi_program_switcher(chromium, programs, tmp_path):
    path, progs = programs("multi_program")
    page = D.view(path, tmp_path / "multi.html")
    names = sorted(progs)
    steps = [{"do": "state"}]
    for i in range(len(names)):
        steps += [{"do": "program", "index": i}, {"do": "state"}]
    out = D.drive(chromium, page, steps + [shot(tmp_path, "multi")])
    assert out["results"][0]["programs"] == names
    for i, name in enumerate(names):
        st = out["results"][2 + 2 * i]
        assert st["program"] == name
        assert st["nodeCount"] == len(all_op_nodes(progs[name].graph_module)), name


def test_dynamic_shapes_symbols_ranges_and_edge_labels(chromium, programs, tmp_path):
    path, progs = programs("dynamic_batch")
    ep = progs["forward"]
    page = D.view(path, tmp_path / "dyn.html")
    out = D.drive(chromium, page, [{"do": "info"}, {"do": "state"}, shot(tmp_path, "dynamic")])
    state = out["results"][1]
    assert ep.range_constraints
    info_rows = state["info"].splitlines()
    for sym, vr in ep.range_constraints.items():
        upper = "oo" if not vr.upper.is_finite else str(vr.upper)
        assert any(str(sym) in r and f"[{vr.lower}, {upper}]" in r for r in info_rows), (sym, vr, info_rows)
    user_in = next(n for n in ep.graph.nodes if n.op == "placeholder" and n.name in ep.graph_signature.user_inputs)
    dims = ", ".join(str(d) for d in user_in.meta["val"].shape)
    assert any(label.endswith(f"[{dims}]") for label in state["edgeLabels"]), (dims, state["edgeLabels"])
    assert any(str(sym) in label for sym in ep.range_constraints for label in state["edgeLabels"])


def test_weights_summary_matches_state_dict(chromium, programs, tmp_path):
    import torch

    path, progs = programs("cond")
    ep = progs["forward"]
    page = D.view(path, tmp_path / "cond_w.html", "--with-weights")
    spec = next(s for s in ep.graph_signature.input_specs if s.kind.name == "PARAMETER" and s.target.endswith("weight"))
    out = D.drive(chromium, page, [{"do": "select", "name": spec.arg.name}, shot(tmp_path, "weights")])
    panel = out["results"][0]
    t = ep.state_dict[spec.target].detach().to(torch.float64)
    m = re.search(r"min (\S+) · max (\S+) · mean (\S+)", panel)
    assert m, panel
    got = [float(x) for x in m.groups()]
    want = [t.min().item(), t.max().item(), t.mean().item()]
    assert got == pytest.approx(want, rel=1e-4, abs=1e-6)
    assert f"[{', '.join(map(str, t.shape))}]" in panel
    # Without weights, the panel says why there are no values instead of failing.
    page = D.view(path, tmp_path / "cond_nw.html")
    panel = D.drive(chromium, page, [{"do": "select", "name": spec.arg.name}])["results"][0]
    assert "values not available" in panel


def test_damaged_file_is_refused_by_view_and_shown_as_the_readers_typed_error(chromium, built, programs, tmp_path):
    """`pt2format view` refuses a damaged file with the Python reader's typed error and writes no page; the
    same file dropped on the static page shows the TypeScript reader's typed error, not a blank screen."""
    import pt2format
    from pt2format.errors import Pt2FormatError

    path, _ = programs("cond")
    buf = bytearray(path.read_bytes())
    prog = U.section_table(bytes(buf))[0]
    buf[prog[3] + prog[4] // 2] ^= 0xFF  # one flipped byte inside PROGRAM: its CRC-32 no longer matches
    bad = tmp_path / "damaged.pt2f"
    bad.write_bytes(bytes(buf))
    with pytest.raises(Pt2FormatError) as want:
        pt2format.read(bad)
    r = subprocess.run([sys.executable, "-m", "pt2format", "view", str(bad), "-o", str(tmp_path / "damaged.html")],
                       capture_output=True, text=True, cwd=U.ROOT, timeout=300)
    assert r.returncode == 1 and not (tmp_path / "damaged.html").exists()
    assert r.stderr.strip() == f"pt2format view: {type(want.value).__name__}: {want.value}"
    cli = U.node(U.CLI, "verify", bad)
    assert cli.returncode == 1
    kind = re.search(rb"(\w+Error)", cli.stderr).group(1).decode()
    out = D.drive(chromium, built, [{"do": "upload", "path": str(bad)}, {"do": "state"}, shot(tmp_path, "damaged")])
    state = out["results"][1]
    err = state["error"]
    assert err and err.startswith(f"{kind}:"), (err, kind)
    assert "damaged.pt2f" in err
    assert state["status"].startswith("error:")


def test_one_shot_headless_screenshot_shows_the_drawn_graph(chromium, programs, tmp_path):
    """`chromium --headless --screenshot --virtual-time-budget=...` (one shot, no driver): the page has drawn
    the graph before it says "ready" (the virtual clock does not wait for a layout worker)."""
    path, progs = programs("gpt2_tiny")
    page = D.view(path, tmp_path / "gpt2.html")
    interactive = D.drive(chromium, page, [{"do": "state"}])["results"][0]
    assert interactive["drawnOnScreen"] > 0
    args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1400,900",
            "--virtual-time-budget=15000"]
    dom = subprocess.run([*args, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=300).stdout
    status = re.search(r'<footer id="status">([^<]*)</footer>', dom).group(1)
    drawn = re.search(r'<canvas [^>]*data-drawn="(\d+)"', dom)
    assert status.startswith("ready") and drawn, (status, dom[:300])
    assert int(drawn.group(1)) > 0  # boxes painted in view (the one-shot window's size differs from the driver's)
    png = tmp_path / "one-shot.png"
    subprocess.run([*args, f"--screenshot={png}", page.as_uri()], capture_output=True, timeout=300)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_legible_opening_view_chunks_in_graph_order_and_filled_call_graph(chromium, programs, tmp_path):
    """Node text and edge labels at least as large as Netron's at the opening zoom; every chunk box holds a run of torch's nodes with
    no node of another module between them; the module call graph lists, for entries torch recorded no
    signature for, the values crossing the module's boundary in torch's graph."""
    path, progs = programs("gpt2_tiny")
    ep = progs["forward"]
    page = D.view(path, tmp_path / "gpt2.html")
    out = D.drive(chromium, page, [{"do": "state"}, {"do": "groups"}, {"do": "info"}, {"do": "state"}])
    first, groups, _, with_info = out["results"]
    assert first["textPx"] >= NETRON_NODE_PX and first["edgeTextPx"] >= NETRON_EDGE_PX
    assert first["status"].startswith("ready")
    order = {n.name: i for i, n in enumerate(ep.graph.nodes)}
    innermost = {n.name: ([p for p, _ in (n.meta.get("nn_module_stack") or {}).values() if p] or [""])[-1]
                 for n in op_nodes(ep.graph)}
    chunks = [g for g in groups if g["kind"] == "chunk"]
    assert chunks  # GPT-2's attention-mask nodes under `transformer` are more than a box holds: a chunk
    members = D.drive(chromium, page, [{"do": "members", "id": g["id"]} for g in chunks])["results"]
    for g, names in zip(chunks, members):
        ops = [x for x in names if x in innermost]
        homes = {innermost[x] for x in ops}
        assert len(homes) == 1, (g["label"], homes)
        lo, hi = min(order[x] for x in ops), max(order[x] for x in ops)
        between = [n.name for n in op_nodes(ep.graph) if lo < order[n.name] < hi and innermost[n.name] not in homes]
        assert not between, (g["label"], between[:5])
    # Module call graph: entries whose signature lists nothing are filled from the graph.
    rows = {line.split("\t")[0]: line.split("\t") for line in with_info["info"].splitlines() if "\t" in line}
    names = lambda cell: re.findall(r"(?:^|, )([A-Za-z_]\w*): ", cell)  # noqa: E731 - "name: dtype[shape], ..."
    state_names = {s.arg.name for s in ep.graph_signature.input_specs if s.kind.name in ("PARAMETER", "BUFFER",
                                                                                      "CONSTANT_TENSOR")}
    checked = 0
    for e in ep.module_call_graph:
        if e.fqn == "" or (e.signature is not None and (e.signature.inputs or e.signature.outputs)):
            continue
        inside = {n for n in ep.graph.nodes
                  if any(p == e.fqn or p.startswith(e.fqn + ".") for p, _ in (n.meta.get("nn_module_stack") or {}).values())}
        row = rows[e.fqn]
        if not inside:
            assert row[3] == "not in graph", row
            continue
        want_in, want_out = [], []
        for n in ep.graph.nodes:
            for a in n.all_input_nodes:
                if n in inside and a not in inside and a.name not in state_names and a.name not in want_in:
                    want_in.append(a.name)
                if n not in inside and a in inside and a.name not in want_out:
                    want_out.append(a.name)
        assert row[3] == "graph", row
        assert sorted(names(row[1])) == sorted(want_in), (e.fqn, row[1], want_in)
        assert sorted(names(row[2])) == sorted(want_out), (e.fqn, row[2], want_out)
        checked += 1
    assert checked >= len(set(innermost.values()) - {""})
    # The root: torch leaves its signature's lists empty; the row shows the program's user inputs and outputs.
    root = next(e for e in ep.module_call_graph if e.fqn == "")
    assert not root.signature.inputs and rows["(root)"][3] == "graph"
    user_in = [s.arg.name for s in ep.graph_signature.input_specs  # constants (use_cache=False) carry no value
               if s.kind.name == "USER_INPUT" and type(s.arg).__name__ != "ConstantArgument"]
    user_out = [s.arg.name for s in ep.graph_signature.output_specs if s.kind.name in ("USER_OUTPUT", "LOSS_OUTPUT")]
    assert names(rows["(root)"][1]) == user_in and names(rows["(root)"][2]) == user_out, rows["(root)"]


def test_search_closes_after_a_pick_and_panel_values_use_the_panel_width(chromium, programs, tmp_path):
    path, progs = programs("gpt2_tiny")
    ep = progs["forward"]
    want = [n.name for n in op_nodes(ep.graph) if "addmm" in n.name or "addmm" in str(n.target)]
    page = D.view(path, tmp_path / "gpt2.html")
    out = D.drive(chromium, page, [{"do": "search", "query": "addmm"}, {"do": "state"}, {"do": "pick", "index": 0},
                                   {"do": "state"}, shot(tmp_path, "picked")])
    hits, opened, picked, after = out["results"][:4]
    assert sorted(hits) == sorted(want) and opened["searchOpen"] is True
    assert picked is True and after["searchOpen"] is False
    assert after["selected"] is not None and after["panel"].splitlines()[0] == hits[0]
    # Names above values: no value (shape, stack trace) squeezed into a narrow column beside its name.
    assert after["panelValueWidth"] is not None and after["panelValueWidth"] > 0.85


@pytest.mark.parametrize("how", ["upload", "drop"])
def test_static_page_opens_a_file_given_by_the_user(chromium, built, programs, tmp_path, how):
    """dist/viewer.html as built (nothing embedded) reads a file picked with "open…" or dropped on it."""
    path, progs = programs("multi_program")
    out = D.drive(chromium, built, [{"do": "state"}, {"do": how, "path": str(path)}, {"do": "state"}])
    before, _, after = out["results"]
    assert before["program"] is None and before["error"] is None
    assert after["error"] is None and after["programs"] == sorted(progs)
    first = sorted(progs)[0]
    assert after["nodeCount"] == len(all_op_nodes(progs[first].graph_module))


@pytest.mark.parametrize("encoding", ["msgpack", "json"])
def test_static_page_opens_msgpack_and_json_files_directly(chromium, built, programs, tmp_path, encoding):
    """A MessagePack or JSON file picked by the user (no `pt2format view` re-encoding): the reader decodes it
    into its tree and the page shows what it shows for the FlatBuffers file."""
    from pt2format._api import convert

    path, progs = programs("multi_program")
    other = tmp_path / f"multi_program-{encoding}.pt2f"
    convert(path, other, encoding=encoding, fsync=False)
    out = D.drive(chromium, built, [{"do": "upload", "path": str(path)}, {"do": "state"},
                                    {"do": "upload", "path": str(other)}, {"do": "state"}])
    fb, enc = out["results"][1], out["results"][3]
    assert fb["error"] is None and enc["error"] is None, enc["error"]
    assert enc["programs"] == fb["programs"] == sorted(progs)
    assert enc["nodeCount"] == fb["nodeCount"] == len(all_op_nodes(progs[sorted(progs)[0]].graph_module))


def legible(state):
    """Text the page drew at least as large as Netron's (node and box text 11 px, edge labels 10 px; zoomed out,
    the page draws box titles only, and no edge labels), and something drawn."""
    return (state["textPx"] is not None and state["textPx"] >= NETRON_NODE_PX and state["drawnOnScreen"] > 0
            and (state["edgeTextPx"] is None or state["edgeTextPx"] >= NETRON_EDGE_PX))


@pytest.mark.corpus
def test_gpt2_124m_opens_collapsed(chromium, programs, tmp_path):
    """The opening view shows the whole model: the 12 blocks, each titled, in a straight column, and the
    labels the page really drew (its canvas's fillText calls) are 11 px or more, there and after "fit"."""
    path, progs = programs("gpt2_124m")
    ep = progs["forward"]
    page = D.view(path, tmp_path / "gpt2_124m.html")
    out = D.drive(chromium, page, [{"do": "state"}, {"do": "text"}, {"do": "fit"}, {"do": "text"},
                                   {"do": "expand", "id": "root/m:transformer.h.0"}, {"do": "state"},
                                   shot(tmp_path, "gpt2_124m")], text_probe=True)
    first, text, _, fitted, _, opened, _ = out["results"]
    assert first["nodeCount"] == len(op_nodes(ep.graph))
    assert legible(first)
    blocks = [b for b in first["boxes"] if re.fullmatch(r"transformer\.h\.\d+", b["path"])]
    assert len(blocks) == 12 and not any(b["expanded"] for b in blocks)
    for drawn in (text, fitted):
        assert drawn["minPx"] >= NETRON_NODE_PX, drawn["smallest"]
        titled = [t for t in drawn["texts"] if re.fullmatch(r"▸ transformer\.h\.\d+ \(GPT2Block\)", t)]
        assert len(titled) == 12, drawn["texts"]
    xs = {round(b["x"] + b["w"] / 2, 1) for b in first["layoutBoxes"] if re.fullmatch(r"root/m:transformer\.h\.\d+", b["id"])}
    assert len(xs) == 1, xs
    h0 = next(b for b in opened["boxes"] if b["path"] == "transformer.h.0")
    assert h0["expanded"] and h0["size"] == torch_module_counts(ep)["transformer.h.0"]


@pytest.mark.corpus
def test_20000_node_program_opens_collapsed(chromium, tmp_path):
    path, progs = P.save_deep(20000, tmp_path)
    n = len(op_nodes(progs["forward"].graph))
    page = D.view(path, tmp_path / "deep.html")
    out = D.drive(chromium, page, [{"do": "state"}, shot(tmp_path, "deep")], timeout=600)
    state = out["results"][0]
    assert state["nodeCount"] == n
    assert legible(state) and state["boxesTitled"] == state["boxesInView"]
    assert state["leaves"] < 100  # collapsed: a few dozen boxes, not 20,000
    assert state["drawnNodes"] + sum(b["size"] for b in state["boxes"] if not b["expanded"]) == n
