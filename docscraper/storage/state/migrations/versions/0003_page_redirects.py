"""Store each page's redirect chain: the URLs from the first one requested to the one that answered.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pages") as batch:
        batch.add_column(sa.Column("redirects", sa.JSON()))


def downgrade() -> None:
    with op.batch_alter_table("pages") as batch:
        batch.drop_column("redirects")
