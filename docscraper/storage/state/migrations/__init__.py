"""Alembic migrations of the state database (run by :func:`docscraper.storage.state.store.migrate`)."""
