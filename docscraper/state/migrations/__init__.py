"""Alembic migrations of the state database (run by :func:`docscraper.state.store.migrate`)."""
