"""Operating docscraper: registered sources (:mod:`~docscraper.ops.sources`), crawl status
(:mod:`~docscraper.ops.status`), starting crawls in the background (:mod:`~docscraper.ops.launch`) and the MCP
server (:mod:`~docscraper.ops.mcp_server`). The ``scrapy`` commands (:mod:`docscraper.commands`) are thin
wrappers over these."""
