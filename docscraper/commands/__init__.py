"""docscraper's Scrapy commands (``COMMANDS_MODULE = "docscraper.commands"``)."""
