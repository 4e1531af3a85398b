"""How the crawler names itself: ``USER_AGENT`` from ``DOCSCRAPER_CONTACT``.

:class:`UserAgentAddon` (``ADDONS``) turns docscraper's default ``USER_AGENT`` (``docscraper/<version>``)
into ``docscraper/<version> (+<contact>)`` when the operator sets ``DOCSCRAPER_CONTACT`` (an http(s) URL
or an e-mail address; in the environment, the settings or ``-s``), so a site's operator can tell who
crawls and how to reach them. A ``USER_AGENT`` set to anything else is left as it is. Without a contact
the crawl logs a warning once.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.settings import SETTINGS_PRIORITIES

from docscraper.config import ConfigError, DocscraperConfig

if TYPE_CHECKING:
    from scrapy.settings import Settings

__all__ = ["UserAgentAddon"]

logger = logging.getLogger(__name__)


class UserAgentAddon:
    """See the module docstring."""

    def update_settings(self, settings: Settings) -> None:
        try:
            config = DocscraperConfig.from_settings(settings)
        except ConfigError:
            return  # the crawl command says what is wrong, before anything starts
        agent = config.user_agent(settings)
        if agent != settings.get("USER_AGENT"):
            priority = max(settings.getpriority("USER_AGENT") or 0, SETTINGS_PRIORITIES["addon"])
            settings.set("USER_AGENT", agent, priority=priority)
        if config.contact is None:
            logger.warning("DOCSCRAPER_CONTACT is not set: sites see the user agent %r, with no way to reach "
                           "you; set it to a URL or an e-mail address", agent)
