"""The extension that records a run: its row in the state database, its live progress, and at close the removal
decisions (DESIGN rules 3 and 4) and the stats JSON report.

:class:`RunReporter` starts the progress recorder on :data:`~docscraper.crawl.signals.run_opened`; on
:data:`~docscraper.crawl.signals.run_closing` it counts consecutive 404s, merges a shared run's parts, retires
``noindex`` pages, removes orphans and gone pages when :meth:`RunReporter.removal_gate` allows (chunks, then state
rows; within ``DOCSCRAPER_MAX_DELETE_RATIO`` unless ``DOCSCRAPER_FORCE_DELETE``), writes the report
(:mod:`docscraper.crawl.report`) and finishes the run's row. It sends :data:`~docscraper.crawl.signals.pages_removed`
and :data:`~docscraper.crawl.signals.run_finished`. Stats: ``docscraper/pages_removed``; counters ``chunks_deleted``,
``removal_errors``. The steps: docs/explanation/architecture.md.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any

from docscraper.content.documents import count_types
from docscraper.crawl.ledger import summarize
from docscraper.crawl.progress import ProgressRecorder
from docscraper.crawl.report import write_report
from docscraper.crawl.signals import pages_removed, run_closing, run_finished, run_opened
from docscraper.storage.state import RunRecord, iso_utc, utcnow
from docscraper.urls import page_id

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

    from docscraper.config import DocscraperConfig
    from docscraper.crawl.ledger import RunLedger
    from docscraper.crawl.outcomes import RunOutcomes
    from docscraper.crawl.resources import CrawlResources
    from docscraper.crawl.target import CrawlTarget

__all__ = ["RunReporter"]

logger = logging.getLogger(__name__)


class RunReporter:
    """See the module docstring. It acts on the run's signals only: idle in a crawl that has no run."""

    resources: CrawlResources
    ledger: RunLedger
    outcomes: RunOutcomes
    config: DocscraperConfig

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.progress: ProgressRecorder | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        reporter = cls(crawler)
        crawler.signals.connect(reporter.run_opened, signal=run_opened)
        crawler.signals.connect(reporter.run_closing, signal=run_closing)
        return reporter

    def bind(self, resources: CrawlResources) -> None:
        """Work on this run (done when the run opens, and when it closes)."""
        self.resources = resources
        self.ledger = resources.ledger
        self.outcomes = resources.outcomes
        self.config = resources.config

    def run_opened(self, resources: CrawlResources) -> None:
        """Live progress and heartbeat for ``scrapy status``, from now until close."""
        self.bind(resources)
        self.progress = ProgressRecorder(resources, self.config.progress_interval)
        self.progress.start()

    async def run_closing(self, resources: CrawlResources, reason: str) -> None:
        self.bind(resources)
        await self.close(reason)

    # the removal gate ------------------------------------------------------------------------------

    def result(self, reason: str) -> tuple[str, str | None]:
        ledger = self.ledger
        if reason != "finished" or self.resources.open_error:
            return "aborted", self.resources.open_error or f"closed with reason {reason}"
        if ledger.robots_unreachable:
            return "partial", "; ".join(ledger.robots_unreachable.values())
        if ledger.incomplete:
            return "partial", ledger.incomplete
        failed = ledger.count("failed")
        if failed:
            return "partial", f"{failed} URL(s) failed"
        return "success", None

    def removal_gate(self, reason: str, target: CrawlTarget) -> str | None:
        """Why orphans must not be removed this run (DESIGN rule 3), or None when they may be."""
        ledger = self.ledger
        if reason != "finished":
            return f"the crawl closed with reason {reason}"
        if ledger.frontier_cut:
            return f"the frontier was cut short ({ledger.frontier_cut})"
        if ledger.robots_unreachable:
            return "; ".join(ledger.robots_unreachable.values())
        if target.narrowed:
            return "this run narrowed the source's scope with one-time overrides"
        if ledger.discovery_error:
            return f"discovery did not complete ({ledger.discovery_error})"
        if ledger.incomplete:
            return ledger.incomplete
        return None

    async def _remove(self, target: CrawlTarget, page_ids: list[str]) -> int:
        """Retire pages: their chunks go first, then their state rows (DESIGN rule 1)."""
        resources = self.resources
        assert resources.store is not None
        if not page_ids:
            return 0
        chunks: dict[str, list[str]] = {}
        if resources.index is not None:
            try:
                # write-ahead (DESIGN rule 8): mark_removed clears it in the transaction that retires them
                await resources.db(resources.store.begin_index_writes, target.source.id, page_ids, self.ledger.run_id)
                for pid in page_ids:
                    chunks[pid] = sorted(await resources.call("index", resources.index.page_chunks,
                                                              target.source.name, pid))
                deleted = await resources.call("index", resources.index.delete_pages, target.source.name, page_ids)
            except Exception as exc:
                logger.error("Not removing %d pages: their chunks could not be deleted: %s", len(page_ids), exc)
                self.outcomes.count("removal_errors")
                return 0
            self.outcomes.count("chunks_deleted", deleted)
        removed = await resources.db(resources.store.mark_removed, target.source.id, page_ids, self.ledger.run_id,
                                     utcnow())
        pages = [{"pageId": pid, "url": target.known[pid].url, "contentHash": target.known[pid].content_hash,
                  "chunksDeleted": chunks.get(pid, [])} for pid in page_ids if pid in target.known]
        await self.crawler.signals.send_catch_log_async(pages_removed, resources=resources, pages=pages)
        return removed

    async def _retire_noindex(self, target: CrawlTarget, active: dict[str, Any]) -> int:
        """Retire the pages the index holds that said ``noindex`` this run, whatever the removal gate: each was
        fetched and asked for it. Their entries become ``removed``. Pages whose chunks could not be deleted are
        marked for a full fetch next run (a 304 would keep them), which decides them again."""
        noindex = self.outcomes.noindex_retirements()
        if not noindex:
            return 0
        store = self.resources.store
        assert store is not None
        pids = sorted(noindex)
        removed = await self._remove(target, pids)
        if not removed:
            await self.resources.db(store.mark_reindex, target.source.id, pids)
            return 0
        for pid in pids:
            entry = self.ledger.items[noindex[pid]]
            self.ledger.record(noindex[pid], "success", "removed", fetched_at=entry.get("fetchedAt"),
                               url=active[pid].url, pageId=pid, detail=f"noindex ({entry.get('detail')})")
        self.outcomes.stat("pages_removed", len(pids))
        return removed

    def _orphans(self, target: CrawlTarget) -> list[str]:
        ledger = self.ledger
        active = {pid for pid, rec in target.known.items() if rec.status == "active"}
        # A page that now redirects to another is not an orphan unless that page was processed: a redirect
        # loop between two linked pages leaves both unprocessed, and neither is removed.
        if ledger.redirected_to:
            processed: set[str] = set()
            for entry in ledger.items.values():
                if entry["status"] != "success":
                    continue
                processed.add(entry.get("pageId", ""))
                if entry.get("url"):
                    with contextlib.suppress(ValueError):
                        processed.add(page_id(entry["url"]))
            ledger.reached.update(pid for pid, dest in ledger.redirected_to.items() if dest not in processed)
        return sorted(pid for pid in active if pid not in ledger.reached)

    # close -----------------------------------------------------------------------------------------

    async def close(self, reason: str) -> None:
        try:
            await self._close(reason)
        finally:
            if self.progress is not None:
                self.progress.stop()

    async def _close(self, reason: str) -> None:
        resources = self.resources
        target = resources.target
        store = resources.store
        if not resources.opened or target is None or store is None:
            logger.error("Run %s did not open (%s); nothing was stored", self.ledger.run_id,
                         resources.open_error or reason)
            # it registered with a shared run when it opened: leave it, or it counts as a dead worker
            await self.ledger.withdraw()
            if store is not None and target is not None:
                # its run row exists: finish it, or `scrapy status` would call it died
                with contextlib.suppress(Exception):
                    await resources.db(store.finish_run, RunRecord(self.ledger.run_id, target.source.id,
                                                                   resources.started_at, utcnow(), reason, "aborted"))
            summary = {"runId": self.ledger.report_id, "source": target.source.name if target else None,
                       "closeReason": reason, "result": "aborted", "resultReason": resources.open_error or reason}
            await self.crawler.signals.send_catch_log_async(run_finished, resources=resources, report=summary,
                                                            path=None)
            return
        await self._reconcile_own_writes(target)
        failures, self.outcomes.failures = self.outcomes.failures, []
        if failures:
            await resources.db(store.record_failures, target.source.id, self.ledger.run_id, failures)
        merged = await self.ledger.close_worker(reason)
        if merged is None:
            await self._finish_worker(target, reason)
            return
        await self._report(target, merged)

    async def _report(self, target: CrawlTarget, reason: str) -> None:
        resources = self.resources
        ledger = self.ledger
        assert resources.store is not None
        now = utcnow()
        removal: dict[str, Any] = {"performed": False, "reason": "", "candidates": 0, "removed": 0,
                                   "refusedByCap": False, "retired": 0}
        active = {pid: rec for pid, rec in target.known.items() if rec.status == "active"}
        removal["noindex"] = await self._retire_noindex(target, active)
        gate = self.removal_gate(reason, target)
        orphans = self._orphans(target)
        removal["candidates"] = len(orphans)
        if gate is not None:
            removal["reason"] = f"no removal: {gate}"
        else:
            retiring = self.outcomes.retirements()
            retire = sorted(retiring)
            to_remove = orphans
            share = len(orphans) / len(active) if active else 0.0
            if orphans and share > self.config.max_delete_ratio and not self.config.force_delete:
                removal["refusedByCap"] = True
                removal["reason"] = (
                    f"refused: {len(orphans)} of {len(active)} pages ({share:.0%}) would be removed, over "
                    f"DOCSCRAPER_MAX_DELETE_RATIO={self.config.max_delete_ratio}; set DOCSCRAPER_FORCE_DELETE=1 "
                    "to remove them"
                )
                logger.warning("Orphan removal %s", removal["reason"])
                to_remove = []
            removed = await self._remove(target, to_remove + retire)
            removal["performed"] = True
            removal["removed"] = removed
            removal["retired"] = len(retire)
            removal["reason"] = removal["reason"] or "clean finish: pages not reached this run were removed"
            for pid in to_remove:
                rec = active[pid]
                ledger.record(rec.rel_path or target.key(rec.url), "success", "removed",
                              fetched_at=None, url=rec.url, pageId=pid, detail="not reached this run")
            for pid in retire:
                rec = active[pid]
                ledger.record(retiring[pid], "success", "removed", fetched_at=iso_utc(now), url=rec.url,
                              pageId=pid, detail="gone (410, or 404 on consecutive runs)")
            self.outcomes.stat("pages_removed", len(to_remove) + len(retire))
            await self._forget_aliases(target)
        await self._link_broken_links()
        self._list_aliases()
        result, result_reason = self.result(reason)
        items = ledger.items
        stats = self.crawler.stats
        scrapy_stats = ledger.scrapy_stats(stats.get_stats() if stats is not None else {})
        started_at = resources.started_at
        args = target.args
        report: dict[str, Any] = {
            "schemaVersion": 1,
            "runId": ledger.report_id,
            "scrapydJob": args.scrapyd_job,
            "source": target.source.name,
            "seedUrl": target.seed_url,
            "scopePrefix": target.scope.prefix,
            "startedAt": iso_utc(started_at),
            "lastUpdate": iso_utc(now),
            "durationSeconds": round((now - started_at).total_seconds(), 3),
            "closeReason": reason,
            "result": result,
            "resultReason": result_reason,
            "full": args.full,
            "due": args.due,
            "render": target.render,
            "scope": target.scope.as_dict(),
            "scopeOverrides": sorted(args.overrides),
            "frontierCut": ledger.frontier_cut,
            "schedule": await self._schedule(target),
            "removal": removal,
            "reconciled": resources.reconciled,
            "discovery": ledger.discovery,
            "stats": summarize(items),
            # the source's active pages by document type at the end of the run (html, pdf, docx...)
            "pageTypes": await self._page_types(target),
            "counters": dict(sorted(ledger.counters.items())),
            "scrapy": {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in sorted(scrapy_stats.items())},
            "items": dict(sorted(items.items())),
        }
        if resources.mirror is not None:
            report["mirror"] = await resources.call("mirror", resources.mirror.report, items)
        path = write_report(self.config.runs_dir, target.source.name, ledger.report_id, report)
        await ledger.expire()
        if self.progress is not None:
            await self.progress.close()
        await resources.db(
            resources.store.finish_run,
            RunRecord(resources.run_id, target.source.id, started_at, now, reason, result, dict(report["stats"]),
                      str(path)),
        )
        logger.info("Run %s %s: %s; report %s", ledger.report_id, result, _brief(report["stats"]), path)
        await self.crawler.signals.send_catch_log_async(run_finished, resources=resources, report=report, path=path)

    async def _page_types(self, target: CrawlTarget) -> dict[str, int]:
        """The report's ``pageTypes``: the source's active pages by document type (``html``, ``pdf``...)."""
        store = self.resources.store
        assert store is not None
        return count_types(await self.resources.db(store.content_type_counts, target.source.id))

    async def _schedule(self, target: CrawlTarget) -> dict[str, Any]:
        """The report's ``schedule``: pages not due this run, what is due now and next, whether lastmod is
        believed. A run that finds the source's lastmod untrustworthy records it in the state store."""
        resources = self.resources
        assert resources.store is not None
        revisit = resources.revisit
        now = revisit.now()
        watch = resources.lastmod
        verdict = watch.verdict() if watch is not None else None
        if verdict is not None and watch is not None and watch.trusted:
            logger.warning("Source %s: %s", target.source.name, verdict)
            await resources.db(resources.store.set_lastmod_trust, target.source.id, now, verdict)
        not_due = [entry.get("nextCheck") for entry in self.ledger.items.values()
                   if entry["statusReason"] == "notDue" and entry["status"] == "skipped"]
        summary = await resources.db(resources.store.schedule_summary, target.source.id, now)
        return {
            "due": target.args.due,
            "policy": revisit.kind,
            "notDue": len(not_due),
            "nextNotDue": min((n for n in not_due if n), default=None),
            "scheduled": summary.scheduled,
            "dueNow": summary.due_now,
            "nextDueAt": iso_utc(summary.next_due_at) if summary.next_due_at else None,
            "clockOffsetSeconds": revisit.offset.total_seconds(),
            "lastmod": watch.report() if watch is not None else {"trusted": True, "notes": []},
        }

    async def _reconcile_own_writes(self, target: CrawlTarget) -> None:
        """The pages this run wrote to the index without committing (a write failed): their chunks made to
        agree with their state rows now, so the index this run leaves matches the state (DESIGN rule 8)."""
        resources = self.resources
        if resources.store is None or resources.index is None:
            return
        from docscraper.storage.consistency import reconcile

        try:
            pending = await resources.db(resources.store.index_writes, target.source.id)
            mine = sorted(pid for pid, run_id in pending.items() if run_id == self.ledger.run_id)
            if not mine:
                return
            found = await resources.call("index", reconcile, resources.store, resources.index, target.source, mine)
        except Exception as exc:  # the next run reconciles them
            logger.warning("Cannot reconcile the index writes this run did not commit: %s", exc)
            return
        resources.note_reconciled(found, runs=[self.ledger.run_id], pages=mine)

    async def _forget_aliases(self, target: CrawlTarget) -> None:
        """Aliases the site no longer serves (not reached this run, or answering 404 or 410) are retired: they
        have no chunks, only their rows change. An alias that failed otherwise (5xx, a timeout) stays."""
        resources = self.resources
        assert resources.store is not None
        by_page = {entry.get("pageId"): entry for entry in self.ledger.items.values() if entry.get("pageId")}
        gone = sorted(pid for pid, rec in target.known.items() if rec.status == "alias" and (
            pid not in self.ledger.reached or by_page.get(pid, {}).get("statusReason") in ("brokenLink", "gone", "noindex")))
        if gone:
            await resources.db(resources.store.mark_removed, target.source.id, gone, self.ledger.run_id, utcnow())
            self.outcomes.count("aliases_removed", len(gone))

    def _list_aliases(self) -> None:
        """Each page's entry lists the URLs found to serve its content this run (``aliases``)."""
        by_page = {entry.get("pageId"): entry for entry in self.ledger.items.values()
                   if entry["status"] == "success" and entry.get("pageId")}
        for entry in self.ledger.items.values():
            holder = by_page.get(entry.get("aliasOf")) if entry.get("statusReason") == "duplicateContent" else None
            if holder is not None and entry.get("url"):
                holder["aliases"] = sorted({*holder.get("aliases", ()), entry["url"]})

    async def _link_broken_links(self) -> None:
        """Name, in each ``brokenLink`` entry's ``linkedFrom``, the pages whose links lead to it (the state's
        links of every active page, this run's included, as a reader fixing the site wants them)."""
        resources = self.resources
        assert resources.store is not None and resources.target is not None
        broken = {entry["pageId"]: key for key, entry in self.ledger.items.items()
                  if entry.get("statusReason") == "brokenLink" and entry.get("pageId")}
        if not broken:
            return
        try:
            linking = await resources.db(resources.store.linking_pages, resources.target.source.id, list(broken))
        except Exception as exc:  # the report goes out without them
            logger.warning("Cannot list the pages that link to %d broken link(s): %s", len(broken), exc)
            return
        for pid, key in broken.items():
            entry = self.ledger.items[key]
            pages = sorted(set(linking.get(pid, ())) | set(entry.get("linkedFrom") or ()))
            if pages:
                entry["linkedFrom"] = pages

    async def _finish_worker(self, target: CrawlTarget, reason: str) -> None:
        """Close a distributed worker that does not write the report: its own run row only."""
        resources = self.resources
        assert resources.store is not None
        if self.progress is not None:
            await self.progress.close()
        result, _ = self.result(reason)
        await resources.db(resources.store.finish_run,
                           RunRecord(resources.run_id, target.source.id, resources.started_at, utcnow(), reason,
                                     result, summarize(self.ledger.items)))
        logger.info("Run %s: worker done (%s); the last worker to close writes the report", resources.run_id, reason)


def _brief(stats: dict[str, int]) -> str:
    keys = ("success.new", "success.changed", "success.unchanged", "success.removed", "skipped", "failed")
    return ", ".join(f"{k} {stats.get(k, 0)}" for k in keys)
