"""Sphinx configuration of docscraper's documentation site (``make docs``; docs/about.md says why Sphinx)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(1, str(ROOT))
# Sphinx runs in a venv of its own (requirements-docs.in: it needs an older docutils than the runtime pins).
# Once Sphinx and its docutils are loaded, reference.add_project_packages puts the project's venv first on
# sys.path, so autodoc imports docscraper with the packages it runs with (make docs names that venv in
# DOCSCRAPER_DOCS_VENV).
import reference  # noqa: E402

reference.add_project_packages()
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from docscraper import __version__  # noqa: E402

project = "docscraper"
author = "the docscraper authors"
copyright = "the docscraper authors"
version = release = __version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "reference"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "reference/_generated/*"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_default_options = {"members": True, "show-inheritance": False}
# -n (nitpicky): every cross-reference must resolve. Names of other projects (the standard library, Scrapy,
# LangChain, LlamaIndex...) have no page here, as the build is offline (no intersphinx).
# docscraper's internals that the public API's docstrings name have no page either: the reference documents the
# public API only (docscraper's __all__, docscraper.library, the ops functions the README's examples use).
nitpick_ignore_regex = [
    (r"py:.*", r"(?!docscraper\b).*"),
    (r"py:.*", r"docscraper\.(config|credentials|secrets|urls|crawl|content|storage\.(?!search\b)[a-z_]+)\b.*"),
    (r"py:.*", r"docscraper(\.[a-z_]+)*\._[A-Za-z].*"),
]

html_theme = "furo"
html_title = f"docscraper {release}"
html_show_sourcelink = False
