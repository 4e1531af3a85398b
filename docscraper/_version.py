"""docscraper's version and default user agent, for modules that must not import the package's API."""

from __future__ import annotations

__version__ = "0.1.0"
#: The user agent of a crawl whose operator set no contact (``DOCSCRAPER_CONTACT``): the product and its version.
USER_AGENT = f"docscraper/{__version__}"

__all__ = ["USER_AGENT", "__version__"]
