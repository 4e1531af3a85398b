"""Content processing: discovery files (llms.txt, sitemaps, robots.txt ``Sitemap:`` lines), decoding, HTML to
Markdown extraction, images, and heading-aware chunking. Pure functions of their input: nothing here fetches,
stores or knows about a crawl."""
