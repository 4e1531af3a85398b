"""The crawler's user agent: docscraper, its version, and the contact the operator sets (DOCSCRAPER_CONTACT)."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from docscraper import USER_AGENT, __version__
from docscraper.config import ConfigError, DocscraperConfig, contact, user_agent
from docscraper.crawl.agent import UserAgentAddon
from tests.conftest import Crawl
from tests.mockserver import DocsServer


@pytest.mark.parametrize(("value", "expected"), [
    ("https://ops.example.com/crawler", "https://ops.example.com/crawler"),
    ("ops@example.com", "mailto:ops@example.com"),
    ("mailto:ops@example.com", "mailto:ops@example.com"),
    ("", None),
    (None, None),
])
def test_contact_is_a_url_or_an_address(value: str | None, expected: str | None) -> None:
    assert contact(value) == expected


@pytest.mark.parametrize("value", ["ops", "ftp://example.com/", "https://x.example/a b", "https://x.example/\r\nX: y",
                                   "https://exämple.com/", "https://x.example/(1)"])
def test_a_contact_no_header_can_carry_is_refused(value: str) -> None:
    with pytest.raises(ConfigError, match="DOCSCRAPER_CONTACT"):
        contact(value)


def test_user_agent_names_product_version_and_contact() -> None:
    assert user_agent(None) == USER_AGENT == f"docscraper/{__version__}"
    assert user_agent("https://ops.example.com/") == f"docscraper/{__version__} (+https://ops.example.com/)"
    assert "github.com" not in USER_AGENT


def _settings(values: dict[str, str]) -> Settings:
    settings = Settings()
    settings.setmodule("settings", priority="project")
    settings.setdict(values, priority="cmdline")
    return settings


def test_addon_puts_the_contact_in_the_default_user_agent() -> None:
    settings = _settings({"DOCSCRAPER_CONTACT": "ops@example.com"})
    UserAgentAddon().update_settings(settings)
    assert settings["USER_AGENT"] == f"docscraper/{__version__} (+mailto:ops@example.com)"


def test_addon_keeps_a_user_agent_the_operator_chose() -> None:
    settings = _settings({"DOCSCRAPER_CONTACT": "ops@example.com", "USER_AGENT": "acmebot/2.0 (+https://acme.test/)"})
    UserAgentAddon().update_settings(settings)
    assert settings["USER_AGENT"] == "acmebot/2.0 (+https://acme.test/)"
    config = DocscraperConfig.from_settings(settings)
    assert config.user_agent(settings) == "acmebot/2.0 (+https://acme.test/)"


def test_crawl_sends_the_contact(crawl: Crawl, shared_site: DocsServer) -> None:
    result = crawl(f"{shared_site.base_url}/docs/", "max_pages=2",
                   settings={"DOCSCRAPER_CONTACT": "https://ops.example.com/docscraper"})
    agents = {headers.get("User-Agent") for _, _, headers in shared_site.requests}
    assert agents == {f"docscraper/{__version__} (+https://ops.example.com/docscraper)"}
    assert "DOCSCRAPER_CONTACT is not set" not in result.stderr


def test_crawl_without_contact_says_so(crawl: Crawl, shared_site: DocsServer) -> None:
    result = crawl(f"{shared_site.base_url}/docs/", "max_pages=1", settings={"DOCSCRAPER_CONTACT": ""})
    agents = {headers.get("User-Agent") for _, _, headers in shared_site.requests}
    assert agents == {f"docscraper/{__version__}"}
    assert "DOCSCRAPER_CONTACT is not set" in result.stderr
