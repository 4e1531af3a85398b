"""Operating sources: a per-page force-reindex mark, and a running crawl's live progress.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pages") as batch:
        batch.add_column(sa.Column("reindex_requested", sa.Boolean(), nullable=False, server_default=sa.false()))
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("progress", sa.JSON()))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("progress")
    with op.batch_alter_table("pages") as batch:
        batch.drop_column("reindex_requested")
