"""Retrieval quality on your own questions: the question file, the scoring, and ``scrapy evaluate``'s run.

:func:`load_questions` reads a question file: JSON Lines, one ``{"question": ..., "answers": [...]}`` a line, or one
JSON array of them. An answer is a URL, a path relative to the scope prefix of the source a result comes from, or a
path from the host root; a question without answers is counted, not scored. Pages match by :func:`page_key` (the
normalized URL, a folder's index file dropped, ``X.html.md`` taken as ``X.html``). :func:`score` ranks each question
by the 1-based position of the first result that is one of its answers (None past *k*): recall@n is the share of
scored questions ranked n or better, MRR@k the mean of 1/rank (0 past *k*). :func:`evaluate_index` asks the index as
``scrapy search`` does. The file format in full: docs/howto/evaluate.md.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from docscraper.urls import normalize_url, scope_prefix

if TYPE_CHECKING:
    from docscraper.config import DocscraperConfig

__all__ = [
    "CUTOFFS",
    "DEPTH",
    "Evaluation",
    "EvaluationError",
    "Hit",
    "Outcome",
    "Question",
    "QuestionFileError",
    "answer_key",
    "evaluate_index",
    "load_questions",
    "page_key",
    "parse_questions",
    "rank_of",
    "score",
]

logger = logging.getLogger(__name__)

#: The recall cutoffs reported (those not above the number of results asked for).
CUTOFFS = (1, 3, 5)
#: How many results each question asks for by default: MRR@10.
DEPTH = 10
#: A folder's URL serves one of these; ``guide/index.html`` and ``guide/`` are one page.
INDEX_FILES = frozenset({"index.html", "index.htm", "index.md"})
SCHEMA_VERSION = 1


class QuestionFileError(ValueError):
    """The question file is missing or malformed; ``str(exc)`` names the file and the line."""


class EvaluationError(RuntimeError):
    """The index cannot be evaluated (no index, an empty one, an unknown source); ``str(exc)`` says why."""


@dataclass(frozen=True)
class Question:
    text: str
    #: URLs or paths, as written; empty: nothing should answer it (not scored)
    answers: tuple[str, ...]
    #: the line of its file it starts on (0: not from a file)
    line: int = 0


@dataclass(frozen=True)
class Hit:
    """One search result as the scoring sees it: its page URL, the source and title it came with, and the
    page's other URLs (aliases of the same content), any of which answers a question as the URL does."""

    url: str
    source: str = ""
    title: str = ""
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outcome:
    question: Question
    rank: int | None
    hits: tuple[Hit, ...]

    @property
    def first(self) -> Hit | None:
        return self.hits[0] if self.hits else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "line": self.question.line,
            "question": self.question.text,
            "answers": list(self.question.answers),
            "rank": self.rank,
            "results": [{"url": h.url, "title": h.title, "source": h.source} for h in self.hits],
        }


@dataclass
class Evaluation:
    """Every scored question's outcome, asked with *k* results; ``unscored``: the questions without answers."""

    k: int = DEPTH
    outcomes: list[Outcome] = field(default_factory=list)
    unscored: list[Question] = field(default_factory=list)

    @property
    def cutoffs(self) -> tuple[int, ...]:
        return tuple(c for c in CUTOFFS if c <= self.k)

    def found(self, n: int) -> int:
        """How many questions have an answer at rank *n* or better."""
        return sum(1 for o in self.outcomes if o.rank is not None and o.rank <= n)

    def recall(self, n: int) -> float:
        return self.found(n) / len(self.outcomes) if self.outcomes else 0.0

    @property
    def mrr(self) -> float:
        if not self.outcomes:
            return 0.0
        return sum(1 / o.rank for o in self.outcomes if o.rank is not None) / len(self.outcomes)

    def misses(self, n: int = 1) -> list[Outcome]:
        """The questions not answered at rank *n* or better (by default: not first)."""
        return [o for o in self.outcomes if o.rank is None or o.rank > n]

    def summary(self) -> str:
        recalls = "  ".join(f"recall@{n} {self.recall(n):.3f}" for n in self.cutoffs)
        return f"{recalls}  MRR@{self.k} {self.mrr:.3f}  ({len(self.outcomes)} questions)"

    def miss_lines(self, n: int = 1) -> list[str]:
        """Each question not ranked *n* or better: where it is, what it expected, its rank, what came first."""
        lines = []
        for o in self.misses(n):
            where = f"line {o.question.line}: " if o.question.line else ""
            rank = f"rank {o.rank}" if o.rank is not None else f"not in the top {self.k}"
            first = o.first
            shown = "(no results)" if first is None else first.url + (f"  ({first.title})" if first.title else "")
            lines.append(f"  {where}{o.question.text!r}\n      expected {' or '.join(o.question.answers)}; "
                         f"{rank}; first: {shown}")
        return lines

    def as_dict(self) -> dict[str, Any]:
        """The figures and every outcome (see ``docscraper/schema/evaluation.schema.json``)."""
        return {
            "schemaVersion": SCHEMA_VERSION,
            "k": self.k,
            "questions": len(self.outcomes),
            "unscored": len(self.unscored),
            "recall": {str(n): self.recall(n) for n in self.cutoffs},
            "found": {str(n): self.found(n) for n in self.cutoffs},
            "mrr": self.mrr,
            "misses": len(self.misses()),
            "outcomes": [o.as_dict() for o in self.outcomes],
            "unscoredQuestions": [{"line": q.line, "question": q.text} for q in self.unscored],
        }


# -- the question file -------------------------------------------------------------------------------


def load_questions(path: Path | str) -> list[Question]:
    """The questions of the file at *path* (JSON Lines, or a JSON array); :class:`QuestionFileError` when it
    is missing, unreadable or malformed."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise QuestionFileError(f"no question file at {path}") from None
    except IsADirectoryError:
        raise QuestionFileError(f"{path} is a folder, not a question file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionFileError(f"cannot read {path}: {exc}") from None
    return parse_questions(text, str(path))


def parse_questions(text: str, name: str = "<questions>") -> list[Question]:
    """The questions of a question file's *text*; *name* is how errors call the file."""
    text = text.lstrip("\ufeff")
    items: list[tuple[int, Any]] = []
    if text.lstrip().startswith("["):
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise QuestionFileError(f"{name} line {exc.lineno}: invalid JSON ({exc.msg})") from None
        items = _array_items(text)
    else:
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                items.append((number, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise QuestionFileError(f"{name} line {number}: invalid JSON ({exc.msg})") from None
    questions = [_question(value, number, f"{name} line {number}") for number, value in items]
    if not questions:
        raise QuestionFileError(f"{name} holds no questions")
    seen: dict[str, int] = {}
    for q in questions:
        if q.text in seen:
            raise QuestionFileError(f"{name} line {q.line}: the same question as line {seen[q.text]}")
        seen[q.text] = q.line
    return questions


def _array_items(text: str) -> list[tuple[int, Any]]:
    """The items of a valid JSON array, each with the line it starts on."""
    decoder = json.JSONDecoder()
    items: list[tuple[int, Any]] = []
    position = text.index("[") + 1
    while True:
        while text[position] in " \t\r\n,":
            position += 1
        if text[position] == "]":
            return items
        value, end = decoder.raw_decode(text, position)
        items.append((text.count("\n", 0, position) + 1, value))
        position = end


def _question(value: Any, number: int, where: str) -> Question:
    if not isinstance(value, dict):
        raise QuestionFileError(f"{where}: not a JSON object")
    text = value.get("question")
    if not isinstance(text, str) or not text.strip():
        raise QuestionFileError(f"{where}: \"question\" must be a non-empty string")
    if "answers" in value and "expected" in value:
        raise QuestionFileError(f"{where}: give \"answers\" or \"expected\", not both")
    if "answers" not in value and "expected" not in value:
        raise QuestionFileError(f"{where}: no \"answers\" (a list of page URLs or paths)")
    raw = value.get("answers", value.get("expected"))
    answers: list[Any]
    if raw is None:
        answers = []
    elif isinstance(raw, str):
        answers = [raw]
    elif isinstance(raw, list):
        answers = raw
    else:
        raise QuestionFileError(f"{where}: \"answers\" must be a list of page URLs or paths")
    for answer in answers:
        if not isinstance(answer, str) or not answer.strip():
            raise QuestionFileError(f"{where}: every answer must be a non-empty string (a URL or a path)")
        problem = _answer_problem(answer.strip())
        if problem:
            raise QuestionFileError(f"{where}: answer {answer!r} {problem}")
    return Question(text.strip(), tuple(a.strip() for a in answers), number)


def _answer_problem(answer: str) -> str | None:
    """What is wrong with *answer* as the scoring will read it (:func:`answer_key`), or None: checked when the
    file is loaded, so that no question fails half-way through an evaluation."""
    is_url = "://" in answer
    try:
        if is_url:
            parts = urlsplit(answer)
            if parts.scheme.lower() not in ("http", "https", "file"):
                return "is not an http(s) or file URL"
            if parts.scheme.lower() != "file" and not parts.hostname:
                return "is a URL without a host"
        answer_key(answer, "https://example.invalid/docs/")  # a path is read against some source's prefix
    except ValueError as exc:
        return f"is not a valid {'URL' if is_url else 'path'} ({exc})"
    return None


# -- matching ----------------------------------------------------------------------------------------


def page_key(url: str) -> str:
    """What a page URL is compared by: normalized, a folder's index file dropped, ``X.html.md`` as ``X.html``."""
    parts = urlsplit(normalize_url(url))
    path = parts.path
    if path.endswith((".html.md", ".htm.md")):
        path = path[: -len(".md")]
    folder, _, last = path.rpartition("/")
    if last in INDEX_FILES:
        path = folder or "/"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def answer_key(answer: str, prefix: str | None) -> str | None:
    """The :func:`page_key` of *answer*: a URL as it is, a path joined to the scope *prefix*; None for a
    path when there is no prefix to read it against."""
    if "://" in answer:
        return page_key(answer)
    if prefix is None:
        return None
    base = prefix if prefix.endswith("/") else prefix + "/"
    return page_key(urljoin(base, answer))


def rank_of(answers: Sequence[str], hits: Sequence[Hit], prefix_of: Callable[[Hit], str | None]) -> int | None:
    """The 1-based position of the first of *hits* that is one of *answers* (paths read against the scope
    prefix *prefix_of* gives for that hit), None when none is."""
    for position, hit in enumerate(hits, 1):
        keys = set()
        for url in (hit.url, *hit.aliases):
            try:
                keys.add(page_key(url))
            except ValueError:
                continue
        prefix = prefix_of(hit)
        if any(answer_key(answer, prefix) in keys for answer in answers):
            return position
    return None


def score(questions: Sequence[Question], search: Callable[[str, int], Sequence[Hit]],
          prefix_of: Callable[[Hit], str | None], *, k: int = DEPTH) -> Evaluation:
    """Ask every question with answers for its *k* best pages (*search*, best first) and rank its answers."""
    if k < 1:
        raise ValueError("k must be 1 or more")
    evaluation = Evaluation(k=k)
    for question in questions:
        if not question.answers:
            evaluation.unscored.append(question)
            continue
        hits = tuple(search(question.text, k))[:k]
        evaluation.outcomes.append(Outcome(question, rank_of(question.answers, hits, prefix_of), hits))
    return evaluation


# -- the index of a project's settings ---------------------------------------------------------------


def evaluate_index(config: DocscraperConfig, questions: Sequence[Question], *, k: int = DEPTH,
                   source: str | None = None) -> Evaluation:
    """Ask the index of *config* every question (hybrid search, one result per page, as ``scrapy search``),
    only *source*'s pages when given. Paths in answers are read against the scope prefix of the source each
    result comes from. :class:`EvaluationError` for no index, an empty one or an unknown source."""
    # imported here: the scoring above serves benchmarks and tests without the index's libraries
    from docscraper.ops.sources import SourceError, list_sources
    from docscraper.storage.backends import open_vector_index
    from docscraper.storage.search import MAX_K, Searcher

    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ValueError(f"k must be a whole number from 1 to {MAX_K}, got {k!r}")
    try:
        sources = list_sources(config)
    except SourceError as exc:
        raise EvaluationError(str(exc)) from exc
    prefixes = {s.name: str(s.scope.get("prefix") or scope_prefix(s.url)) for s in sources}
    if source is not None and source not in prefixes:
        known = ", ".join(sorted(prefixes)) or "none"
        raise EvaluationError(f"unknown source {source!r} (known: {known}); see scrapy sources list")
    if config.chroma_url is None and not config.chroma_path.exists():
        raise EvaluationError(f"no index at {config.chroma_path}; crawl a source first")
    index = open_vector_index(config)
    searcher: Searcher | None = None
    try:
        if index.count(source) == 0:
            raise EvaluationError(f"source {source!r} has no chunks in the index; crawl it first" if source
                                  else "the index is empty; crawl a source first")
        searcher = Searcher(config, index=index)  # the model loads only once there is something to ask
        ask = searcher

        def search(text: str, n: int) -> list[Hit]:
            return [Hit(r.url, r.source, r.title, tuple(r.aliases))
                    for r in ask.search(text, k=n, source=source, with_aliases=True)]

        return score(questions, search, lambda hit: prefixes.get(hit.source), k=k)
    finally:
        if searcher is not None:
            searcher.close()  # closes the index too
        else:
            index.close()
