"""Alembic environment: always run on a connection handed in by docscraper (never from an ini file)."""

from __future__ import annotations

from alembic import context

from docscraper.storage.state.models import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
