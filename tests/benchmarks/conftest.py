"""The benchmark scripts' packages (``benchmarks/corpus_growth``) are imported as the scripts import them: from the
``benchmarks`` folder on the path."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))
