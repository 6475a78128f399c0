"""Benchmark: LaTeX -> MathML conversion (KaTeX workers) and MathML -> graph featurization.

Formulas are harvested from the ``.. math::`` blocks of installed packages' docstrings (real math written by
people, read from the source files, nothing downloaded or committed). Run from the repository root:

    .venv/bin/python benchmarks/convert_featurize.py [--repeats 5] [--packages sympy numpy ...] [--failures N]

Prints a Markdown report (figures, machine, conversion success rate and failure reasons) to stdout.
"""

from __future__ import annotations

import argparse
import ast
import os
import platform
import re
import statistics
import sys
import sysconfig
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

DEFAULT_PACKAGES = ("sympy", "numpy", "scipy", "networkx", "mpmath", "torch", "torch_geometric")
_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<inline>.*)$")


def harvest_math_blocks(package_dirs: list[Path]) -> list[str]:
    """Display formulas from ``.. math::`` directives in the .py files under the given folders (deduplicated)."""
    seen: dict[str, None] = {}
    for folder in package_dirs:
        for path in sorted(folder.rglob("*.py")):
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            if ".. math::" not in text:
                continue
            try:  # the string values as Python reads them (escapes and line continuations resolved)
                tree = ast.parse(text)
            except (SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and ".. math::" in node.value:
                    for formula in _blocks(node.value.splitlines()):
                        seen.setdefault(formula, None)
    return list(seen)


def _blocks(lines: list[str]) -> Iterator[str]:
    i = 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        i += 1
        if not match:
            continue
        indent = len(match["indent"].expandtabs())
        body: list[str] = [match["inline"].strip()] if match["inline"].strip() else []
        while i < len(lines):
            line = lines[i]
            stripped = line.strip()
            if stripped and len(line.expandtabs()) - len(line.expandtabs().lstrip()) <= indent:
                break
            if not (stripped.startswith(":") and not body):  # directive options such as :nowrap:
                body.append(stripped)
            i += 1
        # Sphinx renders the paragraphs of one block (separated by blank lines) as separate equations.
        for paragraph in re.split(r"\n\s*\n", "\n".join(body)):
            if paragraph.strip():
                yield paragraph.strip()


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _node_version() -> str:
    import subprocess

    try:
        return subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def _median_rate(count: int, run, repeats: int) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    return count / median, median


_NODE_LOOP = r"""
const katex = require("katex");
const texts = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const repeats = Number(process.argv[2]);
const options = { output: "mathml", displayMode: true, throwOnError: true, strict: "ignore" };
const rates = [];
for (let r = 0; r <= repeats; r++) {
  const start = process.hrtime.bigint();
  for (const t of texts) { try { katex.renderToString(t, Object.assign({}, options, { macros: {} })); } catch (e) {} }
  if (r > 0) rates.push(texts.length / (Number(process.hrtime.bigint() - start) / 1e9));
}
rates.sort((a, b) => a - b);
console.log(rates[Math.floor(rates.length / 2)]);
"""


def _node_baseline(pairs: list[tuple[str, str]], repeats: int) -> float:
    """Formulas/s of KaTeX rendering the same pre-processed texts in a plain loop inside one Node process."""
    import json
    import subprocess
    import tempfile

    from eqsearch.engine.latex.install import DEFAULT_KATEX_DIR
    from eqsearch.engine.latex.preprocess import preprocess_latex

    texts = [preprocess_latex(body, env) for body, env in pairs]
    with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8") as handle:
        json.dump(texts, handle)
        handle.flush()
        completed = subprocess.run(
            ["node", "-e", _NODE_LOOP, handle.name, str(repeats)],
            cwd=DEFAULT_KATEX_DIR,
            capture_output=True,
            text=True,
            check=True,
        )
    return float(completed.stdout.strip())


def main(argv: list[str] | None = None) -> int:
    from eqsearch.engine.latex.converter import KatexConfig, KatexConverter
    from eqsearch.engine.model.featurize import featurize_many, featurize_mathml
    from eqsearch.engine.model.vocabulary import build_vocabulary

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="*", default=list(DEFAULT_PACKAGES))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--failures", type=int, default=15, help="failed formulas to list")
    args = parser.parse_args(argv)

    site = Path(sysconfig.get_paths()["purelib"])
    dirs = [site / name for name in args.packages if (site / name).is_dir()]
    formulas = harvest_math_blocks(dirs)
    print(f"harvested {len(formulas)} distinct formulas from {', '.join(d.name for d in dirs)}", file=sys.stderr)
    pairs = [(f, "math") for f in formulas]

    lines = ["# Benchmark: conversion and featurization", ""]
    lines += [
        f"- machine: {_cpu_model()}, {os.cpu_count()} CPUs visible, Python {platform.python_version()}, "
        f"Node {_node_version()}, {platform.system()}; load average {os.getloadavg()[0]:.1f} when the run started "
        "(a SHARED machine: other engineers' jobs run alongside, so figures are indicative)",
        f"- formulas: {len(formulas)} distinct `.. math::` blocks from the docstrings of "
        f"{', '.join(d.name for d in dirs)} (installed in the venv)",
        f"- medians over {args.repeats} repeats, after one warm-up pass",
        "",
        "| stage | formulas/s | median batch time |",
        "|---|---|---|",
    ]

    results = None
    for workers in (1, 2):
        with KatexConverter(KatexConfig(workers=workers)) as converter:
            results = converter.convert_many(pairs)  # warm-up (starts workers, JIT)
            rate, median = _median_rate(len(pairs), lambda c=converter: c.convert_many(pairs), args.repeats)
        lines.append(f"| convert, {workers} worker{'s' if workers > 1 else ''} | {rate:,.0f} | {median:.2f} s |")

    baseline = _node_baseline(pairs, args.repeats)
    lines.append(f"| reference: KaTeX alone in a Node loop (no pipes, no Python) | {baseline:,.0f} | |")
    assert results is not None
    mathml = [r.mathml for r in results if r.mathml is not None]
    vocab = build_vocabulary(mathml)
    featurize_many(mathml, vocab)
    rate, median = _median_rate(len(mathml), lambda: featurize_many(mathml, vocab), args.repeats)
    lines.append(f"| featurize_many (one batch) | {rate:,.0f} | {median:.2f} s |")
    rate, median = _median_rate(len(mathml), lambda: [featurize_mathml(m, vocab) for m in mathml], args.repeats)
    lines.append(f"| featurize_mathml (one call each) | {rate:,.0f} | {median:.2f} s |")
    rate, median = _median_rate(len(mathml), lambda: build_vocabulary(mathml), args.repeats)
    lines.append(f"| build_vocabulary | {rate:,.0f} | {median:.2f} s |")
    graphs = featurize_many(mathml, vocab)
    lines.append("")
    lines.append(
        f"Graphs: {graphs.num_nodes:,} nodes for {graphs.num_graphs:,} equations "
        f"({graphs.num_nodes / max(graphs.num_graphs, 1):.1f} nodes per equation)."
    )

    status = Counter(r.status for r in results)
    reasons = Counter(r.reason for r in results if r.status == "failed")
    total = len(results)
    lines += [
        "",
        "## Conversion outcome on this set",
        "",
        f"- ok: {status['ok']} ({status['ok'] / total:.1%}), approximate (unknown macro rendered as text): "
        f"{status['approximate']} ({status['approximate'] / total:.1%}), failed: {status['failed']} "
        f"({status['failed'] / total:.1%})",
        "- failures by reason: " + (", ".join(f"`{k}` {v}" for k, v in reasons.most_common()) or "none"),
        "",
        "Sample failures:",
        "",
    ]
    shown = 0
    for formula, result in zip(formulas, results, strict=True):
        if result.status == "failed" and shown < args.failures:
            snippet = " ".join(formula.split())[:90].replace("|", "\\|")
            lines.append(f"- `{result.reason}`: `{snippet}` -- {(result.message or '')[:120]}")
            shown += 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
