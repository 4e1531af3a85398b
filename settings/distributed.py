"""Settings profile for several workers crawling one source together (``docscraper.crawl.distributed``).

``SCRAPY_SETTINGS_MODULE=settings.distributed scrapy crawl docs -a source=URL -a run=<shared run id>`` on
each worker, on one machine or many. Everything is as in :mod:`settings` except the frontier, which
lives in Redis (``DOCSCRAPER_REDIS_URL``), so that the workers share one queue and one dupefilter. The
state database (``DOCSCRAPER_STATE_URL``: SQLite in WAL mode for workers on one machine, PostgreSQL for
many) and Chroma (``DOCSCRAPER_CHROMA_URL``, a ``chroma run`` server) must be shared too.
"""

from __future__ import annotations

import os

from settings import *  # noqa: F403

# The run ledger in Redis: claims, emitted pages and the page budget shared by every worker, each worker's
# outcomes merged into one report by the last to close. This and the scheduler are what make a run shared.
DOCSCRAPER_LEDGER_CLASS = "docscraper.crawl.distributed.RedisLedger"
REDIS_URL = os.environ.get("DOCSCRAPER_REDIS_URL", "redis://127.0.0.1:6379/0")
# scrapy-redis's scheduler on the run's keys (docscraper:<run>:*), with the run's coordinator; it keeps
# the shared queue when a worker closes (SCHEDULER_PERSIST, forced on). Its dupefilter is PageDupeFilter
# over a Redis set: the same page fingerprint (PageFingerprinter).
SCHEDULER = "docscraper.crawl.distributed.DistributedScheduler"
DUPEFILTER_CLASS = "docscraper.crawl.distributed.RedisPageDupeFilter"
SCHEDULER_QUEUE_CLASS = "scrapy_redis.queue.PriorityQueue"
SCHEDULER_PERSIST = True
DOCSCRAPER_DISTRIBUTED_HEARTBEAT = float(os.environ.get("DOCSCRAPER_DISTRIBUTED_HEARTBEAT", "0.5"))
DOCSCRAPER_DISTRIBUTED_TTL = float(os.environ.get("DOCSCRAPER_DISTRIBUTED_TTL", "10"))
DOCSCRAPER_DISTRIBUTED_IDLE_GRACE = float(os.environ.get("DOCSCRAPER_DISTRIBUTED_IDLE_GRACE", "2"))
