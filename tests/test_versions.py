"""Versions of one library (docscraper.storage.libraries): version order, which sources a search reads, and two
versions of the fixture site crawled with the real model and searched by version."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from docscraper.storage.libraries import SourceVersions, search_sources, version_from_url, version_order
from tests.conftest import Crawl
from tests.mockserver import DocsServer, copy_site


def test_version_from_the_url_when_one_segment_is_a_version() -> None:
    assert version_from_url("https://docs.acme.dev/en/5.0/") == "5.0"
    assert version_from_url("https://acme.dev/v2/guide/") == "2"
    assert version_from_url("https://docs.python.org/3.12/library/") == "3.12"
    assert version_from_url("https://acme.dev/docs/2.0.0rc1/") == "2.0.0rc1"
    assert version_from_url("https://acme.dev/docs/latest/") is None  # a name, not a version
    assert version_from_url("https://acme.dev/1.0/compat/2.0/") is None  # ambiguous
    assert version_from_url("https://acme.dev/docs/") is None


def test_version_order_is_numeric() -> None:
    ordered = sorted(["3.9", "3.10", "3.2", "10.0", "2.0.0rc1", "2.0.0"], key=version_order)
    assert ordered == ["2.0.0rc1", "2.0.0", "3.2", "3.9", "3.10", "10.0"]
    # labels packaging cannot parse sort below the versions it can, naturally among themselves
    assert sorted(["1.x", "1.10.x", "1.9.x", "0.1"], key=version_order) == ["1.9.x", "1.10.x", "1.x", "0.1"]


def _versions(*entries: tuple[str, str | None, str | None, bool]) -> SourceVersions:
    scopes = {}
    for name, library, version, latest in entries:
        scope = {"library": library, "version": version} if library else {}
        if latest:
            scope["latest"] = True
        scopes[name] = scope
    return SourceVersions.from_scopes(scopes)


def test_a_search_reads_one_version_of_each_library() -> None:
    versions = _versions(("acme-4", "acme", "4.2", False), ("acme-5", "acme", "5.0", False),
                         ("acme-6", "acme", "6.0b1", False), ("blog", None, None, False),
                         ("zed-1", "zed", "1", True), ("zed-2", "zed", "2", False))
    # default: the highest (a pre-release is higher than 5.0 by PEP 440), unless one is marked latest
    assert versions.default("acme") == "6.0b1" and versions.default("zed") == "1"
    assert search_sources(versions) == ["acme-6", "blog", "zed-1"]
    assert search_sources(versions, all_versions=True) is None
    assert search_sources(versions, library="acme") == ["acme-6"]
    assert search_sources(versions, library="acme", version="4.2") == ["acme-4"]
    assert sorted(search_sources(versions, library="acme", all_versions=True) or []) == ["acme-4", "acme-5", "acme-6"]
    with pytest.raises(LookupError, match=r"versions: 6.0b1, 5.0, 4.2"):
        search_sources(versions, library="acme", version="3.0")
    with pytest.raises(LookupError, match="libraries: acme, zed"):
        search_sources(versions, library="nope")
    with pytest.raises(ValueError, match="--library"):
        search_sources(versions, version="5.0")
    assert versions.siblings("acme-5") == ["acme-4", "acme-6"] and versions.siblings("blog") == []
    # no library anywhere: no filter at all
    assert search_sources(_versions(("a", None, None, False))) is None


@pytest.fixture
def two_versions(tmp_path: Path) -> Iterator[tuple[DocsServer, DocsServer]]:
    """Version 1.0 of the fixture site, and 2.0, in which one page says something new."""
    old_root = copy_site(tmp_path / "v1")
    new_root = copy_site(tmp_path / "v2")
    page = new_root / "docs" / "glossary.html"
    page.write_text(page.read_text().replace(
        "</article>", "<h2>Quantum relays</h2><p>Version 2.0 adds quantum relays, which forward every webhook "
                   "through an entangled courier queue.</p></article>", 1))
    assert "Quantum relays" in page.read_text()
    with DocsServer(old_root).start() as old, DocsServer(new_root).start() as new:
        yield old, new


def test_two_versions_are_searched_by_version_and_share_their_vectors(two_versions: tuple[DocsServer, DocsServer],
                                                                      crawl: Crawl, command: Crawl) -> None:
    old, new = two_versions
    command("sources", "add", "acme-1.0", f"{old.base_url}/docs/", "--library", "acme", "--version", "1.0")
    command("sources", "add", "acme-2.0", f"{new.base_url}/docs/", "--library", "acme", "--version", "2.0")
    taken = command("sources", "add", "acme-again", f"{new.base_url}/docs/guide/", "--library", "acme",
                    "--version", "2.0", check=False)
    assert taken.returncode == 1 and "has version '2.0' already" in taken.stderr
    first = crawl("acme-1.0", index=True).report["counters"]
    second = crawl("acme-2.0", index=True)
    counters = second.report["counters"]
    # the second version embeds only the chunks whose text differs from the first's
    assert counters["embeddings_shared"] > 0
    assert counters.get("embeddings_computed", 0) < first["embeddings_computed"] / 4
    assert counters.get("embeddings_computed", 0) >= 1  # the new section

    listing = command("sources", "list").stdout.splitlines()
    rows = [line.split()[0] for line in listing[1:3]]
    assert rows == ["acme-2.0", "acme-1.0"]  # grouped by library, newest first
    libraries = json.loads(command("sources", "list", "--json").stdout)
    assert {s["name"]: s["scope"]["version"] for s in libraries} == {"acme-1.0": "1.0", "acme-2.0": "2.0"}

    def search(*args: str) -> list[dict]:
        out = command("search", "webhook delivery retries", "-k", "5", "--json", *args, index=True).stdout
        return list(json.loads(out))

    latest = search("--library", "acme")
    assert latest and {r["source"] for r in latest} == {"acme-2.0"}
    assert {(r["library"], r["version"]) for r in latest} == {("acme", "2.0")}
    pinned = search("--library", "acme", "--version", "1.0")
    assert pinned and {r["source"] for r in pinned} == {"acme-1.0"}
    # without a library, each library is read at its default version: answers never mix versions
    assert {r["source"] for r in search()} == {"acme-2.0"}
    mixed = search("--all-versions", "-k", "20")
    assert {r["source"] for r in mixed} == {"acme-1.0", "acme-2.0"}
    assert {(r["source"], r["version"]) for r in mixed} == {("acme-1.0", "1.0"), ("acme-2.0", "2.0")}
    new_fact = command("search", "quantum relays entangled courier", "--json", "--library", "acme",
                       "--version", "1.0", index=True).stdout
    assert "entangled courier" not in new_fact
    found = json.loads(command("search", "quantum relays entangled courier", "--json", "--library", "acme",
                               index=True).stdout)
    assert "entangled courier" in found[0]["text"] and found[0]["version"] == "2.0"
    unknown = command("search", "anything", "--library", "acme", "--version", "9.9", index=True, check=False)
    assert unknown.returncode == 1 and "versions: 2.0, 1.0" in unknown.stderr


def test_sources_carry_a_library_and_the_server_lists_them(tmp_path: Path) -> None:
    from scrapy.settings import Settings

    from docscraper.config import DocscraperConfig
    from docscraper.ops.mcp_server import DocsTools
    from docscraper.ops.sources import SourceArgumentError, SourceError, add_source, list_libraries

    config = DocscraperConfig.from_settings(Settings({"DOCSCRAPER_DATA_DIR": str(tmp_path / "data")}))
    info, _ = add_source(config, "acme-5.0", "https://docs.acme.dev/en/5.0/", probe=False, library="acme")
    assert (info.scope["library"], info.scope["version"]) == ("acme", "5.0")  # from the URL
    add_source(config, "acme-4.2", "https://docs.acme.dev/en/4.2/", probe=False, library="acme", latest=True)
    add_source(config, "acme-10", "https://docs.acme.dev/next/", probe=False, library="acme", version="10.0")
    with pytest.raises(SourceArgumentError, match="no version in"):
        add_source(config, "acme-dev", "https://docs.acme.dev/en/latest/", probe=False, library="acme")
    with pytest.raises(SourceError, match="marked the latest version of 'acme' already"):
        add_source(config, "acme-6", "https://docs.acme.dev/en/6.0/", probe=False, library="acme", latest=True)
    with pytest.raises(SourceArgumentError, match="go with --library"):
        add_source(config, "lone", "https://lone.example/1.0/", probe=False, version="1.0")
    expected = [{"library": "acme", "default": "4.2", "versions": [
        {"version": "10.0", "source": "acme-10", "latest": False},
        {"version": "5.0", "source": "acme-5.0", "latest": False},
        {"version": "4.2", "source": "acme-4.2", "latest": True}]}]
    assert list_libraries(config) == expected
    assert DocsTools(config).list_libraries() == {"libraries": expected}


def test_sources_update_moves_the_latest_mark_and_credentials(tmp_path: Path, command: Crawl,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from scrapy.settings import Settings

    from docscraper.config import DocscraperConfig
    from docscraper.credentials import CredentialRefs
    from docscraper.ops.sources import SourceArgumentError, SourceError, add_source, list_libraries, update_source

    config = DocscraperConfig.from_settings(Settings({"DOCSCRAPER_DATA_DIR": str(tmp_path / "data")}))
    add_source(config, "acme-5.0", "https://docs.acme.dev/en/5.0/", probe=False, library="acme", latest=True)
    add_source(config, "acme-6.0", "https://docs.acme.dev/en/6.0/", probe=False, library="acme")
    add_source(config, "plain", "https://plain.example/docs/", probe=False)
    update_source(config, "acme-6.0", latest=True)  # the mark moves
    assert [(v["source"], v["latest"]) for v in list_libraries(config)[0]["versions"]] == [
        ("acme-6.0", True), ("acme-5.0", False)]
    with pytest.raises(SourceError, match=r"has version '6\.0' already"):
        update_source(config, "acme-5.0", version="6.0")
    assert update_source(config, "acme-5.0", version="5.1").scope["version"] == "5.1"
    with pytest.raises(SourceArgumentError, match="no library"):
        update_source(config, "plain", latest=True)
    assert update_source(config, "plain", library="plain", version="1").scope["library"] == "plain"
    monkeypatch.setenv("ACME_HEADERS", "Authorization: Bearer secret-for-acme-0001")
    with pytest.raises(SourceArgumentError, match="ACME_MISSING is not set"):
        update_source(config, "acme-5.0", credentials=CredentialRefs(headers="env:ACME_MISSING"))
    info = update_source(config, "acme-5.0", credentials=CredentialRefs(headers="env:ACME_HEADERS"))
    assert info.scope["auth"] == {"headers": "env:ACME_HEADERS"}
    assert "auth" not in update_source(config, "acme-5.0", clear_credentials=True).scope
    # the command line: the same, as the user types it
    out = command("sources", "update", "acme-5.0", "--latest", "--auth-headers", "env:ACME_HEADERS",
                  settings={"DOCSCRAPER_DATA_DIR": str(tmp_path / "data")})
    assert "Updated source acme-5.0" in out.stdout and "headers from env:ACME_HEADERS" in out.stdout
    assert "secret-for-acme" not in out.stdout + out.stderr
    bad = command("sources", "update", "acme-5.0", "--latest", "--no-latest", check=False,
                  settings={"DOCSCRAPER_DATA_DIR": str(tmp_path / "data")})
    assert bad.returncode == 2 and "contradict" in bad.stderr
