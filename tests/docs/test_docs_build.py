"""The documentation site builds with Sphinx, warnings as errors, and its API page documents the public API."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


# Sphinx as `bash scripts/docs.sh` runs it on a fresh clone, whose venv has the [docs] extra and no torch:
# here torch is installed, so every import of it fails on purpose, as it would there.
_WITHOUT_TORCH = """
import importlib.abc, sys
class _NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "torch":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _NoTorch())
from sphinx.cmd.build import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built once for this module's tests, in an interpreter where torch cannot be imported."""
    out = tmp_path_factory.mktemp("docs") / "html"
    proc = subprocess.run([sys.executable, "-c", _WITHOUT_TORCH, "-W", "--keep-going", "-b", "html", "-q",
                           str(REPO / "docs"), str(out)], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr[-5000:]
    return out


@pytest.mark.timeout(600)
def test_docs_build_without_warnings(site):
    out = site
    api = (out / "api.html").read_text(encoding="utf-8")
    import pt2format

    for name in pt2format.__all__:  # every public name has its anchor on the API page
        assert f'id="pt2format.{name}"' in api, name
    assert 'id="pt2format._open.TensorSlice"' in api  # what LazyFile.get_slice returns
    # The DCP classes (their module imports torch, mocked here) show their own options, not a mock's *args.
    for cls, option in (("StorageReader", "verify_data=False"), ("StorageWriter", "fsync=True")):
        at = api.index(f'id="pt2format.dcp.{cls}"')
        signature = re.sub("<[^>]+>", "", api[at:api.index("</dt>", at)])
        assert option in signature and "*args" not in signature, signature
    for page in ("tutorial", "guide", "migration", "versions", "spec", "readers", "security"):
        assert (out / f"{page}.html").is_file(), page
    assert "no safer" in (out / "security.html").read_text(encoding="utf-8")
    index = (out / "index.html").read_text(encoding="utf-8")
    assert f"pt2format {pt2format.__version__}" in index
    assert "writes file format {}.{}".format(*pt2format.FORMAT_VERSION) in index  # the version files carry


def test_screenshot_of_the_api_page_is_committed():
    png = REPO / "docs" / "screenshots" / "api-reference.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# Measured in the page: every code block, table and image of every page stays inside the text column,
# and at 1400 px no code block needs a sideways scroll to show its lines whole.
_MEASURE = """<!doctype html><html><body><pre id="out">pending</pre><script>
const pages = PAGES, width = WIDTH, out = {};
let left = pages.length;
for (const p of pages) {
  const f = document.createElement('iframe');
  f.style.width = width + 'px'; f.style.height = '900px'; f.src = p;
  f.onload = () => {
    const d = f.contentDocument, body = d.querySelector('div.body') || d.body;
    const edge = body.getBoundingClientRect().right + 1, bad = [];
    for (const el of d.querySelectorAll('pre, table, img')) {
      if (el.getBoundingClientRect().right > edge) bad.push('past the column: ' + el.textContent.slice(0, 50));
      else if (el.tagName === 'PRE' && el.scrollWidth > el.clientWidth + 1) bad.push('scrolls: ' + el.textContent.slice(0, 50));
    }
    out[p.split('/').pop()] = bad;
    if (--left === 0) document.getElementById('out').textContent = JSON.stringify(out);
  };
  document.body.appendChild(f);
}
</script></body></html>"""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("width", [1400, 1024])
def test_pages_render_well_at_common_widths(site, tmp_path, width):
    import html
    import json
    import re

    sys.path.insert(0, str(REPO / "tests" / "support"))
    import viewer_driver as D

    chromium = D.chromium_or_skip()
    pages = sorted(site.glob("*.html")) + sorted((site / "viewer").glob("*.html"))
    pages = [p.as_uri() for p in pages if p.name not in ("genindex.html", "search.html", "py-modindex.html")]
    page = tmp_path / "measure.html"
    page.write_text(_MEASURE.replace("PAGES", json.dumps(pages)).replace("WIDTH", str(width)), encoding="utf-8")
    r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
                        f"--window-size={width},900", "--virtual-time-budget=20000", "--dump-dom", page.as_uri()],
                       capture_output=True, text=True, timeout=240)
    m = re.search(r'<pre id="out">(.*?)</pre>', r.stdout, re.S)
    assert m and m.group(1) != "pending", r.stdout[-2000:] + r.stderr[-2000:]
    found = json.loads(html.unescape(m.group(1)))
    assert len(found) == len(pages)
    if width < 1400:  # narrower: a long line may scroll inside its box, nothing may stick out of the column
        found = {k: [b for b in v if not b.startswith("scrolls")] for k, v in found.items()}
    assert not {k: v for k, v in found.items() if v}, found
