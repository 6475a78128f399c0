"""TREC-style evaluation of formula retrieval: qrels, run and topic files, and the ARQMath measures.

Files (whitespace-separated, as trec_eval reads them):

- qrels: ``topic iteration docid grade`` per line; the iteration column is ignored; grades are numbers (ARQMath:
  0 = not, 1 = low, 2 = medium, 3 = high relevance).
- run: ``topic Q0 docid rank score tag`` per line. As trec_eval does, the rank column is ignored: a topic's
  results are ordered by descending score, ties broken by descending docid (so a run file and the ranking it was
  written from agree only when their ties are ordered that way; `ordered` does it).
- topics: ARQMath's XML (``<Topic number="B.1">``) or text with the topic id as the first field of each line
  (``#`` comments and blank lines skipped), e.g. the ``topics.tsv`` that `eqsearch evaluate labelled` writes.

Measures follow ARQMath (Zanibbi et al., ARQMath 2020-2022 overviews), which computes them with trec_eval after
removing unjudged results from the runs (the primes):

- a run is cut to its first ``depth`` results (1000, the ARQMath submission limit) BEFORE unjudged results are
  removed;
- nDCG′: graded gain = the qrels grade, log2 discount, ideal ranking from all the topic's judgements;
- MAP′, P′@10 and bpref are binary: relevant = grade ≥ ``threshold`` (2: ARQMath counts medium and high as
  relevant, low and not relevant as not); P′@10 divides by 10 even when fewer judged results remain;
- a topic counts when it has at least one judgement; with a topics file, only its topics are evaluated, and those
  without any judgement are reported and skipped (ARQMath scores only assessed topics). A judged topic missing from
  the run scores 0.

Two runs of the same topics are compared topic by topic (`compare_runs`): each measure's mean difference with a
paired bootstrap interval over the topics, since on ~20 topics a small gain is often the luck of the topics.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from eqsearch.engine.errors import EqsearchError
from eqsearch.evaluation.metrics import bpref, map_prime, ndcg_prime, precision_prime_at

#: ARQMath's binarisation: grades 2 (medium) and 3 (high) are relevant.
ARQMATH_THRESHOLD = 2.0
#: ARQMath's limit on results per topic.
ARQMATH_DEPTH = 1000
MEASURES = ("ndcg_prime", "map_prime", "p_prime_10", "bpref")

Qrels = dict[str, dict[str, float]]


class TrecFormatError(EqsearchError):
    """A qrels, run or topics file that does not follow the TREC layout."""


def _lines(path: Path, kind: str) -> Iterable[tuple[int, list[str]]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise TrecFormatError(f"cannot read the {kind} file {path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise TrecFormatError(f"the {kind} file {path} is not UTF-8 text (byte {error.start})") from None
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            yield number, line.split()


def _number(text: str, path: Path, line: int, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise TrecFormatError(f"{path}:{line}: the {what} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise TrecFormatError(f"{path}:{line}: the {what} {text!r} is not finite")
    return value


def read_qrels(path: str | Path) -> Qrels:
    """Read TREC qrels: ``{topic: {docid: grade}}``.

    Raises:
        TrecFormatError: unreadable file, a line without 4 fields, a grade that is not a number, or a document
            judged twice for one topic with different grades (path and line in the message).
    """
    path = Path(path)
    qrels: Qrels = {}
    for number, parts in _lines(path, "qrels"):
        if len(parts) != 4:
            raise TrecFormatError(
                f"{path}:{number}: a qrels line has 4 fields (topic iteration docid grade), got {len(parts)}: "
                f"{' '.join(parts)[:80]!r}"
            )
        topic, _, doc, grade_text = parts
        grade = _number(grade_text, path, number, "grade")
        judged = qrels.setdefault(topic, {})
        if judged.get(doc, grade) != grade:
            raise TrecFormatError(f"{path}:{number}: {doc} is judged {judged[doc]:g} and {grade:g} for topic {topic}")
        judged[doc] = grade
    return qrels


def ordered(results: Iterable[tuple[str, float]]) -> list[str]:
    """Document ids by descending score, ties by descending docid (trec_eval's order)."""
    return [doc for doc, _ in sorted(results, key=lambda item: (item[1], item[0]), reverse=True)]


def read_run(path: str | Path) -> dict[str, list[str]]:
    """Read a TREC run: ``{topic: [docid, ...]}`` in trec_eval's order (score descending, then docid descending).

    Raises:
        TrecFormatError: unreadable file, a line without 6 fields, a score that is not a number, or a document
            retrieved twice for one topic (trec_eval refuses those too).
    """
    path = Path(path)
    scored: dict[str, dict[str, float]] = {}
    for number, parts in _lines(path, "run"):
        if len(parts) != 6:
            raise TrecFormatError(
                f"{path}:{number}: a run line has 6 fields (topic Q0 docid rank score tag), got {len(parts)}: "
                f"{' '.join(parts)[:80]!r}"
            )
        topic, _, doc, _, score_text, _ = parts
        results = scored.setdefault(topic, {})
        if doc in results:
            raise TrecFormatError(f"{path}:{number}: {doc} is retrieved twice for topic {topic}")
        results[doc] = _number(score_text, path, number, "score")
    return {topic: ordered(results.items()) for topic, results in scored.items()}


_XML_TOPIC = re.compile(r"<Topic\s+number\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)


def read_topics(path: str | Path) -> list[str]:
    """Topic ids of an ARQMath topics XML file or of a text file with the id first on each line, in file order.

    Raises:
        TrecFormatError: unreadable file, no topic in it, or a topic listed twice.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TrecFormatError(f"cannot read the topics file {path}: {error}") from None
    if text.lstrip().startswith("<"):
        ids = _XML_TOPIC.findall(text)
    else:
        ids = [parts[0] for _, parts in _lines(path, "topics")]
    if not ids:
        raise TrecFormatError(
            f"{path} lists no topic",
            hint='give ARQMath topics XML (<Topic number="...">) or one topic id per line (first field)',
        )
    seen: set[str] = set()
    for topic in ids:
        if topic in seen:
            raise TrecFormatError(f"{path}: topic {topic} is listed twice")
        seen.add(topic)
    return ids


def _check_field(value: str, what: str) -> None:
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"a TREC {what} must be non-empty and contain no whitespace, got {value!r}")


def write_qrels(path: str | Path, qrels: Mapping[str, Mapping[str, float]]) -> Path:
    """Write qrels (``topic 0 docid grade``), topics and documents in the given order."""
    lines = []
    for topic, judged in qrels.items():
        _check_field(topic, "topic id")
        for doc, grade in judged.items():
            _check_field(doc, "document id")
            lines.append(f"{topic} 0 {doc} {grade:g}\n")
    Path(path).write_text("".join(lines), encoding="utf-8")
    return Path(path)


def write_run(path: str | Path, run: Mapping[str, Sequence[tuple[str, float]]], tag: str) -> Path:
    """Write a run (``topic Q0 docid rank score tag``); each topic's results in `ordered` order, ranks from 1.

    Scores are written with ``repr`` so that they read back exactly and the order cannot change through rounding.
    """
    _check_field(tag, "run tag")
    lines = []
    for topic, results in run.items():
        _check_field(topic, "topic id")
        scores = dict(results)
        for rank, doc in enumerate(ordered(results), 1):
            _check_field(doc, "document id")
            lines.append(f"{topic} Q0 {doc} {rank} {float(scores[doc])!r} {tag}\n")
    Path(path).write_text("".join(lines), encoding="utf-8")
    return Path(path)


def topic_measures(
    ranking: Sequence[str],
    judgements: Mapping[str, float],
    threshold: float = ARQMATH_THRESHOLD,
    depth: int = ARQMATH_DEPTH,
) -> dict[str, float]:
    """nDCG′, MAP′, P′@10 and bpref of one topic (see the module docstring for the conventions)."""
    cut = list(ranking[:depth])
    return {
        "ndcg_prime": ndcg_prime(cut, judgements, k=depth),
        "map_prime": map_prime(cut, judgements, threshold=threshold, k=depth),
        "p_prime_10": precision_prime_at(cut, judgements, k=10, threshold=threshold),
        "bpref": bpref(cut, judgements, threshold=threshold),
    }


@dataclass(frozen=True)
class TrecReport:
    """Mean ARQMath measures of one run over the judged topics, and what was left out.

    Attributes:
        means: measure -> mean over the evaluated topics (``MEASURES``).
        per_topic: topic -> measure -> value.
        topics: the evaluated topics (judged, and listed in the topics file when one was given).
        unjudged_topics: topics of the topics file without any judgement (skipped).
        missing_topics: evaluated topics the run has no result for (they score 0).
        extra_topics: topics of the run that are not evaluated.
        judged_share: share of the run's results, over the evaluated topics and within ``depth``, that are
            judged (what the primes keep).
        threshold: the grade from which a result is relevant for the binary measures.
        depth: results per topic considered.
    """

    means: dict[str, float]
    per_topic: dict[str, dict[str, float]]
    topics: tuple[str, ...]
    unjudged_topics: tuple[str, ...] = ()
    missing_topics: tuple[str, ...] = ()
    extra_topics: tuple[str, ...] = ()
    judged_share: float = float("nan")
    threshold: float = ARQMATH_THRESHOLD
    depth: int = ARQMATH_DEPTH

    def to_dict(self) -> dict[str, object]:
        from dataclasses import asdict

        return asdict(self)


def evaluate_run(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, float]],
    topics: Sequence[str] | None = None,
    threshold: float = ARQMATH_THRESHOLD,
    depth: int = ARQMATH_DEPTH,
) -> TrecReport:
    """Mean nDCG′, MAP′, P′@10 and bpref of a run over the judged topics (ARQMath conventions, module docstring).

    Args:
        run: topic -> document ids, best first (`read_run`).
        qrels: topic -> document -> grade (`read_qrels`).
        topics: evaluate only these topics (a topics file); None: every topic with judgements.
        threshold: grade from which a result counts as relevant for MAP′, P′@10 and bpref (default 2).
        depth: results per topic considered (default 1000).

    Raises:
        TrecFormatError: no topic to evaluate (none judged, or none of the topics file judged).
    """
    if depth < 1:
        raise ValueError(f"depth must be positive, got {depth}")
    candidates = list(topics) if topics is not None else list(qrels)
    evaluated = tuple(t for t in candidates if qrels.get(t))
    if not evaluated:
        where = "the topics file's topics" if topics is not None else "the qrels"
        raise TrecFormatError(f"no topic to evaluate: none of {where} has a judgement")
    per_topic = {t: topic_measures(run.get(t, []), qrels[t], threshold, depth) for t in evaluated}
    retrieved = [(t, doc) for t in evaluated for doc in list(run.get(t, []))[:depth]]
    judged = sum(1 for t, doc in retrieved if doc in qrels[t])
    chosen = set(evaluated)
    return TrecReport(
        means={m: float(np.mean([per_topic[t][m] for t in evaluated])) for m in MEASURES},
        per_topic=per_topic,
        topics=evaluated,
        unjudged_topics=tuple(t for t in candidates if not qrels.get(t)),
        missing_topics=tuple(t for t in evaluated if not run.get(t)),
        extra_topics=tuple(t for t in run if t not in chosen),
        judged_share=judged / len(retrieved) if retrieved else float("nan"),
        threshold=threshold,
        depth=depth,
    )


@dataclass(frozen=True)
class TopicComparison:
    """One measure of a run against a baseline, topic by topic (paired: both runs scored on the same topics).

    Attributes:
        difference: mean over the topics of (run - baseline).
        low, high: the ``delta/2`` and ``1 - delta/2`` percentiles of that mean over bootstrap resamples of the
            topics (a percentile interval; with ~20 topics it is wide, which is the point).
        better, worse, tied: topics where the run scores above, below or equal to the baseline.
        resamples: the number of bootstrap resamples.
        delta: 1 - the interval's coverage.
    """

    difference: float
    low: float
    high: float
    better: int
    worse: int
    tied: int
    resamples: int
    delta: float

    @property
    def certain(self) -> bool:
        """Whether the interval leaves out zero: the difference holds across resamples of the topics."""
        return self.low > 0 or self.high < 0


def compare_runs(
    baseline: TrecReport, run: TrecReport, *, resamples: int = 10_000, delta: float = 0.05, seed: int = 0
) -> dict[str, TopicComparison]:
    """Each measure of ``run`` against ``baseline``, with a paired bootstrap over the topics: how much a ranking
    change moves the figures, and whether that holds beyond the luck of which topics were judged.

    Raises:
        ValueError: the two reports were not scored on the same topics, or ``resamples``/``delta`` are out of range.
    """
    if baseline.topics != run.topics:
        raise ValueError("the two runs were scored on different topics: compare runs of the same qrels and topics")
    if resamples < 1 or not 0 < delta < 1:
        raise ValueError(f"resamples must be positive and delta in (0, 1), got {resamples} and {delta}")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(run.topics), size=(resamples, len(run.topics)))
    compared = {}
    for measure in MEASURES:
        diffs = np.array([run.per_topic[t][measure] - baseline.per_topic[t][measure] for t in run.topics])
        means = diffs[draws].mean(axis=1)
        compared[measure] = TopicComparison(
            difference=float(diffs.mean()),
            low=float(np.percentile(means, 100 * delta / 2)),
            high=float(np.percentile(means, 100 * (1 - delta / 2))),
            better=int((diffs > 0).sum()),
            worse=int((diffs < 0).sum()),
            tied=int((diffs == 0).sum()),
            resamples=resamples,
            delta=delta,
        )
    return compared
