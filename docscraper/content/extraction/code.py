"""Code blocks: the language of a ``<pre>`` from the classes and data attributes generators use, and
its verbatim text without line-number gutters."""

from __future__ import annotations

import functools
import re

from docscraper.content.extraction._dom import Node, attr, class_tokens, classes
from docscraper.content.extraction.structure import LINENO_TOKENS

__all__ = ["code_language", "code_text"]

_LANG_PREFIXES = ("language-", "lang-", "highlight-", "brush:")
_LANG_ALIASES = {
    "default": "python",  # Sphinx's default highlighter is Python 3 (with a silent fallback)
    "python3": "python",
    "py3": "python",
    "pycon3": "pycon",
    "ipython3": "ipython",
    "none": "text",
    "nohighlight": "text",
    "plain": "text",
    "plaintext": "text",
    "txt": "text",
    "no-highlight": "text",
}
_BARE_LANGS = frozenset(
    {
        "rust", "python", "javascript", "typescript", "bash", "sh", "shell", "console", "json",
        "yaml", "toml", "html", "xml", "css", "c", "cpp", "go", "java", "kotlin", "ruby", "php",
        "sql", "text", "swift", "scala", "haskell", "lua", "perl", "r", "ini", "diff",
    }
)  # fmt: skip
_LANG_OK_RE = re.compile(r"^[a-z0-9][a-z0-9_+#.\-]{0,30}$")
_NOT_LANGS = frozenset({"highlight", "notranslate", "default-text", "source", "code", "prettyprint"})
_STOP_ANCESTORS = frozenset({"body", "main", "article", "html"})


def _clean_lang(value: str) -> str:
    value = value.strip().strip(";").lower()
    value = _LANG_ALIASES.get(value, value)
    return value if _LANG_OK_RE.match(value) and value not in _NOT_LANGS else ""


def _lang_of(el: Node, *, is_code_element: bool) -> str:
    for name in ("data-lang", "data-language"):
        value = attr(el, name)
        if value:
            lang = _clean_lang(value)
            if lang:
                return lang
    tokens = classes(el)
    for index, token in enumerate(tokens):
        low = token.lower()
        for prefix in _LANG_PREFIXES:
            if low.startswith(prefix) and len(low) > len(prefix):
                lang = _clean_lang(low[len(prefix) :])
                if lang:
                    return lang
            if prefix == "brush:" and low == prefix and index + 1 < len(tokens):
                lang = _clean_lang(tokens[index + 1])
                if lang:
                    return lang
    if is_code_element:
        lowered = [c.lower() for c in tokens]
        if "sourcecode" in lowered:  # pandoc: class="sourceCode python"
            for token in lowered:
                if token != "sourcecode":
                    lang = _clean_lang(token)
                    if lang:
                        return lang
        for token in lowered:
            if token in _BARE_LANGS:
                return token
        if "hljs" in lowered:  # highlight.js before v11: class="hljs python"
            for token in lowered:
                if token != "hljs":
                    lang = _clean_lang(token)
                    if lang:
                        return lang
    return ""


def code_language(pre: Node) -> str:
    """The language of a ``<pre>`` block, ``""`` when none is marked."""
    candidates: list[tuple[Node, bool]] = [(pre, True)]
    code = next(pre.iterdescendants("code"), None)
    if code is not None:
        candidates.append((code, True))
    for depth, ancestor in enumerate(pre.iterancestors()):
        if depth >= 4 or ancestor.tag in _STOP_ANCESTORS:
            break
        candidates.append((ancestor, False))
    for el, is_code in candidates:
        lang = _lang_of(el, is_code_element=is_code)
        if lang:
            return lang
    return ""


def _is_gutter(el: Node) -> bool:
    ident = el.get("id")
    if ident and ident.lower() in LINENO_TOKENS:
        return True
    value = el.get("class")
    return bool(value) and _gutter_classes(value)


@functools.lru_cache(maxsize=4096)
def _gutter_classes(value: str) -> bool:
    return not LINENO_TOKENS.isdisjoint(class_tokens(value.split()))


def code_text(pre: Node) -> str:
    """The verbatim text of a code block, without line-number gutters."""
    parts: list[str] = [pre.text or ""]
    # Elements still to walk and tails still to add, the next one last.
    stack: list[Node | str] = list(reversed(pre))
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            parts.append(node)
            continue
        if not isinstance(node.tag, str):
            if node.tail:
                parts.append(node.tail)
            continue
        if node.tail:
            stack.append(node.tail)
        if node.tag == "br":
            parts.append("\n")
        elif not _is_gutter(node):
            if node.text:
                parts.append(node.text)
            stack.extend(reversed(node))
    value = "".join(parts).replace("\r\n", "\n").replace("\r", "\n").replace("\xa0", " ")
    value = re.sub(r"\A(?:[ \t]*\n)+", "", value)
    return value.rstrip()
