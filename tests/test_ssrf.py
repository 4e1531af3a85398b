"""The SSRF guard (docscraper/crawl/ssrf.py): the address table, the URL and allow-list checks, the
middleware and resolver layers, and whole crawls against a second fixture server on 127.0.0.2."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Request
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler
from twisted.internet.address import IPv4Address as TwistedIPv4Address
from twisted.internet.error import DNSLookupError

import docscraper.crawl.ssrf as ssrf
from docscraper.config import ConfigError, DocscraperConfig
from docscraper.crawl.report import load_schema, summarize
from docscraper.crawl.scope import Refusal
from docscraper.crawl.ssrf import (
    SsrfConfig,
    SsrfGuardHostnameResolver,
    SsrfGuardMiddleware,
    SsrfGuardResolver,
    address_category,
    check_addresses,
    check_url,
    host_address,
    normalize_host,
)
from tests.conftest import Crawl, CrawlResult
from tests.mockserver import DocsServer, copy_site

# -- the address table --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("10.0.0.5", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("172.32.0.1", None),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("100.127.255.255", "carrier-grade NAT"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("255.255.255.255", "broadcast"),
        ("240.0.0.1", "reserved"),
        ("192.0.2.1", "reserved"),  # documentation
        ("198.18.0.1", "reserved"),  # benchmarking
        ("192.0.0.8", "reserved"),  # IETF protocol assignments
        ("8.8.8.8", None),
        ("93.184.216.34", None),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fe80::1", "link-local"),
        ("febf:ffff::1", "link-local"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("fec0::1", "private"),
        ("ff02::1", "multicast"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:169.254.169.254", "link-local"),
        ("::ffff:0.0.0.0", "unspecified"),
        ("::ffff:8.8.8.8", None),
        ("64:ff9b::a00:1", "private"),  # NAT64 of 10.0.0.1
        ("64:ff9b::808:808", None),  # NAT64 of 8.8.8.8
        ("64:ff9b:1::1", "private"),  # local-use NAT64
        ("2002:7f00:1::1", "loopback"),  # 6to4 of 127.0.0.1
        ("2002:a9fe:a9fe::", "link-local"),  # 6to4 of 169.254.169.254
        ("::127.0.0.1", "reserved"),  # deprecated IPv4-compatible
        ("2001:db8::1", "reserved"),  # documentation
        ("2606:4700:4700::1111", None),
    ],
)
def test_address_category(address: str, category: str | None) -> None:
    assert address_category(ipaddress.ip_address(address)) == category


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0x7F000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("2852039166", "169.254.169.254"),
        ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
        ("10.0.0.5", "10.0.0.5"),
        ("127.0.0.1.", "127.0.0.1"),
    ],
)
def test_legacy_ipv4_spellings_are_read_as_the_c_library_reads_them(host: str, address: str) -> None:
    parsed = host_address(host)
    assert parsed == ipaddress.ip_address(address)
    if not host.endswith("."):
        assert socket.inet_aton(host) == parsed.packed  # what the system resolver will connect to


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),
        ("fe80::1%25eth0", "fe80::1"),
        ("fe80::1%eth0", "fe80::1"),
        ("docs.example.com", None),
        ("localhost", None),
        ("256.1.1.1", None),
        ("1.2.3.4.5", None),
        ("08.1.1.1", None),  # 8 is not an octal digit: a name for the resolver, never an address
        ("", None),
    ],
)
def test_host_address(host: str, address: str | None) -> None:
    assert host_address(host) == (ipaddress.ip_address(address) if address else None)


def test_normalize_host() -> None:
    assert normalize_host("Docs.Example.COM.") == "docs.example.com"
    assert normalize_host("[0:0::1]") == "::1"
    assert normalize_host("bücher.example") == "xn--bcher-kva.example"


def test_scrapy_and_the_project_keep_integer_hosts_as_written() -> None:
    # Nothing on the way rewrites them: the guard must read them as the resolver will.
    from docscraper.urls import normalize_url

    for url in ("http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/"):
        assert Request(url).url == url
        assert normalize_url(url) == url


# -- URL checks and the allow-list --------------------------------------------------------------------

NONE = SsrfConfig()
SOURCE = {"127.0.0.1"}


@pytest.mark.parametrize(
    ("url", "refusal"),
    [
        ("http://127.0.0.1:8000/docs/x.html", None),
        ("http://127.0.0.1:9999/other", None),  # the source's host, any port
        ("https://127.0.0.1/", None),
        ("http://127.0.0.2:8000/", "127.0.0.2 is loopback"),
        ("http://[::1]:8000/", "::1 is loopback"),
        ("http://[::ffff:127.0.0.1]:8000/", "::ffff:127.0.0.1 is loopback"),
        ("http://2130706433:8000/", "2130706433 (127.0.0.1) is loopback"),
        ("http://0x7f.1/", "0x7f.1 (127.0.0.1) is loopback"),
        ("http://0177.0.0.1/", "0177.0.0.1 (127.0.0.1) is loopback"),
        ("http://10.0.0.5/", "10.0.0.5 is private"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is link-local"),
        ("http://[fe80::1%25eth0]/", "fe80::1%25eth0 is link-local"),
        ("http://0.0.0.0:8000/", "0.0.0.0 is unspecified"),
        ("http://[::]/", ":: is unspecified"),
        ("http://224.0.0.251/", "224.0.0.251 is multicast"),
        ("http://100.64.1.1/", "100.64.1.1 is carrier-grade NAT"),
        ("http://8.8.8.8/", None),
        ("file:///etc/passwd", "scheme file is not http(s)"),
        ("ftp://127.0.0.1/", "scheme ftp is not http(s)"),
        ("gopher://127.0.0.1:6379/_INFO", "scheme gopher is not http(s)"),
        ("data:text/plain,hello", "scheme data is not http(s)"),
        ("http:///nohost", "no host"),
    ],
)
def test_check_url(url: str, refusal: str | None) -> None:
    verdict = check_url(url, NONE, SOURCE)
    assert verdict.refusal == refusal
    assert verdict.resolve is None


def test_names_are_resolved_unless_trusted() -> None:
    assert check_url("http://localhost:8000/", NONE, SOURCE).resolve == "localhost"
    assert check_url("http://Docs.Example.com./x", NONE, SOURCE).resolve == "docs.example.com"
    assert check_url("http://docs.internal:8443/x", NONE, {"docs.internal"}).resolve is None
    assert check_url("http://localhost:8000/", NONE, {"localhost"}) == ssrf.UrlCheck()


def test_resolved_addresses() -> None:
    loop = [ipaddress.ip_address("127.0.0.1")]
    assert check_addresses("localhost", loop, NONE) == "localhost resolves to 127.0.0.1 (loopback)"
    mixed = [ipaddress.ip_address("8.8.8.8"), ipaddress.ip_address("10.0.0.5")]
    assert check_addresses("rebind.test", mixed, NONE) == "rebind.test resolves to 10.0.0.5 (private)"
    assert check_addresses("dns.google", [ipaddress.ip_address("8.8.8.8")], NONE) is None
    # the source's own name may resolve to a private address, never to a link-local one
    assert check_addresses("docs.internal", [ipaddress.ip_address("10.0.0.5")], NONE, trusted=True) is None
    metadata = [ipaddress.ip_address("169.254.169.254")]
    assert "link-local" in (check_addresses("docs.internal", metadata, NONE, trusted=True) or "")


def test_link_local_is_refused_for_the_source_host_too_unless_allow_listed() -> None:
    url = "http://169.254.169.254/latest/meta-data/"
    assert check_url(url, NONE, {"169.254.169.254"}).refusal == "169.254.169.254 is link-local"
    allowed = SsrfConfig(allowed_networks=(ipaddress.ip_network("169.254.169.254"),))
    assert check_url(url, allowed, set()).refusal is None


def test_file_urls_only_for_a_file_source() -> None:
    assert check_url("file:///srv/site/docs/a.html", NONE, set(), file_allowed=True).refusal is None
    assert check_url("file:///etc/passwd", NONE, SOURCE).refusal == "scheme file is not http(s)"


def ssrf_config(settings: Settings) -> SsrfConfig:
    """The guard's configuration, from settings parsed as a crawl parses them."""
    return SsrfConfig.from_config(DocscraperConfig.from_settings(settings))


def test_allow_list_parsing() -> None:
    config = ssrf_config(
        Settings({"DOCSCRAPER_SSRF_ALLOWED_HOSTS": "Docs.Internal., 10.20.0.0/16 127.0.0.2,[::1], fd00::/8"})
    )
    assert config.enabled is True
    assert config.allowed_names == {"docs.internal"}
    assert {str(n) for n in config.allowed_networks} == {"10.20.0.0/16", "127.0.0.2/32", "::1/128", "fd00::/8"}
    listed = ssrf_config(Settings({"DOCSCRAPER_SSRF_ALLOWED_HOSTS": ["localhost", "10.0.0.0/8"]}))
    assert listed.allowed_names == {"localhost"} and len(listed.allowed_networks) == 1
    assert ssrf_config(Settings({})) == SsrfConfig()
    assert ssrf_config(Settings({"DOCSCRAPER_SSRF_GUARD_ENABLED": "0"})).enabled is False


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("http://docs.internal/", "is not a host"),
        ("10.0.0.0/33", "not a valid CIDR"),
        ("docs.internal:8080", "without a port"),
        ("bad host!", "not a host name"),
    ],
)
def test_allow_list_errors(value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ssrf_config(Settings({"DOCSCRAPER_SSRF_ALLOWED_HOSTS": value}))


def test_bad_enabled_flag() -> None:
    with pytest.raises(ConfigError, match="DOCSCRAPER_SSRF_GUARD_ENABLED"):
        ssrf_config(Settings({"DOCSCRAPER_SSRF_GUARD_ENABLED": "maybe"}))


def test_allow_list_by_name_ip_and_cidr() -> None:
    config = ssrf_config(
        Settings({"DOCSCRAPER_SSRF_ALLOWED_HOSTS": "localhost,127.0.0.2,10.0.0.0/8,fe80::/10"})
    )
    assert check_url("http://localhost:8000/", config, SOURCE) == ssrf.UrlCheck()  # by name: not even resolved
    assert check_url("http://127.0.0.2:8001/", config, SOURCE).refusal is None  # by IP
    assert check_url("http://2130706434/", config, SOURCE).refusal is None  # the same IP, spelled otherwise
    assert check_url("http://[::ffff:127.0.0.2]/", config, SOURCE).refusal is None
    assert check_url("http://127.0.0.3/", config, SOURCE).refusal == "127.0.0.3 is loopback"
    assert check_url("http://10.1.2.3/", config, SOURCE).refusal is None  # by CIDR
    assert check_url("http://[fe80::1]/", config, SOURCE).refusal is None
    assert check_addresses("intranet", [ipaddress.ip_address("10.9.8.7")], config) is None
    assert check_addresses("other", [ipaddress.ip_address("192.168.0.1")], config) is not None
    assert check_url("file:///etc/passwd", config, SOURCE).refusal is not None


# -- the middleware -----------------------------------------------------------------------------------


@dataclass
class FakeArgs:
    llms_txt: str | None = None


@dataclass
class FakeSource:
    """The stored source as the guard reads it: its scope (``trust_host: false`` for a server client's)."""

    scope: dict[str, Any] = field(default_factory=dict)


@dataclass
class FakeRun:
    seed_url: str = "http://127.0.0.1:8000/docs/"
    args: FakeArgs = field(default_factory=FakeArgs)
    refused: list[tuple[str, Refusal, dict[str, Any]]] = field(default_factory=list)
    source: FakeSource = field(default_factory=FakeSource)

    def refuse(self, url: str, refusal: Refusal, **details: Any) -> None:
        self.refused.append((url, refusal, details))


@dataclass
class FakeResources:
    """The run's resources as the guard uses them: the parsed settings, the target (seed, llms_txt) and the
    outcomes (refusals)."""

    config: DocscraperConfig
    target: FakeRun
    outcomes: FakeRun


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch) -> FakeRun:
    fake = FakeRun()
    monkeypatch.setattr(ssrf.CrawlResources, "find", staticmethod(
        lambda crawler: FakeResources(DocscraperConfig.from_settings(crawler.settings), fake, fake)))
    return fake


def guard(**settings: Any) -> SsrfGuardMiddleware:
    crawler = get_crawler(settings_dict=settings)
    return SsrfGuardMiddleware.from_crawler(crawler)


def process(mw: SsrfGuardMiddleware, request: Request) -> None:
    asyncio.run(mw.process_request(request))


def stat(mw: SsrfGuardMiddleware, name: str) -> Any:
    assert mw.crawler.stats is not None
    return mw.crawler.stats.get_value(f"docscraper/{name}")


def test_middleware_is_off_when_disabled() -> None:
    with pytest.raises(NotConfigured):
        guard(DOCSCRAPER_SSRF_GUARD_ENABLED=False)


def test_middleware_refuses_a_redirect_hop_under_the_first_url(run: FakeRun) -> None:
    mw = guard()
    process(mw, Request("http://127.0.0.1:8000/docs/a.html", meta={"docscraper_page_id": "url_a"}))
    process(mw, Request("http://127.0.0.1:9999/elsewhere", meta={"docscraper_page_id": "url_b"}))
    hop = Request(
        "http://169.254.169.254/latest/meta-data/",
        meta={"redirect_urls": ["http://127.0.0.1:8000/docs/a.html"], "docscraper_page_id": "url_a",
              "docscraper_finder": "link"},
    )
    with pytest.raises(IgnoreRequest, match="SSRF guard"):
        process(mw, hop)
    detail = "redirects to http://169.254.169.254/latest/meta-data/: 169.254.169.254 is link-local"
    assert run.refused == [("http://127.0.0.1:8000/docs/a.html", Refusal("blockedAddress", detail),
                            {"finder": "link", "discovery": None})]
    assert hop.meta["docscraper_refused"] is True
    assert stat(mw, "ssrf/refused") == 1


def test_middleware_records_discovery_requests_and_not_others(run: FakeRun) -> None:
    mw = guard()
    with pytest.raises(IgnoreRequest):
        process(mw, Request("http://127.0.0.2:8000/llms.txt", meta={"docscraper_discovery": "llms"}))
    with pytest.raises(IgnoreRequest):  # robots.txt of a refused host: refused, not a page of the report
        process(mw, Request("http://127.0.0.2:8000/robots.txt", meta={"dont_obey_robotstxt": True}))
    assert [(url, r.reason, d["discovery"]) for url, r, d in run.refused] == [
        ("http://127.0.0.2:8000/llms.txt", "blockedAddress", "llms")
    ]
    assert stat(mw, "ssrf/refused") == 2


def test_middleware_refuses_file_urls_unless_the_source_is_a_file(run: FakeRun) -> None:
    mw = guard()
    with pytest.raises(IgnoreRequest, match="scheme file"):
        process(mw, Request("file:///etc/passwd", meta={"docscraper_page_id": "url_p"}))
    run.args.llms_txt = "file:///srv/llms.txt"  # the user's own argument
    process(mw, Request("file:///srv/llms.txt", meta={"docscraper_discovery": "llms"}))
    with pytest.raises(IgnoreRequest):
        process(mw, Request("file:///srv/other.txt"))
    run.seed_url = "file:///srv/site/docs/"
    process(mw, Request("file:///srv/site/docs/a.html"))


def test_middleware_checks_names_after_resolution(run: FakeRun, monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {"docs.evil.test": ["93.184.216.34", "10.0.0.5"], "cdn.example.test": ["93.184.216.34"]}
    monkeypatch.setattr(ssrf, "resolve_host", lambda host: [ipaddress.ip_address(a) for a in answers[host]])
    mw = guard()
    with pytest.raises(IgnoreRequest, match=r"docs\.evil\.test resolves to 10\.0\.0\.5 \(private\)"):
        process(mw, Request("http://docs.evil.test/", meta={"docscraper_page_id": "url_e"}))
    process(mw, Request("https://cdn.example.test/x"))


def test_middleware_resolves_localhost_for_real(run: FakeRun) -> None:
    mw = guard()
    with pytest.raises(IgnoreRequest, match=r"localhost resolves to (127\.0\.0\.1|::1) \(loopback\)"):
        process(mw, Request("http://localhost:8000/docs/", meta={"docscraper_page_id": "url_l"}))
    process(guard(DOCSCRAPER_SSRF_ALLOWED_HOSTS="localhost"), Request("http://localhost:8000/docs/"))
    run.seed_url = "http://localhost:8000/docs/"
    process(guard(), Request("http://localhost:9000/docs/"))


def test_middleware_trusts_proxies_and_the_llms_txt_argument(run: FakeRun) -> None:
    mw = guard()
    run.args.llms_txt = "http://10.1.2.3/llms.txt"
    process(mw, Request("http://10.1.2.3/llms.txt", meta={"docscraper_discovery": "llms"}))
    process(mw, Request("http://93.184.216.34/", meta={"proxy": "http://10.9.9.9:3128"}))
    assert {"10.1.2.3", "10.9.9.9", "127.0.0.1"} <= mw.trusted_hosts()


def test_a_source_a_server_client_registered_gets_no_trust_of_its_own(run: FakeRun) -> None:
    run.source.scope["trust_host"] = False
    run.args.llms_txt = "http://10.1.2.3/llms.txt"
    mw = guard()
    assert mw.trusted_hosts() == set()
    with pytest.raises(IgnoreRequest):
        process(mw, Request("http://127.0.0.1:8000/docs/", meta={"docscraper_page_id": "url_x"}))


def test_resolver_layer_refuses_at_connect_time(run: FakeRun) -> None:
    mw = guard()
    assert ssrf._refusal_at_connect("rebind.test", "127.0.0.1") is None  # no guard open: no change
    mw._spider_opened(None)
    try:
        assert ssrf._refusal_at_connect("127.0.0.1", "127.0.0.1") is None  # the source's host
        assert ssrf._refusal_at_connect("rebind.test", "93.184.216.34") is None
        assert ssrf._refusal_at_connect("rebind.test", "127.0.0.1") == "rebind.test resolves to 127.0.0.1 (loopback)"
        with pytest.raises(DNSLookupError, match=r"10\.0\.0\.5"):
            SsrfGuardResolver._checked("10.0.0.5", "evil.test")
        assert SsrfGuardResolver._checked("8.8.8.8", "dns.google") == "8.8.8.8"

        # the IPv6-capable resolver drops refused answers and passes the others
        class Receiver:
            def __init__(self) -> None:
                self.addresses: list[Any] = []
                self.complete = False

            def resolutionBegan(self, resolution: Any) -> None:
                pass

            def addressResolved(self, address: Any) -> None:
                self.addresses.append(address)

            def resolutionComplete(self) -> None:
                self.complete = True

        class Original:
            def resolveHostName(self, receiver: Any, name: str, port: int = 0, *args: Any) -> Any:
                receiver.resolutionBegan(None)
                receiver.addressResolved(TwistedIPv4Address("TCP", "93.184.216.34", port))
                receiver.addressResolved(TwistedIPv4Address("TCP", "169.254.169.254", port))
                receiver.resolutionComplete()
                return None

        class Reactor:
            nameResolver = Original()

        resolver = SsrfGuardHostnameResolver(Reactor(), 0)  # type: ignore[arg-type]
        receiver = Receiver()
        resolver.resolveHostName(receiver, "mixed.test", 80)  # type: ignore[arg-type]
        assert [a.host for a in receiver.addresses] == ["93.184.216.34"] and receiver.complete
        assert stat(mw, "ssrf/refused_at_connect") == 3

        # a request whose lookup the resolver failed is refused with the reason, not as a DNS failure
        request = Request("http://rebind.test/page", meta={"docscraper_page_id": "url_r"})
        with pytest.raises(IgnoreRequest, match=r"rebind\.test resolves to 127\.0\.0\.1"):
            mw.process_exception(request, DNSLookupError("no results"))
        assert run.refused[-1][1].reason == "blockedAddress"
        mw.process_exception(Request("http://unknown.test/"), DNSLookupError("no results"))  # a real DNS failure
        # a retry of it (RetryMiddleware retries DNS failures) is refused before it is sent
        with pytest.raises(IgnoreRequest, match="rebind"):
            process(mw, Request("http://rebind.test/page"))
    finally:
        mw._spider_closed(None)
    assert ssrf._ACTIVE == []


# -- whole crawls ---------------------------------------------------------------------------------------

@pytest.fixture
def other(tmp_path: Path) -> Iterator[DocsServer]:
    """A second fixture server on 127.0.0.2 (Linux routes all of 127/8 to the loopback interface)."""
    root = copy_site(tmp_path / "other")
    with DocsServer(root, host="127.0.0.2").start() as server:
        yield server


def add_routes(server: DocsServer, routes: dict[str, Any]) -> None:
    path = server.root / "_routes.json"
    current = json.loads(path.read_text()) if path.exists() else {}
    current.update(routes)
    path.write_text(json.dumps(current, indent=2))


def add_links(server: DocsServer, page: str, *urls: str) -> None:
    path = server.root / page
    links = "".join(f'<p><a href="{url}">more</a></p>' for url in urls)
    path.write_text(path.read_text().replace("</body>", f"{links}</body>"))


def refusals(result: CrawlResult) -> dict[str, dict[str, Any]]:
    return {k: e for k, e in result.report["items"].items() if e["statusReason"] == "blockedAddress"}


def assert_valid(result: CrawlResult) -> dict[str, Any]:
    report = result.report
    jsonschema.validate(report, load_schema())
    assert report["stats"] == summarize(report["items"])
    assert "installed DNS resolver is not" not in result.stderr  # the connect-time layer is on
    return report


METADATA = "http://169.254.169.254/latest/meta-data/"


def _redirect_routes(site: DocsServer, other: DocsServer) -> None:
    add_routes(site, {
        # robots.txt and discovery files follow redirects, each hop checked by the guard
        "/robots.txt": {"status": 302, "location": f"{other.base_url}/robots.txt"},
        "/docs/llms.txt": {"status": 302, "location": f"{other.base_url}/docs/llms.txt"},
        "/docs/go-internal.html": {"status": 302, "location": f"{other.base_url}/docs/glossary.html"},
        "/docs/metadata.html": {"status": 301, "location": METADATA},
        "/docs/to-localhost.html": {"status": 302, "location": f"http://localhost:{site.port}/docs/glossary.html"},
        # Scrapy does not follow a hop to another scheme; the page is refused all the same, not failed
        "/docs/to-file.html": {"status": 302, "location": "file:///etc/passwd"},
    })
    add_links(site, "docs/index.html", "go-internal.html", "metadata.html", "to-localhost.html", "to-file.html")


@pytest.mark.crawl
def test_redirect_hops_to_internal_addresses_are_refused(site: DocsServer, other: DocsServer, crawl: Crawl) -> None:
    _redirect_routes(site, other)
    result = crawl(f"{site.base_url}/docs/")
    report = assert_valid(result)
    assert other.requests == []
    assert not [p for m, p, h in site.requests if h.get("Host", "").startswith("localhost")]
    refused = refusals(result)
    assert {"go-internal.html", "metadata.html", "to-localhost.html", "to-file.html"} <= set(refused) <= {
        "go-internal.html", "metadata.html", "to-localhost.html", "to-file.html", "llms.txt"}
    o = other.base_url
    assert refused["go-internal.html"] == {
        "status": "skipped", "statusReason": "blockedAddress", "fetchedAt": None, "finder": "link",
        "url": f"{site.base_url}/docs/go-internal.html",
        "detail": f"redirects to {o}/docs/glossary.html: 127.0.0.2 is loopback"}
    # refused before any connection: no network is needed to say so (a connection would time out)
    assert refused["metadata.html"]["detail"] == f"redirects to {METADATA}: 169.254.169.254 is link-local"
    assert refused["to-localhost.html"]["detail"] == (
        f"redirects to http://localhost:{site.port}/docs/glossary.html: localhost resolves to 127.0.0.1 (loopback)")
    assert refused["to-file.html"]["detail"] == "redirects to file:///etc/passwd: scheme file is not http(s)"
    assert "to-file.html" not in result.keys("failed")
    # the source's robots.txt redirects to 127.0.0.2: not followed, and the report says why
    robots = report["discovery"]["robots"][f"127.0.0.1:{site.port}"]
    assert f"SSRF guard: redirects to {o}/robots.txt: 127.0.0.2 is loopback" in robots["detail"]
    assert report["scrapy"]["docscraper/ssrf/refused"] >= 4
    assert report["stats"]["skipped.blockedAddress"] == len(refused)
    assert report["stats"]["success.new"] > 20  # the rest of the site is crawled as usual


@pytest.mark.crawl
def test_allow_listed_hosts_are_fetched(site: DocsServer, other: DocsServer, crawl: Crawl) -> None:
    _redirect_routes(site, other)
    result = crawl(f"{site.base_url}/docs/", settings={"DOCSCRAPER_SSRF_ALLOWED_HOSTS": "127.0.0.2,localhost"})
    report = assert_valid(result)
    # once as the target of the source's robots.txt, once as the robots.txt of 127.0.0.2 itself, before
    # the llms.txt that the source's llms.txt redirects to is fetched from there
    assert other.hits("/robots.txt") == 2
    assert report["discovery"]["robots"][f"127.0.0.1:{site.port}"]["outcome"] == "parsed"
    assert report["discovery"]["llms"]["url"] == f"{other.base_url}/docs/llms.txt"
    # link-local stays refused; the pages redirected to the allowed hosts are left to the scope
    assert set(refusals(result)) == {"metadata.html", "to-file.html"}
    assert result.keys("skipped", "redirectOutOfScope") >= {"go-internal.html", "to-localhost.html"}
    assert [p for m, p, h in other.requests if p.startswith("/docs/")] == ["/docs/llms.txt"]


WIDE = {"SPIDER_MODULES": "tests.ssrf_spiders"}


def _wide_site(site: DocsServer, other: DocsServer) -> dict[str, str]:
    """Links, a sitemap entry, an llms.txt link and a redirect to the other server and to localhost."""
    add_links(site, "docs/index.html", f"{other.base_url}/docs/glossary.html",
              f"http://localhost:{site.port}/docs/changelog.html", "go-internal.html")
    add_routes(site, {"/docs/go-internal.html": {"status": 302, "location": f"{other.base_url}/docs/faq.html"}})
    sitemap = site.root / "sitemaps" / "pages.xml"
    sitemap.write_text(sitemap.read_text().replace(
        "</urlset>", f"<url><loc>{other.base_url}/docs/guide/</loc></url></urlset>"))
    llms = site.root / "docs" / "llms.txt"
    llms.write_text(llms.read_text() + f"\n- [Elsewhere]({other.base_url}/docs/reference/): more\n")
    return {**WIDE, "SSRF_TEST_EXTRA_HOSTS": f"127.0.0.2:{other.port},localhost:{site.port}"}


@pytest.mark.crawl
def test_guard_refuses_what_a_wider_scope_would_let_through(
    site: DocsServer, other: DocsServer, crawl: Crawl
) -> None:
    settings = _wide_site(site, other)
    result = crawl(f"{site.base_url}/docs/", settings=settings)
    assert_valid(result)
    assert other.requests == []
    refused = refusals(result)
    o = other.base_url
    assert refused[f"{o}/docs/glossary.html"]["finder"] == "link"
    assert refused[f"{o}/docs/guide"]["finder"] == "sitemap"
    assert refused[f"{o}/docs/reference"]["finder"] == "llms"
    assert refused[f"http://localhost:{site.port}/docs/changelog.html"]["detail"] == (
        "localhost resolves to 127.0.0.1 (loopback)")
    assert refused["go-internal.html"]["detail"] == f"redirects to {o}/docs/faq.html: 127.0.0.2 is loopback"
    assert all(e["detail"].endswith(("127.0.0.2 is loopback", "(loopback)")) for e in refused.values())
    assert len(refused) == 5


@pytest.mark.crawl
def test_wider_scope_with_allow_listed_hosts(site: DocsServer, other: DocsServer, crawl: Crawl) -> None:
    settings = _wide_site(site, other)
    result = crawl(f"{site.base_url}/docs/",
                   settings={**settings, "DOCSCRAPER_SSRF_ALLOWED_HOSTS": "127.0.0.2, localhost"})
    assert_valid(result)
    assert refusals(result) == {}
    # the wider scope takes in the whole other site: every page once
    fetched = [p for m, p, h in other.requests if m == "GET"]
    for path in ("/docs/glossary.html", "/docs/guide/", "/docs/reference/", "/docs/faq.html"):
        assert fetched.count(path) == 1, path
    # ... and the fixture site again, under the name localhost, from the changelog's relative links on
    via_localhost = [p for m, p, h in site.requests if h.get("Host") == f"localhost:{site.port}"]
    assert via_localhost[:2] == ["/robots.txt", "/docs/changelog.html"]


@pytest.mark.crawl
def test_internal_urls_listed_twice_by_the_site_keep_their_refusal(site: DocsServer, crawl: Crawl) -> None:
    passwd = "file:///etc/passwd"
    sitemap = site.root / "sitemaps" / "pages.xml"
    sitemap.write_text(sitemap.read_text().replace(
        "</urlset>", f"<url><loc>{METADATA}</loc></url><url><loc>{passwd}</loc></url></urlset>"))
    llms = site.root / "docs" / "llms.txt"
    llms.write_text(llms.read_text() + f"\n- [Metadata]({METADATA}): cloud\n- [Passwords]({passwd}): users\n")
    add_links(site, "docs/index.html", passwd)
    result = crawl(f"{site.base_url}/docs/")
    report = assert_valid(result)
    listed = {k: e for k, e in report["items"].items() if "169.254" in k or k.startswith("file:")}
    # one outcome each, the refusal: not a duplicate of a page that was never claimed
    assert {k: e["statusReason"] for k, e in listed.items()} == {
        "http://169.254.169.254/latest/meta-data": "outOfScope", passwd: "blockedAddress"}
    assert listed[passwd]["detail"] == "scheme file is not http(s)"
    assert listed[passwd]["finder"] == "link"  # the last of the three listings to be refused
