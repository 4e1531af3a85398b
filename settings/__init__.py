"""Default Scrapy settings of the docscraper project (``scrapy.cfg``: ``default = settings``).

docscraper's own settings are namespaced ``DOCSCRAPER_*`` and documented in
:class:`docscraper.config.DocscraperConfig`; profiles (``settings.distributed``) import these and
change what differs.
"""

from __future__ import annotations

import os

from docscraper import USER_AGENT as _USER_AGENT

BOT_NAME = "docscraper"
SPIDER_MODULES = ["docscraper.spiders"]
NEWSPIDER_MODULE = "docscraper.spiders"
COMMANDS_MODULE = "docscraper.commands"

# -- docscraper -------------------------------------------------------------------------------------
DOCSCRAPER_DATA_DIR = os.environ.get("DOCSCRAPER_DATA_DIR", "data")
DOCSCRAPER_STATE_URL = os.environ.get("DOCSCRAPER_STATE_URL") or None
DOCSCRAPER_MAX_DELETE_RATIO = 0.5
DOCSCRAPER_GONE_AFTER = 2

# -- politeness -------------------------------------------------------------------------------------
USER_AGENT = _USER_AGENT
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 8
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 0.25
AUTOTHROTTLE_MAX_DELAY = 30.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 4.0
# A 304 lowers the delay as a 200 does, so an unchanged recrawl is not slower than a cold one.
EXTENSIONS = {
    "scrapy.extensions.throttle.AutoThrottle": None,
    "docscraper.throttle.ConditionalAutoThrottle": 0,
}
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 20 * 1024 * 1024
DOWNLOAD_WARNSIZE = 5 * 1024 * 1024
RETRY_TIMES = 2
REDIRECT_MAX_TIMES = 10

# -- identity, order and scope ----------------------------------------------------------------------
# Pages, not URLs: /page/, /page#x and /page?utm_source=y are one request.
REQUEST_FINGERPRINTER_CLASS = "docscraper.middlewares.PageFingerprinter"
DUPEFILTER_CLASS = "docscraper.middlewares.PageDupeFilter"
# The spider assigns depth itself (llms.txt and sitemap pages are depth 1 however deep their sitemap
# was) and records every refusal, so Scrapy's DepthMiddleware is replaced by that.
SPIDER_MIDDLEWARES = {"scrapy.spidermiddlewares.depth.DepthMiddleware": None}
DOWNLOADER_MIDDLEWARES = {"docscraper.middlewares.RedirectScopeMiddleware": 50}
# Breadth first: the pages nearest the seed come first, which is what max_pages should keep.
SCHEDULER_DISK_QUEUE = "scrapy.squeues.PickleFifoDiskQueue"
SCHEDULER_MEMORY_QUEUE = "scrapy.squeues.FifoMemoryQueue"

# -- pipelines --------------------------------------------------------------------------------------
ITEM_PIPELINES = {
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
