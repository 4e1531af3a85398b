"""Revisit schedules: each page's next check, current interval, unchanged streak and the sitemap ``<lastmod>``
last seen for it (``failure_count`` already counts its consecutive failures, ``last_changed`` its last change);
a source's ``lastmod_untrusted_at``/``lastmod_note`` when its sitemap's ``<lastmod>`` values were found not to
say when pages change (:mod:`docscraper.crawl.schedule`).

Existing pages get no next check: each is due once, at its next due-only run.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pages") as batch:
        batch.add_column(sa.Column("next_check_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("check_interval", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("unchanged_checks", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("sitemap_lastmod", sa.String(64), nullable=True))
    op.create_index("ix_pages_source_next_check", "pages", ["source_id", "next_check_at"])
    with op.batch_alter_table("sources") as batch:
        batch.add_column(sa.Column("lastmod_untrusted_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("lastmod_note", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sources") as batch:
        batch.drop_column("lastmod_note")
        batch.drop_column("lastmod_untrusted_at")
    op.drop_index("ix_pages_source_next_check", table_name="pages")
    with op.batch_alter_table("pages") as batch:
        batch.drop_column("sitemap_lastmod")
        batch.drop_column("unchanged_checks")
        batch.drop_column("check_interval")
        batch.drop_column("next_check_at")
