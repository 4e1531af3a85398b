"""The run's webhook: a JSON summary POSTed to ``DOCSCRAPER_WEBHOOK_URL`` once the run's report is written.

:class:`RunWebhook` listens for :data:`~docscraper.crawl.signals.run_finished` and sends :func:`summary` (valid
against ``docscraper/schema/webhook.schema.json``) from a thread of its own, so the crawl's close never waits for the
receiver; the process waits for the thread only at its exit. A network error, a timeout, a 5xx, 408 or 429 is
tried again (:func:`deliver`); another 4xx is not. An aborted run sends nothing unless
``DOCSCRAPER_WEBHOOK_ON_ABORT``. Settings: ``DOCSCRAPER_WEBHOOK_URL`` (unset: ``NotConfigured``),
``DOCSCRAPER_WEBHOOK_ON_ABORT``, ``DOCSCRAPER_WEBHOOK_RETRIES``, ``DOCSCRAPER_WEBHOOK_BACKOFF``,
``DOCSCRAPER_WEBHOOK_TIMEOUT``; the ``User-Agent`` is the crawl's. Stats: ``docscraper/webhook/skipped`` (an aborted
run). The body and the retries: docs/reference/output.md.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from docscraper.crawl.changefeed import changes_path
from docscraper.crawl.signals import run_finished

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Self

    from scrapy.crawler import Crawler

    from docscraper.crawl.resources import CrawlResources

__all__ = ["RunWebhook", "deliver", "summary"]

logger = logging.getLogger(__name__)

_COUNTS = {"new": "success.new", "changed": "success.changed", "unchanged": "success.unchanged",
           "removed": "success.removed", "skipped": "skipped", "failed": "failed"}
_RETRY_STATUSES = {408, 429}


def summary(report: dict[str, Any], path: Path | None, changes: Path | None) -> dict[str, Any]:
    """The webhook's body for a run's *report* written at *path* (None: the run did not open)."""
    stats = report.get("stats") or {}
    body: dict[str, Any] = {
        "event": "docscraper.run.finished",
        "schemaVersion": 1,
        "source": report.get("source"),
        "runId": report.get("runId"),
        "result": report.get("result"),
        "resultReason": report.get("resultReason"),
        "closeReason": report.get("closeReason"),
        "report": str(path) if path is not None else None,
        "changes": str(changes) if changes is not None and changes.exists() else None,
        "counts": {name: int(stats.get(key, 0)) for name, key in _COUNTS.items()},
    }
    for key in ("seedUrl", "lastUpdate"):
        if key in report:
            body[key] = report[key]
    return body


def deliver(url: str, body: dict[str, Any], *, user_agent: str, retries: int, backoff: float,
            timeout: float) -> bool:
    """POST *body* as JSON to *url*, trying again after failures that may pass; True once a 2xx came back."""
    data = json.dumps(body).encode("utf-8")
    delay = backoff
    headers = {"Content-Type": "application/json", "User-Agent": user_agent}
    parts = urlsplit(url)
    if parts.username is not None:  # urllib does not send a URL's credentials: HTTP basic auth does
        token = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(token).decode("ascii")
        url = urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, parts.query, parts.fragment))
    # a webhook's path is often its secret (Slack, Discord...): messages name its server only
    shown = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}/{'…' if parts.path.strip('/') or parts.query else ''}"
    for attempt in range(retries + 1):
        request = urllib.request.Request(url, data=data, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status = response.status
        except urllib.error.HTTPError as exc:
            status = exc.code
            problem = f"HTTP {exc.code}"
        except (OSError, ValueError) as exc:
            status = None
            problem = f"{exc.__class__.__name__}: {exc}"
        else:
            problem = f"HTTP {status}"
        if status is not None and 200 <= status < 300:
            logger.info("Webhook: run %s posted to %s (HTTP %d)", body.get("runId"), shown, status)
            return True
        retryable = status is None or status >= 500 or status in _RETRY_STATUSES
        if not retryable or attempt == retries:
            logger.error("Webhook: run %s not delivered to %s after %d tries: %s", body.get("runId"), shown,
                         attempt + 1, problem)
            return False
        logger.warning("Webhook: %s from %s; trying again in %.1f s", problem, shown, delay)
        time.sleep(delay)
        delay *= 2
    return False


class RunWebhook:
    """See the module docstring."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.thread: threading.Thread | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        # The run's parsed settings come with its signals (extensions cannot look the resources up while
        # they are being built): without DOCSCRAPER_WEBHOOK_URL it does nothing.
        webhook = cls(crawler)
        crawler.signals.connect(webhook.run_finished, signal=run_finished)
        return webhook

    def run_finished(self, resources: CrawlResources, report: dict[str, Any], path: Path | None) -> None:
        self.config = config = resources.config
        if not config.webhook_url:
            return
        self.url = config.webhook_url
        self.user_agent = config.user_agent(self.crawler.settings)
        if report.get("result") == "aborted" and not self.config.webhook_on_abort:
            logger.info("Webhook: run %s aborted (%s); not sent (DOCSCRAPER_WEBHOOK_ON_ABORT is off)",
                        report.get("runId"), report.get("resultReason"))
            if self.crawler.stats is not None:
                self.crawler.stats.inc_value("docscraper/webhook/skipped")
            return
        source = report.get("source")
        changes = (changes_path(self.config.runs_dir, source, str(report.get("runId")))
                   if source and self.config.changes_enabled else None)
        body = summary(report, path, changes)
        # not a daemon: the process waits for the delivery at exit, after the crawl has closed
        self.thread = threading.Thread(
            target=deliver, args=(self.url, body),
            kwargs={"user_agent": self.user_agent, "retries": self.config.webhook_retries,
                    "backoff": self.config.webhook_backoff, "timeout": self.config.webhook_timeout},
            name="docscraper-webhook", daemon=False)
        self.thread.start()
