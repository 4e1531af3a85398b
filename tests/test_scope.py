from __future__ import annotations

import pytest

from docscraper.crawl.scope import Scope

BASE = "http://127.0.0.1:8000/docs/"


def scope(**kwargs: object) -> Scope:
    return Scope.for_source(BASE, **kwargs)  # type: ignore[arg-type]


def test_host_and_prefix() -> None:
    s = scope()
    assert s.check(BASE + "guide/install.html") is None
    assert s.check("http://127.0.0.1:8000/docs") is None
    refusal = s.check("http://127.0.0.1:8000/blog/post.html")
    assert refusal is not None and refusal.reason == "outOfScope" and "/docs/" in refusal.detail
    refusal = s.check("https://example.com/docs/x")
    assert refusal is not None and "host example.com" in refusal.detail
    refusal = s.check("http://127.0.0.1:9999/docs/x")
    assert refusal is not None and refusal.reason == "outOfScope"


def test_block_globs_single_and_double_star() -> None:
    s = scope(block=("archive/**",))
    assert s.check(BASE + "archive/v1/install.html") is not None
    assert s.check(BASE + "archive/") is not None
    assert s.check(BASE + "guide/archive.html") is None
    star = scope(block=("guide/*.html",))
    assert star.check(BASE + "guide/intro.html") is not None
    # `*` never crosses a folder
    assert star.check(BASE + "guide/advanced/tuning.html") is None


def test_allow_with_negation_and_folder_index() -> None:
    s = scope(allow=("guide/**", "!guide/advanced/**"))
    assert s.check(BASE + "guide/intro.html") is None
    assert s.check(BASE + "guide/") is None  # the folder's own index
    blocked = s.check(BASE + "guide/advanced/tuning.html")
    assert blocked is not None and "!guide/advanced/**" in blocked.detail
    outside = s.check(BASE + "reference/cli.html")
    assert outside is not None and "not matched by allow" in outside.detail


def test_only_negative_allow_means_everything_else() -> None:
    s = scope(allow=("!archive/**",))
    assert s.check(BASE + "guide/intro.html") is None
    assert s.check(BASE + "archive/v1/index.html") is not None


def test_double_star_matches_zero_folders() -> None:
    s = scope(block=("**/private/**",))
    assert s.check(BASE + "private/secret.html") is not None
    assert s.check(BASE + "a/b/private/x.html") is not None


def test_absolute_patterns() -> None:
    s = scope(block=("/docs/archive/**",))
    assert s.check(BASE + "archive/v1/install.html") is not None
    assert s.check(BASE + "guide/install.html") is None


def test_query_does_not_defeat_patterns() -> None:
    s = scope(block=("archive/**",))
    assert s.check(BASE + "archive/x.html?utm_source=a") is not None


def test_depth() -> None:
    s = scope(max_depth=2)
    assert s.check_depth(2) is None
    refusal = s.check_depth(3)
    assert refusal is not None and refusal.reason == "depth"
    assert scope().check_depth(99) is None


@pytest.mark.parametrize(
    ("url", "key"),
    [
        (BASE, "./"),
        ("http://127.0.0.1:8000/docs", "./"),
        (BASE + "guide/install.html", "guide/install.html"),
        (BASE + "guide/", "guide"),
        (BASE + "guide/install.html?b=1&a=2#x", "guide/install.html?a=2&b=1"),
        ("http://127.0.0.1:8000/blog/", "http://127.0.0.1:8000/blog"),
    ],
)
def test_report_keys(url: str, key: str) -> None:
    assert scope().key(url) == key


def test_narrower_than() -> None:
    stored = scope(block=("archive/**",))
    assert not scope(block=("archive/**",)).narrower_than(stored)
    assert scope(block=("archive/**", "faq.html")).narrower_than(stored)
    assert scope(block=("archive/**",), allow=("guide/**",)).narrower_than(stored)
    assert scope(block=("archive/**",), max_depth=1).narrower_than(stored)
    assert not scope().narrower_than(stored)  # wider is fine
    assert Scope.for_source("http://127.0.0.1:8000/docs/guide/").narrower_than(stored)
