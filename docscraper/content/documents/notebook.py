"""Jupyter notebooks (``.ipynb``) with nbformat: Markdown cells as text, code cells as code fenced in the
kernel's language, and short text outputs kept (a stream or ``text/plain`` result of at most
:data:`MAX_OUTPUT_LINES` lines, fenced as ``text``); images, HTML and long outputs are left out. The title is
the notebook's ``metadata.title``, else its first heading, else the file name."""

from __future__ import annotations

import re
import warnings

from docscraper.content.documents.base import Deadline, DocumentLimits, DocumentRefused

__all__ = ["MAX_OUTPUT_LINES", "notebook_to_markdown"]

MAX_OUTPUT_LINES = 12
_MAX_OUTPUT_CHARS = 1500
_HEADING_RE = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
_TICKS_RE = re.compile(r"`+")
_LANGUAGE_RE = re.compile(r"[^A-Za-z0-9_+#.-]")


def _text(value: object) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _fenced(code: str, language: str) -> str:
    # longer than any run of backticks in the code, so nothing inside closes it
    fence = "`" * max(3, 1 + max((len(run) for run in _TICKS_RE.findall(code)), default=0))
    return f"{fence}{language}\n{code.rstrip()}\n{fence}"


def _output(output: dict) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        text = _text(output.get("text"))
    elif kind in ("execute_result", "display_data"):
        text = _text((output.get("data") or {}).get("text/plain"))
    else:
        return ""  # errors and anything else: left out
    text = text.strip("\n")
    if not text.strip() or text.count("\n") >= MAX_OUTPUT_LINES or len(text) > _MAX_OUTPUT_CHARS:
        return ""
    return _fenced(text, "text")


def notebook_to_markdown(body: bytes, name: str, limits: DocumentLimits) -> tuple[str, str]:
    """(title, Markdown) of the notebook *body* (see the module docstring)."""
    import nbformat

    deadline = Deadline(limits.time_limit)
    try:
        with warnings.catch_warnings():
            # nbformat warns about what it mends itself (cells without ids, an old minor version)
            warnings.simplefilter("ignore")
            notebook = nbformat.reads(body.decode("utf-8-sig", errors="replace"), as_version=4)
    except Exception as exc:  # nbformat's NotJSONError, a ValidationError, a version it cannot read
        raise DocumentRefused("unreadableDocument", f"not a readable notebook: {exc.__class__.__name__}: "
                                                    f"{str(exc)[:200]}") from None
    metadata = notebook.get("metadata") or {}
    language = str((metadata.get("kernelspec") or {}).get("language")
                   or (metadata.get("language_info") or {}).get("name") or "")
    language = _LANGUAGE_RE.sub("", language).lower()
    parts: list[str] = []
    for number, cell in enumerate(notebook.get("cells") or [], start=1):
        if number % 100 == 0:
            deadline.check(f"cell {number}")
        source = _text(cell.get("source")).strip("\n")
        kind = cell.get("cell_type")
        if kind == "markdown" and source.strip():
            parts.append(source)
        elif kind == "code" and source.strip():
            parts.append(_fenced(source, language))
            parts.extend(text for text in map(_output, cell.get("outputs") or []) if text)
        elif kind == "raw" and source.strip():
            parts.append(_fenced(source, "text"))
    markdown = "\n\n".join(parts)
    if not markdown.strip():
        raise DocumentRefused("unreadableDocument", "the notebook has no cell with text")
    heading = next((m.group(1).strip() for m in _HEADING_RE.finditer(
        "\n".join(p for p in parts if not p.startswith(("```", "~~~"))))), "")
    title = str(metadata.get("title") or "").strip() or heading or name
    return title, markdown
