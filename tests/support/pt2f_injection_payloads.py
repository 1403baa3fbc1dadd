"""The injection test's hostile strings: break-outs, dunders, keywords, reserved names, odd Unicode, long text.

Each code payload creates a marker file if it runs; `CONTEXTS` says where it
is meant to break out, and `run_in_context` pastes it there, so a test can
check that every payload really runs when pasted naively (a payload that can
never run would make "no marker" prove nothing).
"""

from __future__ import annotations


def string_payloads(marker: str) -> dict:
    """name -> payload. Each code payload, if executed anywhere, creates `marker`."""
    code = f"__import__('os').system('touch {marker}')"
    expr = f"open({marker!r},'w')"
    code_dq = code.replace("'", '"')  # survives a generator that escapes single quotes only
    p = {
        "code": code,
        "code-open": expr,
        "sq-break": f"x', {code}, '",
        "sq-expr": f"x' + str({code}) + '",
        "sq-or": f"x') or {code} or ('",
        "sq-stmt": f"x'; {code}; '",
        "dq-break": f'x", {code}, "',
        "dq-expr": f'x" + str({code}) + "',
        "dq-or": f'x") or {code} or ("',
        "tsq-break": f"x''' + str({code}) + '''",
        "tdq-break": f'x""" + str({code}) + """',
        "newline": f"x\n{code}\n",
        "newline-indent": f"x\n    {code}\n    ",
        "newline-sq": f"x'\n{code}\n'",
        "cr": f"x\r{code}\r",
        "crlf": f"x\r\n{code}\r\n",
        "line-sep": f"x\u2028{code}\u2028",
        "form-feed": f"x\x0c\n{code}\n",
        # Quote-style flips: repr() of a string with only single quotes uses double
        # quotes (and vice versa), so a template that pastes repr(key) inside a
        # "..." literal (torch/export/_unlift.py's guard messages) is broken out of.
        "repr-dq-concat": f" + str({code}) + ",
        "repr-sq-concat": f' + str({code_dq}) + ',
        "hash-comment": f"{code} #",
        "hash-newline": f"x # c\n{code}\n",
        "backslash-end": "x\\",
        "backslash-sq": f"x\\'); {code_dq}; #",
        "backslash-dq": f'x\\"); {code}; #',
        "backslash-newline": f"x\\\n{code}",
        "fstring": "{" + code + "}",
        "fstring-mid": "x{" + code + "}y",
        "format-attr": "{0.__class__.__init__.__globals__}",
        "percent": "%s%d%n",
        "paren-call": f"x({code})",
        "lambda": f"(lambda: {code})()",
        "attr-chain": "torch.os.system",
        "builtin-eval": "builtins.eval",
        "builtin-exec": "__builtins__.exec",
        "guard-break": f"s0) or {code} or (s0",
        "sym-like": f"Symbol('s0') + str({code})",
        "dunder-class": "__class__",
        "dunder-init": "__init__",
        "dunder-globals": "__globals__",
        "dunder-builtins": "__builtins__",
        "dunder-import": "__import__",
        "dunder-dict": "__dict__",
        "dunder-call": "__call__",
        "dunder-code": "__code__",
        "kw-def": "def", "kw-import": "import", "kw-lambda": "lambda", "kw-None": "None", "kw-True": "True",
        "kw-return": "return", "kw-class": "class", "kw-async": "async",
        "nn-forward": "forward", "nn-training": "training", "nn-modules": "_modules", "nn-self": "self",
        "nn-code": "code", "nn-graph": "graph", "nn-parameters": "_parameters", "nn-buffers": "_buffers",
        "nn-meta": "meta", "nn-register-buffer": "register_buffer", "nn-call-impl": "_call_impl",
        "nn-getattr": "__getattr__", "nn-state-dict": "state_dict",
        "dotted-forward": "a.forward", "dotted-dunder": "a.__class__.b",
        "long-100k": "a" * 100_000,
        "long-1m": "q" * 1_000_000,
        "empty": "",
        "space": " ",
        "tab": "x\ty",
        "nul": "x\x00y",
        "control": "x\x01\x1b[2J\x7f",
        "lone-surrogate": "x\ud800y",
        "lone-low-surrogate": "\udc00",
        "non-ascii": "caf\u00e9_\u540d\u524d",
        "rtl-override": "x\u202e)(dlrow",
        "zero-width": "a\u200bb",
        "nfkc-forward": "\uff46orward",
        "nfkc-self": "\uff53elf",
        "path-parent": "../../../../etc/passwd",
        "path-abs": "/etc/passwd",
        "path-dotdot": "..",
        "path-dot": ".",
        "leading-digit": "0abc",
        "dash": "a-b",
    }
    return p


#: Where each code payload is meant to break out: a line of generated Python
#: with `{p}` where the payload lands. `test_payloads_run_in_their_context`
#: executes each one and requires the marker, so a payload that cannot run
#: (and would make "no marker" meaningless) fails the suite. Payloads aimed at
#: other readers or at names (dunders, keywords, U+2028, ...) have no entry.
CONTEXTS = {
    "code": "{p}", "code-open": "{p}", "hash-comment": "{p}", "paren-call": "{p}", "lambda": "{p}",
    "sq-break": "f('{p}')", "sq-expr": "y = '{p}'", "sq-or": "f('{p}')", "sq-stmt": "y = '{p}'",
    "dq-break": 'f("{p}")', "dq-expr": 'y = "{p}"', "dq-or": 'f("{p}")',
    "tsq-break": "y = '''{p}'''", "tdq-break": 'y = """{p}"""',
    "newline": "y = 1  # {p}", "newline-indent": "def g():\n    y = 1  # {p}\ng()", "newline-sq": "y = '{p}'",
    "cr": "y = 1  # {p}", "crlf": "y = 1  # {p}", "form-feed": "y = 1  # {p}", "hash-newline": "y = 1  # {p}",
    "backslash-sq": "f('{q}')", "backslash-dq": 'f("{qq}")',
    "fstring": 'y = f"{p}"', "fstring-mid": 'y = f"{p}"',
    "guard-break": "y = (s0 > {p})", "sym-like": "y = {p}",
    "repr-dq-concat": 'f("Guard failed: cfg[{r}][0].size()[0] == 3")',
    "repr-sq-concat": "f('Guard failed: cfg[{r}][0].size()[0] == 3')",
}


def run_in_context(name: str, payload: str) -> None:
    """Execute `payload` the way a careless code generator would paste it (CONTEXTS[name]).

    `{q}`/`{qq}` escape only the quote (not backslashes), as naive escaping does;
    `{r}` is the payload's repr(), pasted inside a literal of a fixed quote style.
    """
    src = (CONTEXTS[name].replace("{r}", repr(payload)).replace("{q}", payload.replace("'", "\\'"))
           .replace("{qq}", payload.replace('"', '\\"')).replace("{p}", payload))
    exec(compile(src, "<generated>", "exec"), {"f": lambda *a: None, "x": lambda *a: None, "s0": 1, "Symbol": str})


#: A representative subset (one per family) for quick runs and CI.
CORE_PAYLOADS = ("code", "sq-break", "sq-or", "dq-break", "repr-dq-concat", "repr-sq-concat", "tsq-break",
                 "newline", "hash-newline", "backslash-sq", "fstring", "dunder-class", "kw-def", "nn-self",
                 "nn-forward", "nn-modules", "long-100k", "nul", "lone-surrogate", "nfkc-forward", "path-parent",
                 "empty", "attr-chain")


