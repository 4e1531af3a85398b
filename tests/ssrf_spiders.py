"""A ``docs`` spider whose scope also takes the hosts of the ``SSRF_TEST_EXTRA_HOSTS`` setting (tests only).

docscraper's scope keeps a crawl on the source's host, so a link, sitemap entry or redirect to another
host is refused as ``outOfScope`` before the SSRF guard sees it. This spider stands for a scope that lets
another host in, to show that the guard refuses it all the same. Crawl with
``-s SPIDER_MODULES=tests.ssrf_spiders -s SSRF_TEST_EXTRA_HOSTS=127.0.0.2:8001,localhost:8000``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from docscraper.crawl.scope import Refusal, Scope
from docscraper.spiders.docs import DocsSpider

__all__ = ["WideDocsSpider", "WideScope"]


@dataclass(frozen=True)
class WideScope(Scope):
    """The source's scope, plus every URL on one of ``extra_hosts`` (``host:port``)."""

    extra_hosts: tuple[str, ...] = ()

    def check(self, url: str) -> Refusal | None:
        if urlsplit(url).netloc.lower() in self.extra_hosts:
            return None
        return super().check(url)


class WideDocsSpider(DocsSpider):
    name = "docs"

    async def start(self) -> AsyncIterator[Any]:
        # The run is open (its target resolved from the state) before the spider starts: widen its scope.
        resources = self.run_resources()
        target = resources.target
        if target is not None:
            hosts = tuple(h.strip().lower() for h in self.crawler.settings.getlist("SSRF_TEST_EXTRA_HOSTS"))
            s = target.scope
            wide = dataclasses.replace(target, scope=WideScope(s.prefix, s.allow, s.block, s.max_depth,
                                                               s.max_pages, hosts))
            resources.target = wide
            resources.outcomes.bind(wide)
        async for out in super().start():
            yield out
