"""A small documentation folder for ``file://`` crawls (tests/test_local.py, tests/test_mirror.py).

``make_docs(folder)`` writes, with relative links only:

======================  ===========================================================  ===============
file                    linked from                                                  first finder
======================  ===========================================================  ===============
``index.html``          (the seed, ``./``)                                           link (depth 0)
``guide/index.html``    index (as ``guide/``)                                        link
``guide/routing.html``  guide/, notes.md                                             llms
``guide/filters.html``  guide/                                                       link
``notes.md``            index                                                        llms
``api/ref.html``        nothing: only in ``sitemap.xml`` (a ``file://`` URL)         sitemap
``extra.txt``           nothing: only in ``llms.txt``                                llms
``image.png``           index (a binary: skipped by extension)                       -
======================  ===========================================================  ===============

So a crawl of the folder finds :data:`PAGES` (7) pages. ``llms.txt`` and ``sitemap.xml`` are discovery
files, not pages. ``age(folder)`` moves every mtime an hour back, so the file handler sends ETags.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["PAGES", "age", "make_docs", "page"]

#: Report keys of the pages a crawl of the folder finds.
PAGES = {"./", "guide", "guide/routing.html", "guide/filters.html", "notes.md", "api/ref.html", "extra.txt"}


def page(title: str, body: str, links: dict[str, str] | None = None) -> str:
    anchors = "".join(f'<li><a href="{href}">{text}</a></li>' for text, href in (links or {}).items())
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>'
        f"<body><nav>site navigation</nav><main><h1>{title}</h1><p>{body}</p><ul>{anchors}</ul></main>"
        "</body></html>\n"
    )


def make_docs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "guide").mkdir(exist_ok=True)
    (folder / "api").mkdir(exist_ok=True)
    files = {
        "index.html": page("Relay docs", "Acme Relay receives webhooks and routes them to your services.",
                           {"Guide": "guide/", "Notes": "notes.md", "Logo": "image.png",
                            "Example": "https://example.com/"}),
        "guide/index.html": page("Guide", "The guide covers routing and filters in depth.",
                                 {"Routing": "routing.html", "Filters": "filters.html", "Home": "../"}),
        "guide/routing.html": page("Routing", "Routes match events by rules; the first match wins."),
        "guide/filters.html": page("Filters", "A filter expression may be at most 4096 characters long."),
        "notes.md": "# Notes\n\nRelease notes live here. See [routing](guide/routing.html).\n",
        "api/ref.html": page("API reference", "The API rate limit is 600 requests per minute."),
        "extra.txt": "# Extra\n\nPlain text notes that only llms.txt lists.\n",
        "llms.txt": "# Relay\n\n> Webhook relay.\n\n## Docs\n\n- [Routing](guide/routing.html): rules\n"
                    "- [Notes](notes.md): notes\n- [Extra](extra.txt): extra\n",
        "image.png": "\x89PNG not really",
    }
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "sitemap.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{(folder / 'api' / 'ref.html').as_uri()}</loc></url></urlset>\n",
        encoding="utf-8",
    )
    return folder


def age(folder: Path, seconds: float = 3600) -> None:
    """Move the mtime of every file under *folder* *seconds* back (ETags are sent for old files only)."""
    past = time.time() - seconds
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            os.utime(path, (past, past))
