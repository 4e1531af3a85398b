"""Images of a page's main content: url, alt text, figure caption and title, as child rows of the page.

Linked to the page by (source_id, page_id) without a foreign key to ``pages``: a later batch migration of
``pages`` on SQLite drops and rebuilds that table, which a cascade would turn into deleting every image.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "images",
        sa.Column("source_id", sa.Integer(), sa.ForeignKey("sources.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("page_id", sa.String(32), primary_key=True),
        sa.Column("position", sa.Integer(), primary_key=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("alt", sa.Text(), nullable=False),
        sa.Column("caption", sa.Text()),
        sa.Column("title", sa.Text()),
    )


def downgrade() -> None:
    op.drop_table("images")
