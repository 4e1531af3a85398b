"""State identity and removed sources: ``state_info`` (key/value; ``state_id``, a random id given to the
database when it is created, or when an older one is upgraded) and ``removed_sources`` (a tombstone per
removed source: its id and name, so chunks a half-finished removal left in the index are still known as
this state's own and a repair may delete them; DESIGN rule 10).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    info = op.create_table(
        "state_info",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
    )
    op.bulk_insert(info, [{"key": "state_id", "value": uuid.uuid4().hex}])
    op.create_table(
        "removed_sources",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("removed_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("removed_sources")
    op.drop_table("state_info")
