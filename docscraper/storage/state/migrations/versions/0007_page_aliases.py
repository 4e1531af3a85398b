"""Pages whose content is another page's: ``pages.alias_of`` names the page that holds it in the index (the
alias row has status ``alias``, its own URL and validators, and no chunks).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pages") as batch:
        batch.add_column(sa.Column("alias_of", sa.String(32)))


def downgrade() -> None:
    with op.batch_alter_table("pages") as batch:
        batch.drop_column("alias_of")
