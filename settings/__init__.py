"""Default Scrapy settings of the docscraper project (``scrapy.cfg``: ``default = settings``).

docscraper's own settings are namespaced ``DOCSCRAPER_*`` and documented in
:class:`docscraper.config.DocscraperConfig`; profiles (``settings.distributed``) import these and
change what differs.
"""

from __future__ import annotations

import os

from scrapy.settings.default_settings import EXTENSIONS_BASE as _SCRAPY_EXTENSIONS_BASE

from docscraper import USER_AGENT as _USER_AGENT

BOT_NAME = "docscraper"
SPIDER_MODULES = ["docscraper.spiders"]
NEWSPIDER_MODULE = "docscraper.spiders"
COMMANDS_MODULE = "docscraper.commands"

# -- docscraper -------------------------------------------------------------------------------------
DOCSCRAPER_DATA_DIR = os.environ.get("DOCSCRAPER_DATA_DIR", "data")
# Where sites reach whoever runs the crawler (an http(s) URL or an e-mail address); the user agent names it
# (docscraper.crawl.agent.UserAgentAddon): docscraper/<version> (+<contact>).
DOCSCRAPER_CONTACT = os.environ.get("DOCSCRAPER_CONTACT") or None
# A JSON summary of every run, with its report's path, is POSTed here (docscraper.crawl.webhook); unset: none.
DOCSCRAPER_WEBHOOK_URL = os.environ.get("DOCSCRAPER_WEBHOOK_URL") or None
DOCSCRAPER_WEBHOOK_ON_ABORT = os.environ.get("DOCSCRAPER_WEBHOOK_ON_ABORT") or False
DOCSCRAPER_STATE_URL = os.environ.get("DOCSCRAPER_STATE_URL") or None
# A Chroma server (http://host:8000) instead of the persistent directory DATA_DIR/chroma.
DOCSCRAPER_CHROMA_URL = os.environ.get("DOCSCRAPER_CHROMA_URL") or None
DOCSCRAPER_MAX_DELETE_RATIO = 0.5
DOCSCRAPER_GONE_AFTER = 2
DOCSCRAPER_SSRF_GUARD_ENABLED = True
DOCSCRAPER_SSRF_ALLOWED_HOSTS: list[str] = []
# Private sources (docscraper.credentials): the folder of the files file:NAME credential references name (each
# mode 600); the references a server's client may give a source (none: clients name no credentials).
DOCSCRAPER_SECRETS_DIR = os.environ.get("DOCSCRAPER_SECRETS_DIR") or "~/.config/docscraper/secrets"
DOCSCRAPER_SERVER_CREDENTIALS: list[str] = []
# The Markdown mirror's folder (docscraper.storage.mirror); -a save_dir=DIR wins. Unset: no mirror.
DOCSCRAPER_SAVE_DIR = os.environ.get("DOCSCRAPER_SAVE_DIR") or None
# Where the MCP server's recrawl_source starts crawls (docscraper.ops.launch): unset, a detached
# `scrapy crawl` process here; a Scrapyd URL, a job there.
DOCSCRAPER_SCRAPYD_URL = os.environ.get("DOCSCRAPER_SCRAPYD_URL") or None
# The SSRF guard's check at connect time (DNS rebinding); docscraper.crawl.ssrf.SsrfGuardHostnameResolver
# resolves IPv6 too.
TWISTED_DNS_RESOLVER = "docscraper.crawl.ssrf.SsrfGuardResolver"

# -- politeness -------------------------------------------------------------------------------------
USER_AGENT = _USER_AGENT
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 8
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 0.25
AUTOTHROTTLE_MAX_DELAY = 30.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 4.0
EXTENSIONS = {
    # secret settings' values and credentials in URLs replaced by *** in every log record (DESIGN rule 9)
    "docscraper.crawl.redaction.LogRedaction": -100,
    # the run's ledger, state store, vector index, embedder and threads, opened and closed with the spider
    "docscraper.crawl.resources.CrawlResources": 0,
    # the run's row, live progress, and at close the removal decisions and the stats report
    "docscraper.crawl.reporter.RunReporter": 10,
    # runs/<source>/<run-id>.changes.jsonl, and the run's summary POSTed to DOCSCRAPER_WEBHOOK_URL
    "docscraper.crawl.changefeed.ChangeFeed": 20,
    "docscraper.crawl.webhook.RunWebhook": 20,
    # a loader's child crawl streams its documents back (docscraper.library.loader); off unless DOCSCRAPER_STREAM_FD
    "docscraper.crawl.stream.DocumentStream": 20,
    # Twisted's timers (new connections, DOWNLOAD_TIMEOUT) on the monotonic clock: a step of the wall clock
    # neither stalls the crawl nor times out its downloads
    "docscraper.crawl.clock.MonotonicReactorClock": -100,
    # A 304 lowers the delay as a 200 does, so an unchanged recrawl is not slower than a cold one.
    "scrapy.extensions.throttle.AutoThrottle": None,
    "docscraper.crawl.throttle.ConditionalAutoThrottle": 0,
    # a progress line on a terminal; a crawl without progress for DOCSCRAPER_WATCHDOG_SECONDS stops
    "docscraper.crawl.progress.ProgressLine": 0,
    "docscraper.crawl.watchdog.Watchdog": 0,
}
# Scrapy's own extensions but RemoteControl (off: REMOTE_CONTROL_ENABLED below). Disabling it in EXTENSIONS
# would still import it (Scrapy loads every EXTENSIONS key to compare it with the others), and it imports
# aiohttp: 0.09 s of every crawl's start. Taken from Scrapy's defaults, so a new built-in extension stays on.
EXTENSIONS_BASE = {path: order for path, order in _SCRAPY_EXTENSIONS_BASE.items()
                   if path != "scrapy.extensions.remote_control.RemoteControl"}
DOWNLOAD_TIMEOUT = 30
# file:// sources: read only inside the source folder, typed by extension (docscraper.crawl.localfiles).
# http(s): Scrapy's HTTP/1.1 handler, and Chromium through scrapy-playwright for the page requests of a
# run that renders (-a render=js); the browser starts with the first rendered page (docscraper.crawl.rendering).
DOWNLOAD_HANDLERS = {
    "file": "docscraper.crawl.localfiles.LocalFileDownloadHandler",
    "http": "docscraper.crawl.rendering.RenderingDownloadHandler",
    "https": "docscraper.crawl.rendering.RenderingDownloadHandler",
}
# docscraper's Chromium launch options (Debian's chromium, headless, quiet) in PLAYWRIGHT_LAUNCH_OPTIONS
# and USER_AGENT with the operator's DOCSCRAPER_CONTACT (docscraper.crawl.agent)
ADDONS = {"docscraper.crawl.rendering.RenderingAddon": 0, "docscraper.crawl.agent.UserAgentAddon": 0}
# scrapy-playwright needs the asyncio reactor (Scrapy's default, stated here so no profile loses it).
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
DOCSCRAPER_CHROMIUM_PATH = os.environ.get("DOCSCRAPER_CHROMIUM_PATH", "/usr/bin/chromium")
# Chromium tabs open at once; each holds a whole rendered page in memory.
PLAYWRIGHT_MAX_PAGES_PER_CONTEXT = 4
DOWNLOAD_MAXSIZE = 20 * 1024 * 1024
DOWNLOAD_WARNSIZE = 5 * 1024 * 1024
RETRY_TIMES = 2
REDIRECT_MAX_TIMES = 10

# -- identity, order and scope ----------------------------------------------------------------------
# Pages, not URLs: /page/, /page#x and /page?utm_source=y are one request.
REQUEST_FINGERPRINTER_CLASS = "docscraper.crawl.identity.PageFingerprinter"
DUPEFILTER_CLASS = "docscraper.crawl.identity.PageDupeFilter"
# Scope, depth, page budget and claims: ScopeMiddleware judges every request and page the spider yields
# (llms.txt and sitemap pages are depth 1 however deep their sitemap was) and records every refusal, so it
# replaces Scrapy's DepthMiddleware. It runs nearest the spider (the highest order number).
SPIDER_MIDDLEWARES = {
    "scrapy.spidermiddlewares.depth.DepthMiddleware": None,
    "docscraper.crawl.scope_middleware.ScopeMiddleware": 950,
}
DOWNLOADER_MIDDLEWARES = {
    # one download slot per origin (scheme, host, port): a Retry-After pauses that server, not its host
    "docscraper.crawl.ratelimit.OriginSlotMiddleware": 30,
    # SSRF guard: no request (redirect hops, discovery and robots.txt included) to loopback, private,
    # link-local... addresses other than the source's host; first, so robots.txt is not asked first.
    "docscraper.crawl.ssrf.SsrfGuardMiddleware": 40,
    "docscraper.crawl.identity.RedirectScopeMiddleware": 50,
    # a redirect to no http(s) URL (malformed, javascript:, file:) refuses the page; before RedirectMiddleware
    "docscraper.crawl.identity.RedirectTargetMiddleware": 650,
    # robots.txt per RFC 9309 (a 5xx or unreachable robots.txt disallows the host), in Scrapy's slot.
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "docscraper.crawl.robots.RobotsTxtMiddleware": 100,
    # If-None-Match / If-Modified-Since from the state, for pages the index holds (304 = unchanged)
    "docscraper.crawl.conditional.ConditionalRequestMiddleware": 450,
    # a private source's credentials on its own origin's requests only; after CookiesMiddleware (700), whose
    # Cookie header it adds to on that origin and takes its cookies out of elsewhere
    "docscraper.crawl.auth.CredentialsMiddleware": 720,
    # Retry-After pauses, Crawl-delay, stop on repeated 429s; between RetryMiddleware (550) and the
    # downloader, so it sees a 429 before it is retried.
    "docscraper.crawl.ratelimit.RateLimitMiddleware": 560,
}
# Breadth first: the pages nearest the seed come first, which is what max_pages should keep.
SCHEDULER_DISK_QUEUE = "scrapy.squeues.PickleFifoDiskQueue"
SCHEDULER_MEMORY_QUEUE = "scrapy.squeues.FifoMemoryQueue"

# -- pipelines --------------------------------------------------------------------------------------
ITEM_PIPELINES = {
    # before change detection, so an unchanged page whose mirror file was deleted is written again
    "pipelines.mirror.MirrorPipeline": 50,
    "pipelines.change_detection.ChangeDetectionPipeline": 100,
    "pipelines.chunking.ChunkingPipeline": 200,
    "pipelines.embedding.EmbeddingPipeline": 300,
    "pipelines.index.IndexPipeline": 400,
    "pipelines.state_commit.StateCommitPipeline": 900,
}
DEFAULT_DROPITEM_LOG_LEVEL = "DEBUG"

# A crawler of other people's sites opens no ports of its own.
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False

# -- output -----------------------------------------------------------------------------------------
LOG_LEVEL = os.environ.get("DOCSCRAPER_LOG_LEVEL", "INFO")
FEED_EXPORT_ENCODING = "utf-8"
FEED_EXPORT_FIELDS = ["url", "title", "markdown", "metadata"]
