"""Initial schema: sources, pages, runs.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sources",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("scope", sa.JSON(), nullable=False),
        sa.Column("registered", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "pages",
        sa.Column("source_id", sa.Integer(), sa.ForeignKey("sources.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("page_id", sa.String(32), primary_key=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("canonical_url", sa.Text()),
        sa.Column("rel_path", sa.Text()),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("content_hash", sa.String(64)),
        sa.Column("etag", sa.Text()),
        sa.Column("last_modified", sa.Text()),
        sa.Column("http_status", sa.Integer()),
        sa.Column("title", sa.Text()),
        sa.Column("finder", sa.String(16)),
        sa.Column("depth", sa.Integer()),
        sa.Column("content_type", sa.Text()),
        sa.Column("first_seen", sa.DateTime(timezone=True)),
        sa.Column("last_seen", sa.DateTime(timezone=True)),
        sa.Column("last_changed", sa.DateTime(timezone=True)),
        sa.Column("last_run_id", sa.String(64)),
        sa.Column("failure_count", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text()),
        sa.Column("not_found_runs", sa.Integer(), nullable=False),
        sa.Column("chunk_count", sa.Integer()),
    )
    op.create_index("ix_pages_source_status", "pages", ["source_id", "status"])
    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("source_id", sa.Integer(), sa.ForeignKey("sources.id", ondelete="CASCADE"), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True)),
        sa.Column("close_reason", sa.String(64)),
        sa.Column("result", sa.String(16)),
        sa.Column("args", sa.JSON(), nullable=False),
        sa.Column("summary", sa.JSON()),
        sa.Column("report_path", sa.Text()),
        sa.Column("host", sa.String(255)),
        sa.Column("pid", sa.Integer()),
    )
    op.create_index("ix_runs_source_started", "runs", ["source_id", "started_at"])


def downgrade() -> None:
    op.drop_table("runs")
    op.drop_table("pages")
    op.drop_table("sources")
