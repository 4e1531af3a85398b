"""docscraper: keep a vector index of a documentation site in step with the site."""

from __future__ import annotations

__version__ = "0.1.0"
PROJECT_URL = "https://github.com/docscraper/docscraper"
USER_AGENT = f"docscraper/{__version__} (+{PROJECT_URL})"

__all__ = ["PROJECT_URL", "USER_AGENT", "__version__"]
