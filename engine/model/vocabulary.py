"""The node-feature vocabulary: which tags, attribute items and characters get their own slot, and its file.

A `Vocabulary` is built from corpus frequencies (`build_vocabulary`, on `featurize.count_features`) and keeps the
most frequent items of each kind in a fixed number of slots (the paper's 32 tag + 32 attribute + 192 character
one-hot slots); everything else falls into an "unknown" slot. Training builds it once, the model bundle ships it,
and the runtime featurizes with exactly that file, so it lives apart from the featurizer's MathML rules.

The vocabulary file (`Vocabulary.save`) is canonical JSON (``format``, ``version``, ``sizes``, ``attribute_keys``,
``tags``, ``attributes``, ``characters``; sorted keys, ASCII escapes): the same vocabulary always gives the same
bytes, and `Vocabulary.checksum` is their SHA-256 for the model bundle manifest.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.model.featurize import DEFAULT_ATTRIBUTE_KEYS, FeatureCounts, FeatureLookup, count_features

__all__ = [
    "VOCABULARY_FORMAT",
    "VOCABULARY_VERSION",
    "Vocabulary",
    "VocabularyError",
    "build_vocabulary",
]

VOCABULARY_FORMAT = "eqsearch-vocabulary"
VOCABULARY_VERSION = 1


class VocabularyError(EqsearchError):
    """A vocabulary file is missing, of another format or version, or inconsistent."""


@dataclass(frozen=True)
class Vocabulary:
    """Tag, attribute and character vocabularies with fixed slot counts (KDD'20: 32 / 32 / 192).

    Index layout (see `engine.model.graph`): tag ``i`` for ``tags[i]``, ``n_tags - 1`` unknown; attribute 0 none,
    ``1 + i`` for ``attributes[i]``, ``n_attrs`` unknown; character 0 none, ``1 + i`` for ``characters[i]``,
    ``n_chars`` unknown. So at most ``n_tags - 1``, ``n_attrs - 1`` and ``n_chars - 1`` known items.

    Args:
        tags: known tag names, most frequent first.
        attributes: known attribute items (``key=value[;key=value]``), most frequent first.
        characters: known characters (one code point each), most frequent first.
        n_tags: tag slots, the unknown one included (default 32).
        n_attrs: attribute slots, the unknown one included, "none" excluded (default 32).
        n_chars: character slots, the unknown one included, "none" excluded (default 192).
        attribute_keys: attribute names that form attribute items.
    """

    tags: tuple[str, ...]
    attributes: tuple[str, ...]
    characters: tuple[str, ...]
    n_tags: int = 32
    n_attrs: int = 32
    n_chars: int = 192
    attribute_keys: tuple[str, ...] = DEFAULT_ATTRIBUTE_KEYS
    _lookup: FeatureLookup = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        for name, items, slots in (
            ("tags", self.tags, self.n_tags),
            ("attributes", self.attributes, self.n_attrs),
            ("characters", self.characters, self.n_chars),
        ):
            if slots < 1:
                raise VocabularyError(f"vocabulary needs at least one {name} slot (the unknown one), got {slots}")
            if len(items) > slots - 1:
                raise VocabularyError(f"{len(items)} {name} do not fit in {slots} slots (the last is unknown)")
            if len(set(items)) != len(items):
                raise VocabularyError(f"vocabulary {name} contain duplicates")
        if any(len(c) != 1 for c in self.characters):
            raise VocabularyError("vocabulary characters must be single code points")
        tag_index = {t: i for i, t in enumerate(self.tags)}
        attr_index = {a: i + 1 for i, a in enumerate(self.attributes)}
        char_index = {c: i + 1 for i, c in enumerate(self.characters)}
        unknown_tag, unknown_attr, unknown_char = self.n_tags - 1, self.n_attrs, self.n_chars
        lookup = FeatureLookup(
            lambda name: tag_index.get(name, unknown_tag),
            lambda item: 0 if item is None else attr_index.get(item, unknown_attr),
            lambda char: char_index.get(char, unknown_char),
            frozenset(self.attribute_keys),
        )
        object.__setattr__(self, "_lookup", lookup)

    @property
    def lookup(self) -> FeatureLookup:
        """The cached feature lookup the featurizer walks with (unknown items go to the unknown slots)."""
        return self._lookup

    @property
    def unknown_tag(self) -> int:
        return self.n_tags - 1

    @property
    def unknown_attr(self) -> int:
        return self.n_attrs

    @property
    def unknown_char(self) -> int:
        return self.n_chars

    def tag_index(self, name: str) -> int:
        """Index of a tag name (unknown slot if not in the vocabulary)."""
        return self._lookup.resolve_tag(name)

    def attr_index(self, item: str | None) -> int:
        """Index of an attribute item such as ``"mathvariant=bold"`` (0 for None, unknown slot if absent)."""
        return self._lookup.resolve_attr(item)

    def char_index(self, char: str) -> int:
        """Index of a character (unknown slot if not in the vocabulary)."""
        return self._lookup.resolve_char(char)

    @classmethod
    def from_counts(
        cls,
        counts: FeatureCounts,
        *,
        n_tags: int = 32,
        n_attrs: int = 32,
        n_chars: int = 192,
        attribute_keys: Sequence[str] = DEFAULT_ATTRIBUTE_KEYS,
    ) -> Vocabulary:
        """Keep the most frequent items of each kind; ties broken by the item's text, so the result is
        deterministic for the same counts.

        Args:
            counts: from `count_features` (built with the same ``attribute_keys``).
            n_tags, n_attrs, n_chars: slot counts as in the class docstring.
            attribute_keys: must be those the counts were made with.
        """

        def top(counter: Counter[str], k: int) -> tuple[str, ...]:
            ranked = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
            return tuple(key for key, _ in ranked[: max(k, 0)])

        return cls(
            tags=top(counts.tags, n_tags - 1),
            attributes=top(counts.attributes, n_attrs - 1),
            characters=top(counts.characters, n_chars - 1),
            n_tags=n_tags,
            n_attrs=n_attrs,
            n_chars=n_chars,
            attribute_keys=tuple(sorted(attribute_keys)),
        )

    def to_json(self) -> dict[str, object]:
        """The JSON document `save` writes."""
        return {
            "format": VOCABULARY_FORMAT,
            "version": VOCABULARY_VERSION,
            "sizes": {"tags": self.n_tags, "attributes": self.n_attrs, "characters": self.n_chars},
            "attribute_keys": list(self.attribute_keys),
            "tags": list(self.tags),
            "attributes": list(self.attributes),
            "characters": list(self.characters),
        }

    def to_json_text(self) -> str:
        """Canonical text: sorted keys, ASCII escapes, fixed indentation, trailing newline (stable checksums)."""
        return json.dumps(self.to_json(), sort_keys=True, ensure_ascii=True, indent=1) + "\n"

    def checksum(self) -> str:
        """SHA-256 (hex) of the canonical text, for model bundle manifests."""
        return hashlib.sha256(self.to_json_text().encode("ascii")).hexdigest()

    def save(self, path: str | Path) -> Path:
        """Write the vocabulary as canonical JSON; returns the path."""
        path = Path(path)
        path.write_text(self.to_json_text(), encoding="ascii")
        return path

    @classmethod
    def from_json(cls, data: dict[str, object], *, source: str = "vocabulary") -> Vocabulary:
        """Build from the document of `to_json`, checking format and version."""
        if not isinstance(data, dict) or data.get("format") != VOCABULARY_FORMAT:
            raise VocabularyError(f"{source} is not an eqsearch vocabulary (no format '{VOCABULARY_FORMAT}')")
        if data.get("version") != VOCABULARY_VERSION:
            raise VocabularyError(
                f"{source} has vocabulary version {data.get('version')!r}; this eqsearch reads {VOCABULARY_VERSION}",
                hint="rebuild the vocabulary or use the eqsearch version that wrote it",
            )
        try:
            sizes = data["sizes"]
            return cls(
                tags=tuple(data["tags"]),  # type: ignore[arg-type]
                attributes=tuple(data["attributes"]),  # type: ignore[arg-type]
                characters=tuple(data["characters"]),  # type: ignore[arg-type]
                n_tags=int(sizes["tags"]),  # type: ignore[index]
                n_attrs=int(sizes["attributes"]),  # type: ignore[index]
                n_chars=int(sizes["characters"]),  # type: ignore[index]
                attribute_keys=tuple(data["attribute_keys"]),  # type: ignore[arg-type]
            )
        except (KeyError, TypeError, ValueError) as error:
            raise VocabularyError(f"{source} is missing or has a malformed field: {error}") from None

    @classmethod
    def load(cls, path: str | Path) -> Vocabulary:
        """Read a vocabulary written by `save`.

        Raises:
            VocabularyError: the file is missing, not JSON, or of another format or version.
        """
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise VocabularyError(f"vocabulary file not found: {path}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise VocabularyError(f"vocabulary file {path} is not valid JSON: {error}") from None
        return cls.from_json(data, source=str(path))


def build_vocabulary(
    mathml: Iterable[str | bytes],
    *,
    n_tags: int = 32,
    n_attrs: int = 32,
    n_chars: int = 192,
    attribute_keys: Sequence[str] = DEFAULT_ATTRIBUTE_KEYS,
    skip_malformed: bool = False,
) -> Vocabulary:
    """Count node features over a corpus and keep the most frequent items (see `Vocabulary.from_counts`).

    Args:
        mathml: MathML strings.
        n_tags: tag slots incl. unknown (default 32).
        n_attrs: attribute slots incl. unknown (default 32).
        n_chars: character slots incl. unknown (default 192).
        attribute_keys: attribute names that count.
        skip_malformed: skip malformed MathML instead of raising `MathMLError`.
    """
    counts = count_features(mathml, attribute_keys=attribute_keys, skip_malformed=skip_malformed)
    return Vocabulary.from_counts(
        counts, n_tags=n_tags, n_attrs=n_attrs, n_chars=n_chars, attribute_keys=attribute_keys
    )
