"""``scrapy sources add|list|show|remove``: the registry of documentation sources.

``scrapy sources add NAME URL [--allow GLOBS] [--block GLOBS] [--max-depth N] [--max-pages N]
[--llms-txt URL] [--render js|none] [--no-probe] [--json]`` probes the site, says what it found and stores the source;
``scrapy sources list [--json]``; ``scrapy sources show NAME [--json]``; ``scrapy sources remove NAME
--yes`` deletes the source's chunks, pages, runs and reports. See :mod:`docscraper.ops.sources`.

Exit status: 0 done; 2 bad usage or input (a name, URL, glob or number; ``remove`` without ``--yes``);
1 anything else (unknown source, name or URL taken, site unreachable, state or index unavailable). An
error is one ``error: ...`` line on stderr.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from docscraper.config import ConfigError
from docscraper.credentials import CredentialError, CredentialRefs
from docscraper.ops.cli import ToolCommand

if TYPE_CHECKING:
    import argparse

    from docscraper.config import DocscraperConfig
    from docscraper.ops.sources import ProbeResult, SourceInfo

_ACTIONS = ("add", "list", "show", "update", "remove")


def scope_text(scope: dict[str, Any]) -> str:
    """A source's scope in one line, for people: only what narrows the prefix."""
    parts = []
    for key in ("allow", "block"):
        if scope.get(key):
            parts.append(f"{key} {','.join(scope[key])}")
    for key in ("max_depth", "max_pages"):
        if scope.get(key) is not None:
            parts.append(f"{key} {scope[key]}")
    for key in ("llms_txt", "render"):
        if scope.get(key):
            parts.append(f"{key} {scope[key]}")
    return "; ".join(parts) or "whole prefix"


def _run_text(run: dict[str, Any] | None) -> tuple[str, str]:
    if run is None:
        return "never", "-"
    when = str(run.get("finished_at") or run.get("started_at") or "")
    return when.replace("T", " ")[:19], str(run.get("result") or "unfinished")


class Command(ToolCommand):
    json_help = "print JSON"


    def syntax(self) -> str:
        return ("add NAME URL [--allow GLOBS] [--block GLOBS] [--max-depth N] [--max-pages N] [--llms-txt URL] "
                "[--auth-headers|--auth-basic|--auth-cookies env:NAME|file:NAME] [--library LIB [--version V] [--latest]] "
                "| list | show NAME | remove NAME --yes  [--json]")

    def short_desc(self) -> str:
        return "Register, list, show and remove documentation sources"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--allow", action="append", default=[], metavar="GLOBS",
                            help="add: comma-separated globs a page must match (repeatable)")
        parser.add_argument("--block", action="append", default=[], metavar="GLOBS",
                            help="add: comma-separated globs that exclude pages (repeatable)")
        parser.add_argument("--max-depth", metavar="N", help="add: link depth limit (0: the source page only)")
        parser.add_argument("--max-pages", metavar="N", help="add: at most N pages per crawl")
        parser.add_argument("--llms-txt", metavar="URL", help="add: an llms.txt auto-detection cannot find")
        parser.add_argument("--render", metavar="MODE", help="add: js renders pages in Chromium; none (default)")
        parser.add_argument("--auth-headers", metavar="REF",
                            help="add: request headers of a private site, 'Name: value' lines kept in env:NAME or "
                                 "file:NAME (DOCSCRAPER_SECRETS_DIR); the reference is stored, never the value")
        parser.add_argument("--auth-basic", metavar="REF", help="add: HTTP basic auth 'user:password' in env:NAME "
                                                                "or file:NAME")
        parser.add_argument("--auth-cookies", metavar="REF", help="add: cookies (a Netscape cookies.txt, or "
                                                                  "'name=value; ...') in env:NAME or file:NAME")
        parser.add_argument("--library", help="add: the library this source is a version of")
        parser.add_argument("--version", dest="library_version", metavar="VERSION",
                            help="add: its version (default: the version its URL names, such as /en/5.0/)")
        parser.add_argument("--latest", action="store_true",
                            help="add: searches of the library read this version unless told (default: the highest)")
        parser.add_argument("--schedule", metavar="SPEC",
                            help="add/update: recrawl on a schedule: an interval (6h, 1d) or a cron expression "
                                 "('0 3 * * *', UTC); none clears it (scrapy schedule starts the due ones)")
        parser.add_argument("--no-latest", action="store_true", help="update: no longer the latest version")
        parser.add_argument("--no-auth", action="store_true", help="update: forget where its credentials are kept")
        parser.add_argument("--no-probe", action="store_true", help="add: store without probing the site")
        parser.add_argument("--yes", action="store_true", help="remove: confirm")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        unknown = [a for a in args if a.startswith("-")]
        if unknown:
            return self.fail(f"unknown option(s) {' '.join(unknown)}; see scrapy sources -h", 2)
        if not args or args[0] not in _ACTIONS:
            return self.fail(f"give one of {', '.join(_ACTIONS)}: scrapy sources add NAME URL | list | "
                              "show NAME | update NAME ... | remove NAME --yes", 2)
        action, rest = args[0], args[1:]
        wanted = {"add": 2, "list": 0, "show": 1, "remove": 1, "update": 1}[action]
        if len(rest) != wanted:
            usage = {"add": "add NAME URL", "list": "list", "show": "show NAME", "remove": "remove NAME --yes",
                     "update": "update NAME [--library L] [--version V] [--latest|--no-latest] [--auth-... REF] "
                               "[--no-auth]"}
            return self.fail(f"usage: scrapy sources {usage[action]}", 2)
        if action != "add" and (opts.allow or opts.block or opts.max_depth or opts.max_pages or opts.llms_txt
                                or opts.render or opts.no_probe):
            return self.fail(f"scope options go with add, not {action}", 2)
        if action not in ("add", "update") and (opts.auth_headers or opts.auth_basic or opts.auth_cookies
                                                or opts.library or opts.library_version or opts.latest
                                                or opts.schedule):
            return self.fail(f"library and credential options go with add or update, not {action}", 2)
        if action != "update" and (opts.no_latest or opts.no_auth):
            return self.fail(f"--no-latest and --no-auth go with update, not {action}", 2)
        # the registry is imported here, not with the module: Scrapy imports every command module to list them
        from docscraper.ops.sources import SourceError, get_source_info

        assert self.settings is not None
        try:
            config = self.config()
            if action == "add":
                self._add(config, rest[0], rest[1], opts)
            elif action == "list":
                self._list(config, opts)
            elif action == "show":
                self._show(get_source_info(config, rest[0]), opts)
            elif action == "update":
                self._update(config, rest[0], opts)
            else:
                self._remove(config, rest[0], opts)
        except ConfigError as exc:
            self.fail(str(exc), 2)
        except SourceError as exc:
            self.fail(str(exc), exc.exit_code)
        return None

    def _add(self, config: DocscraperConfig, name: str, url: str, opts: argparse.Namespace) -> None:
        from docscraper.ops.sources import add_source

        assert self.settings is not None
        try:
            credentials = CredentialRefs.parse({"headers": opts.auth_headers, "basic": opts.auth_basic,
                                                "cookies": opts.auth_cookies})
        except CredentialError as exc:
            raise ConfigError(str(exc)) from None
        info, probe = add_source(
            config, name, url, allow=opts.allow, block=opts.block, max_depth=opts.max_depth,
            max_pages=opts.max_pages, llms_txt=opts.llms_txt, render=opts.render, probe=not opts.no_probe,
            timeout=min(float(self.settings.getfloat("DOWNLOAD_TIMEOUT", 30)), 30.0),
            user_agent=config.user_agent(self.settings), credentials=credentials,
            library=opts.library, version=opts.library_version, latest=opts.latest, schedule=opts.schedule,
        )
        if opts.json:
            self.print_json({"source": info.as_dict(), "probe": probe.as_dict() if probe else None})
            return
        if probe is not None:
            print(probe_text(probe))
        # a new source has never run; one that has was created by a crawl of its URL, and is adopted
        adopted = f" (adopted, with the {info.pages} pages an earlier crawl stored)" if info.last_run else ""
        print(f"Added source {info.name}: {info.url}{adopted}")
        print(f"  scope   {info.scope.get('prefix')} ({scope_text(info.scope)})")
        if credentials:
            print(f"  credentials  {credentials.describe()} (read when a crawl starts; sent to its origin only)")
        if info.scope.get("library"):
            print(f"  library {info.scope['library']} {info.scope['version']}"
                  + (" (latest)" if info.scope.get("latest") else ""))
        print(f"Crawl it with: scrapy recrawl {info.name}")

    def _update(self, config: DocscraperConfig, name: str, opts: argparse.Namespace) -> None:
        from docscraper.ops.sources import update_source

        if opts.latest and opts.no_latest:
            raise ConfigError("--latest and --no-latest contradict each other")
        try:
            credentials = CredentialRefs.parse({"headers": opts.auth_headers, "basic": opts.auth_basic,
                                                "cookies": opts.auth_cookies})
        except CredentialError as exc:
            raise ConfigError(str(exc)) from None
        info = update_source(config, name, library=opts.library, version=opts.library_version,
                             latest=True if opts.latest else False if opts.no_latest else None,
                             credentials=credentials, clear_credentials=opts.no_auth, schedule=opts.schedule)
        if opts.json:
            self.print_json(info.as_dict())
            return
        print(f"Updated source {info.name}")
        self._show(info, opts)

    def _list(self, config: DocscraperConfig, opts: argparse.Namespace) -> None:
        from docscraper.ops.sources import list_sources

        infos = list_sources(config)
        if opts.json:
            self.print_json([i.as_dict() for i in infos])
            return
        if not infos:
            print("No sources. Add one with: scrapy sources add NAME URL")
            return
        libraries = any(i.scope.get("library") for i in infos)
        rows: list[tuple[str, ...]] = [("NAME", "LIBRARY", "URL", "PAGES", "CHUNKS", "LAST RUN", "RESULT", "SCOPE")]
        # grouped by library (newest version first), then the sources of no library
        from docscraper.storage.libraries import version_order

        infos = sorted(infos, key=lambda i: version_order(str(i.scope.get("version") or "")), reverse=True)
        infos.sort(key=lambda i: (not i.scope.get("library"), str(i.scope.get("library") or ""),
                                  "" if i.scope.get("library") else i.name))
        for i in infos:
            when, result = _run_text(i.last_run)
            name = i.name if i.registered else f"{i.name}*"
            library = (f"{i.scope['library']} {i.scope.get('version')}" + ("*" if i.scope.get("latest") else "")
                       if i.scope.get("library") else "-")
            rows.append((name, library, i.url, str(i.pages), str(i.chunks), when, result, scope_text(i.scope)))
        if not libraries:  # the LIBRARY column only where a source has one
            rows = [row[:1] + row[2:] for row in rows]
        widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]) - 1)]
        for row in rows:
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1])
        if any(i.scope.get("latest") for i in infos):
            print("LIBRARY *: the version a search reads unless told (else the highest)")
        if any(not i.registered for i in infos):
            print("* created by a crawl of its URL; register it with: scrapy sources add NAME URL")

    def _show(self, info: SourceInfo, opts: argparse.Namespace) -> None:
        if opts.json:
            self.print_json(info.as_dict())
            return
        run = info.last_run
        print(f"name        {info.name}")
        print(f"url         {info.url}")
        print("registered  " + ("yes" if info.registered else "no (created by a crawl of its URL)"))
        print(f"scope       {info.scope.get('prefix')} ({scope_text(info.scope)})")
        if info.scope.get("library"):
            print(f"library     {info.scope['library']} {info.scope.get('version')}"
                  + (" (latest)" if info.scope.get("latest") else ""))
        if info.scope.get("schedule"):
            print(f"recrawls    every {info.scope['schedule']} (scrapy schedule --list: the next run)")
        if info.scope.get("auth"):
            print("credentials " + ", ".join(f"{kind} from {ref}" for kind, ref in dict(info.scope["auth"]).items()))
        print(f"pages       {info.pages}" + (" (" + ", ".join(f"{n} {kind}" for kind, n in info.types.items()) + ")"
                                               if info.types else ""))
        print(f"chunks      {info.chunks}")
        if info.schedule and info.schedule.get("scheduled"):
            from docscraper.ops.status import schedule_text  # (see commands/status.py)

            print("schedule    " + schedule_text(info.schedule))
        if run is None:
            print("last run    never")
            return
        when, result = _run_text(run)
        print(f"last run    {run['run_id']} {when} {result} (closed: {run.get('close_reason') or '-'})")
        if run.get("report_path"):
            print(f"report      {run['report_path']}")

    def _remove(self, config: DocscraperConfig, name: str, opts: argparse.Namespace) -> None:
        from docscraper.ops.sources import SourceArgumentError, get_source_info, remove_source

        if not opts.yes:
            get_source_info(config, name)  # an unknown source is the error to report first
            raise SourceArgumentError(f"removing {name!r} deletes its chunks, pages and runs; "
                                      f"confirm with: scrapy sources remove {name} --yes")
        counts = remove_source(config, name)
        if opts.json:
            print(json.dumps({"removed": name, **counts}))
            return
        print(f"Removed source {name}: {counts['chunks']} chunks, {counts['pages']} pages, {counts['runs']} runs")


def probe_text(probe: ProbeResult) -> str:
    """What a probe found, for people."""
    local = probe.url.lower().startswith("file:")
    lines = [f"Probed {probe.url}: " + ("folder" if local else f"HTTP {probe.status}")]
    lines.extend(f"  found          {note}" for note in probe.notes)
    robots = probe.robots
    if robots:
        detail = robots["outcome"]
        if robots["outcome"] == "parsed":
            rules = ", ".join(f"disallow {p}" for p in robots["disallow"]) or "no disallow rules"
            detail = f"{rules}" + (f"; crawl-delay {robots['crawl_delay']}" if robots.get("crawl_delay") else "")
        elif robots.get("detail"):
            detail += f" ({robots['detail']})"
        lines.append(f"  robots.txt     {robots['url']}: {detail}")
    lines.append(f"  llms.txt       {probe.llms_txt or 'none'}"
                 + (f" ({probe.llms_links} links)" if probe.llms_txt else ""))
    lines.append(f"  llms-full.txt  {probe.llms_full_txt or 'none'}")
    if probe.sitemaps and local:
        lines.append(f"  sitemaps       {', '.join(probe.sitemaps)}")
    elif probe.sitemaps:
        lines.append(f"  sitemaps       {len(probe.sitemaps)} file(s), {probe.sitemap_urls} URLs "
                     f"({probe.sitemap_urls_in_prefix} under the source's folder): " + ", ".join(probe.sitemaps))
    else:
        lines.append("  sitemaps       none")
    lines.extend(f"  problem        {p}" for p in probe.problems)
    return "\n".join(lines)
