"""Content processing: fetched pages become normalized Markdown, and Markdown becomes chunks."""
