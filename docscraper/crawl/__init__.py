"""The crawl's Scrapy components: who owns what while a ``docs`` crawl runs.

- :mod:`~docscraper.crawl.ledger`: the run ledger (each URL's outcome, page claims, pages emitted and
  what the run learned), in memory or in Redis (:mod:`~docscraper.crawl.distributed`);
- :mod:`~docscraper.crawl.resources`: the extension that opens the state store, the vector index, the
  embedder and their threads with the spider and closes them with it;
- :mod:`~docscraper.crawl.target`: what the run crawls (source, seed, scope, the pages the state knows);
- :mod:`~docscraper.crawl.scope` and :mod:`~docscraper.crawl.scope_middleware`: the scope rules; scope, depth,
  page budget and claims, decided in a spider middleware;
- :mod:`~docscraper.crawl.conditional`: the conditional-request validators (a downloader middleware);
- :mod:`~docscraper.crawl.reporter`: the run's row, live progress, the removal gate and the report.
"""
