"""Storage and search: the state database (:mod:`~docscraper.storage.state`), the vector index
(:mod:`~docscraper.storage.vectors`), the embedding model (:mod:`~docscraper.storage.embedding`), the keyword
index (:mod:`~docscraper.storage.lexical`), hybrid search (:mod:`~docscraper.storage.search`) and the Markdown
mirror (:mod:`~docscraper.storage.mirror`). Each sits behind a small interface; the crawl chooses the
implementations by dotted path in settings."""
