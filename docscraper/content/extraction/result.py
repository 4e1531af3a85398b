"""What extraction gives for one page: :class:`Extracted`."""

from __future__ import annotations

from dataclasses import dataclass

from docscraper.content.images import ImageRef

__all__ = ["EMPTY", "Extracted"]


@dataclass(frozen=True)
class Extracted:
    """What extraction found on one page.

    ``markdown`` is normalized (:func:`~docscraper.content.extraction.normalize_markdown`) and is what
    the change detection hashes.
    ``title`` is the first ``<h1>`` of the main content, else ``<title>``, else ``""``.
    ``canonical_url`` is ``<link rel=canonical>`` made absolute, or ``None`` when absent or malformed.
    ``has_scripts_only`` is true for a JavaScript application shell: ``<script>`` tags and no
    meaningful static content.
    ``images`` are the images of the main content, in document order (:mod:`docscraper.content.images`).
    ``truncated`` says, for the page's report entry, what was cut from a page over
    :data:`~docscraper.content.extraction.MAX_HTML_CHARS` (only its beginning is extracted); None for a whole page.
    """

    title: str
    markdown: str
    canonical_url: str | None
    language: str | None
    description: str | None
    has_scripts_only: bool
    images: tuple[ImageRef, ...] = ()
    truncated: str | None = None


#: The result for a page nothing could be recovered from.
EMPTY = Extracted(title="", markdown="", canonical_url=None, language=None, description=None, has_scripts_only=False)
