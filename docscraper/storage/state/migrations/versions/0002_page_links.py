"""Store each page's outgoing links, so a 304 (no body) still leads the crawl to the pages it links.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pages") as batch:
        batch.add_column(sa.Column("links", sa.JSON()))


def downgrade() -> None:
    with op.batch_alter_table("pages") as batch:
        batch.drop_column("links")
