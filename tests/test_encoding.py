"""Tests for docscraper.content.encoding: declared, undeclared and wrongly declared page encodings."""

from __future__ import annotations

import time

import pytest

from docscraper.content.encoding import body_encoding, decode_body, detect_encoding
from docscraper.content.extraction import extract_html

FRENCH = "Café crème, naïve résumé — “smart quotes” and façade. Déjà vu à la française."
LATIN1 = "Café crème, naïve résumé and façade. Déjà vu à la française."
JAPANESE = "日本語のドキュメントです。設定ファイルを編集してください。インストール方法。"
CHINESE = "这是中文文档。请编辑配置文件。安装方法和使用说明。"
RUSSIAN = "Это документация. Отредактируйте файл конфигурации. Способ установки."


def page(text: str, head: str = "") -> str:
    return (f"<html><head>{head}<title>T</title></head><body><main><h1>Title</h1><p>{text}</p>"
            f"<p>{text}</p></main></body></html>")


# name, Content-Type, body, the text the Markdown must hold, encoding chosen, overridden?
CASES = [
    ("cp1252, no charset", "text/html", page(FRENCH).encode("cp1252"), FRENCH, "cp1252", False),
    ("latin-1, no charset", "text/html", page(LATIN1).encode("latin-1"), LATIN1, "cp1252", False),
    ("Shift_JIS, no charset", "text/html", page(JAPANESE).encode("shift_jis"), JAPANESE, "cp932", False),
    ("GBK, no charset", "text/html", page(CHINESE).encode("gbk"), CHINESE, "gb18030", False),
    ("cp1251, no charset", "text/html", page(RUSSIAN).encode("cp1251"), RUSSIAN, "cp1251", False),
    ("header utf-8, bytes cp1252", "text/html; charset=utf-8", page(FRENCH).encode("cp1252"), FRENCH, "cp1252",
     True),
    ("header utf-8, bytes Shift_JIS", "text/html; charset=utf-8", page(JAPANESE).encode("shift_jis"), JAPANESE,
     "cp932", True),
    ("UTF-16 with BOM, no charset", "text/html", page(FRENCH).encode("utf-16"), FRENCH, "utf-16-le", False),
    ("UTF-16 with BOM, header utf-8", "text/html; charset=utf-8", page(FRENCH).encode("utf-16"), FRENCH,
     "utf-16-le", False),
    ("header utf-8, meta cp1252, bytes utf-8", "text/html; charset=utf-8",
     page(FRENCH, '<meta charset="windows-1252">').encode(), FRENCH, "utf-8", False),
    ("header latin-1, meta utf-8, bytes utf-8", "text/html; charset=iso-8859-1",
     page(FRENCH, '<meta charset="utf-8">').encode(), FRENCH, "utf-8", True),
    ("meta utf-8, bytes cp1252", "text/html", page(FRENCH, '<meta charset="utf-8">').encode("cp1252"), FRENCH,
     "cp1252", True),
    ("meta Shift_JIS, bytes utf-8", "text/html", page(JAPANESE, '<meta charset="shift_jis">').encode(), JAPANESE,
     "utf-8", True),
]


@pytest.mark.parametrize(("content_type", "body", "expected", "encoding", "overridden"),
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_pages_decode_to_their_text(content_type: str, body: bytes, expected: str, encoding: str,
                                    overridden: bool) -> None:
    decided = body_encoding(body, content_type)
    assert decided.encoding == encoding
    assert bool(decided.redetected) is overridden
    markdown = extract_html(body, "https://e.com/p.html", encoding=decided.encoding).markdown
    assert expected in markdown
    assert "\ufffd" not in markdown


def test_a_correct_utf8_declaration_is_kept_without_detection() -> None:
    decided = body_encoding(page(FRENCH).encode(), "text/html; charset=UTF-8")
    assert (decided.encoding, decided.declared, decided.source, decided.redetected) == ("utf-8", "utf-8", "header", None)
    meta = body_encoding(page(FRENCH, "<meta charset=utf-8>").encode(), "text/html")
    assert (meta.encoding, meta.source) == ("utf-8", "meta")


def test_a_few_stray_bytes_do_not_overturn_utf8() -> None:
    # a UTF-8 page with one pasted latin-1 word: the many valid characters win
    body = page(FRENCH * 5).encode() + "<p>résumé</p>".encode("latin-1")
    decided = body_encoding(body, "text/html; charset=utf-8")
    assert decided.encoding == "utf-8" and decided.redetected is None
    # and so does a single bad byte in plain ASCII text
    assert body_encoding(b"<p>" + b"x" * 500 + b"\xe9</p>", "text/html; charset=utf-8").encoding == "utf-8"


def test_undeclared_ascii_and_utf8() -> None:
    assert body_encoding(b"<p>plain</p>").encoding == "utf-8"
    assert body_encoding(page(JAPANESE).encode(), "text/html").encoding == "utf-8"
    assert detect_encoding(b"") == "utf-8"


def test_markdown_ignores_html_declarations_and_strips_the_bom() -> None:
    text = "# Titre\n\nCafé <meta charset=shift_jis>\n"
    decided = body_encoding(text.encode(), "text/markdown", html=False)
    assert decided.encoding == "utf-8" and decided.source is None
    assert decode_body("\ufeff".encode() + text.encode(), decided.encoding) == text
    assert decode_body(text.encode("utf-16"), "utf-8") == text
    assert decode_body(b"caf\xe9", "no-such-codec") == "caf\ufffd"


def test_unknown_or_bogus_charsets_fall_back_to_detection() -> None:
    body = page(FRENCH).encode("cp1252")
    assert body_encoding(body, "text/html; charset=x-no-such-thing").encoding == "cp1252"


def test_detection_is_fast_on_large_pages() -> None:
    body = page(FRENCH * 8000).encode("cp1252")
    assert len(body) > 1_000_000
    started = time.perf_counter()
    decided = body_encoding(body, "text/html; charset=utf-8")
    assert decided.encoding == "cp1252"
    assert time.perf_counter() - started < 2.0
