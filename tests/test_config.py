from __future__ import annotations

import pytest
from scrapy.settings import Settings

from docscraper.config import ConfigError, CrawlArgs, DocscraperConfig


def test_defaults() -> None:
    args = CrawlArgs.parse({"source": "https://docs.example.com/"})
    assert args.is_url and args.allow == () and args.max_depth is None and not args.full
    assert args.overrides == frozenset()


def test_parses_every_argument() -> None:
    args = CrawlArgs.parse(
        {
            "source": "https://h/docs/",
            "allow": "guide/**, !guide/old/**",
            "block": "archive/**",
            "max_depth": "3",
            "max_pages": "50",
            "llms_txt": "https://h/llms.txt",
            "full": "1",
        }
    )
    assert args.allow == ("guide/**", "!guide/old/**")
    assert args.block == ("archive/**",)
    assert (args.max_depth, args.max_pages, args.full) == (3, 50, True)
    assert args.overrides == {"allow", "block", "max_depth", "max_pages", "llms_txt"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "missing source"),
        ({"source": "ftp://h/"}, "only http, https and file"),
        ({"source": "https://h:99999/"}, "invalid port"),
        ({"source": "Not A Name!"}, "neither a URL"),
        ({"source": "https://h/", "max_depth": "-1"}, "max_depth must be 0 or more"),
        ({"source": "https://h/", "max_pages": "0"}, "max_pages must be 1 or more"),
        ({"source": "https://h/", "max_pages": "ten"}, "max_pages must be a whole number"),
        ({"source": "https://h/", "full": "maybe"}, "full must be 1 or 0"),
        ({"source": "https://h/", "block": "https://h/archive/**"}, "patterns match URL paths"),
        ({"source": "https://h/", "allow": "guide/[ab"}, "unbalanced brackets"),
        ({"source": "https://h/", "allow": "!"}, "empty pattern"),
        ({"source": "https://h/", "maxpages": "3"}, "unknown argument(s) maxpages"),
        ({"source": "https://h/", "llms_txt": "llms.txt"}, "llms_txt must be an http(s) or file URL"),
    ],
)
def test_bad_arguments_have_one_clear_message(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        CrawlArgs.parse(kwargs)
    assert message in str(excinfo.value)
    assert "\n" not in str(excinfo.value)


def test_config_from_settings(tmp_path: object) -> None:
    settings = Settings({"DOCSCRAPER_DATA_DIR": "/tmp/x", "DOCSCRAPER_MAX_DELETE_RATIO": "0.25"})
    config = DocscraperConfig.from_settings(settings)
    assert config.max_delete_ratio == 0.25
    assert config.state_url == "sqlite:////tmp/x/state.db"
    assert str(config.runs_dir) == "/tmp/x/runs"
    with pytest.raises(ConfigError, match="DOCSCRAPER_MAX_DELETE_RATIO must be between 0 and 1"):
        DocscraperConfig.from_settings(Settings({"DOCSCRAPER_MAX_DELETE_RATIO": 2}))
    with pytest.raises(ConfigError, match="DOCSCRAPER_GONE_AFTER must be 1 or more"):
        DocscraperConfig.from_settings(Settings({"DOCSCRAPER_GONE_AFTER": 0}))
