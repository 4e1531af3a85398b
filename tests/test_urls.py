from __future__ import annotations

import pytest

from docscraper.urls import is_http_url, normalize_url, page_id, scope_prefix


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://Docs.Example.COM/Guide/", "http://docs.example.com/Guide"),
        ("https://h/page#section", "https://h/page"),
        ("https://h/page?utm_source=x&utm_medium=y", "https://h/page"),
        ("https://h/page?b=2&a=1&gclid=z&fbclid=q&msclkid=m", "https://h/page?a=1&b=2"),
        ("https://h:443/x", "https://h/x"),
        ("http://h:8080/x/", "http://h:8080/x"),
        ("https://h", "https://h/"),
        ("https://h/", "https://h/"),
        ("https://h/a%7eb", "https://h/a~b"),
        ("https://h/a b", "https://h/a%20b"),
    ],
)
def test_normalize_url(url: str, expected: str) -> None:
    assert normalize_url(url) == expected


def test_variants_share_one_page_id() -> None:
    variants = [
        "https://docs.example.com/guide/install",
        "https://docs.example.com/guide/install/",
        "https://docs.example.com/guide/install#usage",
        "https://docs.example.com/guide/install?utm_source=newsletter",
        "HTTPS://DOCS.example.com:443/guide/install",
    ]
    ids = {page_id(v) for v in variants}
    assert len(ids) == 1
    (only,) = ids
    assert only.startswith("url_") and len(only) == 20 and only[4:].isalnum() and only == only.lower()


def test_distinct_pages_have_distinct_ids() -> None:
    assert page_id("https://h/a") != page_id("https://h/b")
    assert page_id("https://h/a?x=1") != page_id("https://h/a?x=2")
    assert page_id("https://h/a") != page_id("http://h/a")


def test_malformed_port_raises_value_error() -> None:
    with pytest.raises(ValueError):
        normalize_url("http://h:99999/x")


@pytest.mark.parametrize(
    ("url", "prefix"),
    [
        ("https://h/docs/", "https://h/docs/"),
        ("https://h/docs", "https://h/docs/"),
        ("https://h/docs/index.html", "https://h/docs/"),
        ("https://H/", "https://h/"),
        ("https://h", "https://h/"),
    ],
)
def test_scope_prefix(url: str, prefix: str) -> None:
    assert scope_prefix(url) == prefix


def test_is_http_url() -> None:
    assert is_http_url("https://h/x")
    assert not is_http_url("mailto:a@b")
    assert not is_http_url("/relative")
    assert not is_http_url("javascript:void(0)")
