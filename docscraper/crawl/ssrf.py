"""SSRF guard: a crawl must not be steered at the crawler's own network (reason ``blockedAddress``).

Refused: any scheme but http(s) (``file://`` for a ``file://`` source), and a host that is, or resolves to, a
non-global address (loopback, private, link-local...) in any spelling (:func:`address_category`). Trusted: the
source's own host (any port; never a link-local address), an explicit ``-a llms_txt=`` host, proxies, and
``DOCSCRAPER_SSRF_ALLOWED_HOSTS``. :class:`SsrfGuardMiddleware` (first in the downloader chain; its docstring names
its settings, meta keys and stats) judges every request and redirect hop; :class:`SsrfGuardResolver` and
:class:`SsrfGuardHostnameResolver` (``TWISTED_DNS_RESOLVER``) drop a refused answer at connect time. Refusals the
report records are counted as ``docscraper/pages_refused/blockedAddress``. Why two layers: docs/explanation/security.md.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import re
import socket
import sys
import urllib.request
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import unquote, urlsplit

from scrapy import signals
from scrapy.exceptions import CannotResolveHostError, IgnoreRequest, NotConfigured
from scrapy.http import Request
from scrapy.resolver import CachingHostnameResolver, CachingThreadedResolver
from scrapy.utils.asyncio import run_in_thread
from scrapy.utils.reactor import is_reactor_installed
from twisted.internet.defer import Deferred
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import (
    IAddress,
    IHostnameResolver,
    IHostResolution,
    IResolutionReceiver,
    IResolverSimple,
)
from zope.interface import implementer

from docscraper.config import ConfigError, DocscraperConfig
from docscraper.crawl.resources import CrawlResources, crawl_config
from docscraper.crawl.scope import Refusal

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from docscraper.crawl.target import CrawlTarget

__all__ = [
    "REASON",
    "SsrfConfig",
    "SsrfGuardHostnameResolver",
    "SsrfGuardMiddleware",
    "SsrfGuardResolver",
    "UrlCheck",
    "address_category",
    "check_addresses",
    "check_url",
    "environment_proxy_hosts",
    "host_address",
    "normalize_host",
    "record_refusal",
    "resolve_host",
    "source_hosts",
]

logger = logging.getLogger(__name__)

#: The ``statusReason`` of a refused URL in the report.
REASON = "blockedAddress"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_V4_TABLE: tuple[tuple[ipaddress.IPv4Network, str], ...] = tuple(
    (ipaddress.IPv4Network(net), label)
    for net, label in (
        ("0.0.0.0/8", "unspecified"),
        ("127.0.0.0/8", "loopback"),
        ("10.0.0.0/8", "private"),
        ("172.16.0.0/12", "private"),
        ("192.168.0.0/16", "private"),
        ("169.254.0.0/16", "link-local"),
        ("100.64.0.0/10", "carrier-grade NAT"),
        ("224.0.0.0/4", "multicast"),
        ("255.255.255.255/32", "broadcast"),
        ("240.0.0.0/4", "reserved"),
        # Listed so the verdict does not depend on the Python version's idea of "global".
        ("192.0.0.0/24", "reserved"),  # IETF protocol assignments
        ("192.0.2.0/24", "reserved"),  # documentation
        ("198.51.100.0/24", "reserved"),
        ("203.0.113.0/24", "reserved"),
        ("198.18.0.0/15", "reserved"),  # benchmarking
        ("192.88.99.0/24", "reserved"),  # former 6to4 relay anycast
    )
)
_V6_TABLE: tuple[tuple[ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.IPv6Network(net), label)
    for net, label in (
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "private"),  # deprecated site-local
        ("fc00::/7", "private"),
        ("ff00::/8", "multicast"),
        ("64:ff9b:1::/48", "private"),  # local-use NAT64
        ("100::/64", "reserved"),  # discard-only
        ("2001:db8::/32", "reserved"),  # documentation
        ("2001::/23", "reserved"),  # IETF protocol assignments (Teredo...)
    )
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")

#: Categories the source host's trust does not cover: only the allow-list lets them through.
_ALWAYS_REFUSED = frozenset({"link-local"})

_INET_ATON_PART = re.compile(r"^(?:0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*)$")


def address_category(address: IPAddress) -> str | None:
    """Why *address* must not be fetched (``loopback``, ``private``, ``link-local``, ``multicast``,
    ``unspecified``, ``carrier-grade NAT``, ``broadcast``, ``reserved``), or None for a global one.

    IPv6 forms that carry an IPv4 address (mapped ``::ffff:a.b.c.d``, NAT64 ``64:ff9b::a.b.c.d``, 6to4
    ``2002:AABB:CCDD::``) are judged by that address; the deprecated IPv4-compatible ``::a.b.c.d`` is
    reserved.
    """
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return address_category(embedded)
        for network6, label in _V6_TABLE:
            if address in network6:
                return label
        if address in _IPV4_COMPATIBLE:
            return "reserved"
    else:
        for network4, label in _V4_TABLE:
            if address in network4:
                return label
    # Documentation, benchmarking, protocol-assignment and other special ranges.
    return None if address.is_global else "reserved"


def _inet_aton(host: str) -> ipaddress.IPv4Address | None:
    """The address of a legacy IPv4 spelling that the C library's ``inet_aton`` accepts (1 to 4 parts,
    each decimal, ``0``-prefixed octal or ``0x`` hex; the last part fills the remaining bytes)."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4 or not all(_INET_ATON_PART.match(p) for p in parts):
        return None
    values = []
    for part in parts:
        if part.startswith("0x"):
            values.append(int(part[2:] or "0", 16))
        elif part.startswith("0") and len(part) > 1:
            values.append(int(part, 8))
        else:
            values.append(int(part))
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(parts)):
        return None
    number = 0
    for value in head:
        number = number * 256 + value
    return ipaddress.IPv4Address((number << (8 * (5 - len(parts)))) | last)


def host_address(host: str) -> IPAddress | None:
    """The IP address a URL host stands for when it is an IP literal in any spelling (``[::1]``,
    ``fe80::1%25eth0``, ``2130706433``, ``0x7f.1``), else None (a name, to be resolved)."""
    text = unquote(host).strip().lower().strip("[]").rstrip(".")
    text = text.split("%", 1)[0]  # an IPv6 zone id does not change the address
    if not text:
        return None
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return _inet_aton(text)


def normalize_host(host: str) -> str:
    """A host as compared with the trusted and allowed hosts: lowercase, IDNA, no brackets or final
    dot; standard IP literals in their compressed form (``0:0::1`` is ``::1``)."""
    text = host.strip().lower().strip("[]").rstrip(".")
    try:
        return ipaddress.ip_address(text.split("%", 1)[0]).compressed
    except ValueError:
        pass
    if not text.isascii():
        with contextlib.suppress(UnicodeError):
            text = text.encode("idna").decode("ascii")
    return text


def _host_of(url: str) -> str:
    try:
        return normalize_host(urlsplit(url).hostname or "")
    except ValueError:
        return ""


def environment_proxy_hosts() -> set[str]:
    """The hosts of the proxies the environment names (``http_proxy``... as ``urllib`` reads them): the user's,
    trusted."""
    hosts = set()
    for scheme, proxy in urllib.request.getproxies().items():
        host = _host_of(proxy if "://" in proxy else f"http://{proxy}")
        if scheme != "no" and host:
            hosts.add(host)
    return hosts


def source_hosts(target: CrawlTarget | None) -> set[str]:
    """The hosts a run trusts for its source: the seed's and an explicit ``llms_txt`` URL's, unless the source's
    scope says ``trust_host: false`` (a server's client registered it), which trusts none."""
    if target is None or target.source.scope.get("trust_host", True) is False:
        return set()
    return {host for url in (target.seed_url, target.args.llms_txt) if url and (host := _host_of(url))}


def record_refusal(crawler: Crawler, resources: CrawlResources | None, request: Request, detail: str) -> NoReturn:
    """Refuse *request* for the SSRF guard: counted (``docscraper/ssrf/refused``), logged, recorded in the report
    under the URL first requested (``blockedAddress``; once, and only for the spider's page and discovery
    requests), and dropped with :class:`~scrapy.exceptions.IgnoreRequest`."""
    redirect_urls = request.meta.get("redirect_urls")
    origin = redirect_urls[0] if redirect_urls else request.url
    if origin != request.url:
        detail = f"redirects to {request.url}: {detail}"
    if crawler.stats is not None:
        crawler.stats.inc_value("docscraper/ssrf/refused")
    logger.warning("SSRF guard refused %s: %s (DOCSCRAPER_SSRF_ALLOWED_HOSTS lets a host through)", origin, detail)
    meta = request.meta
    tracked = "docscraper_page_id" in meta or "docscraper_discovery" in meta
    if resources is not None and resources.target is not None and tracked and not meta.get("docscraper_refused"):
        resources.outcomes.refuse(origin, Refusal(REASON, detail), finder=meta.get("docscraper_finder"),
                                  discovery=meta.get("docscraper_discovery"))
        meta["docscraper_refused"] = True
    raise IgnoreRequest(f"SSRF guard: {detail}")


@dataclass(frozen=True)
class SsrfConfig:
    """``DOCSCRAPER_SSRF_GUARD_ENABLED`` (on) and ``DOCSCRAPER_SSRF_ALLOWED_HOSTS`` (names, IPs and
    CIDR networks; a list or a comma-separated string), validated."""

    enabled: bool = True
    allowed_names: frozenset[str] = frozenset()
    allowed_networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def from_config(cls, config: DocscraperConfig) -> SsrfConfig:
        names, networks = cls.parse_hosts(config.ssrf_allowed_hosts)
        return cls(config.ssrf_guard_enabled, names, networks)

    @staticmethod
    def parse_hosts(value: Any) -> tuple[frozenset[str], tuple[IPNetwork, ...]]:
        name = "DOCSCRAPER_SSRF_ALLOWED_HOSTS"
        if value is None:
            return frozenset(), ()
        items = value if isinstance(value, (list, tuple, set, frozenset)) else re.split(r"[,\s]+", str(value))
        names: set[str] = set()
        networks: list[IPNetwork] = []
        for raw in items:
            entry = str(raw).strip()
            if not entry:
                continue
            if "://" in entry or entry.startswith("/"):
                raise ConfigError(f"{name}: {entry!r} is not a host; write the host name, IP or CIDR only")
            if "/" in entry:
                try:
                    networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                except ValueError:
                    raise ConfigError(f"{name}: {entry!r} is not a valid CIDR network") from None
                continue
            address = host_address(entry)
            if address is not None:
                networks.append(ipaddress.ip_network(address))
                continue
            if ":" in entry:
                raise ConfigError(f"{name}: {entry!r}: give the host without a port")
            host = normalize_host(entry)
            if not re.match(r"^[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?$", host):
                raise ConfigError(f"{name}: {entry!r} is not a host name, IP address or CIDR network")
            names.add(host)
        return frozenset(names), tuple(networks)

    def allows_address(self, address: IPAddress) -> bool:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            mapped = address.ipv4_mapped
            if any(mapped in net for net in self.allowed_networks if net.version == 4):
                return True
        return any(address in net for net in self.allowed_networks if net.version == address.version)


@dataclass(frozen=True)
class UrlCheck:
    """The verdict on a URL before any network access: a refusal (``refusal``), a name that must be
    resolved and judged by :func:`check_addresses` (``resolve``), or neither (fetch)."""

    refusal: str | None = None
    resolve: str | None = None


def check_url(url: str, config: SsrfConfig, trusted: Collection[str] = (), *,
              file_allowed: bool = False) -> UrlCheck:
    """Judge *url* without network access. *trusted* are the normalized hosts trusted by the run (the
    source's host...); *file_allowed* lets ``file://`` URLs through (a ``file://`` source)."""
    try:
        parts = urlsplit(url)
        raw_host = parts.hostname or ""
    except ValueError as exc:
        return UrlCheck(refusal=f"malformed URL: {exc}")
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        if scheme == "file" and file_allowed:
            return UrlCheck()
        return UrlCheck(refusal=f"scheme {scheme or '(none)'} is not http(s)")
    host = normalize_host(raw_host)
    if not host:
        return UrlCheck(refusal="no host")
    if host in config.allowed_names:
        return UrlCheck()
    address = host_address(raw_host)
    if address is not None:
        if config.allows_address(address):
            return UrlCheck()
        category = address_category(address)
        if category is None or (host in trusted and category not in _ALWAYS_REFUSED):
            return UrlCheck()
        shown = raw_host if str(address) == host else f"{raw_host} ({address})"
        return UrlCheck(refusal=f"{shown} is {category}")
    if host in trusted:
        return UrlCheck()  # its answers are judged at connect time (link-local stays refused)
    return UrlCheck(resolve=host)


def check_addresses(host: str, addresses: Iterable[IPAddress], config: SsrfConfig, *,
                    trusted: bool = False) -> str | None:
    """Why *host*, resolved to *addresses*, must not be fetched; None when it may. One refused answer
    refuses the host: the connection could go to any of them."""
    if host in config.allowed_names:
        return None
    for address in addresses:
        if config.allows_address(address):
            continue
        category = address_category(address)
        if category is None or (trusted and category not in _ALWAYS_REFUSED):
            continue
        return f"{host} resolves to {address} ({category})"
    return None


# -- the process-wide registry the resolvers consult ---------------------------------------------------

_ACTIVE: list[SsrfGuardMiddleware] = []


def _refusal_at_connect(name: str, address_text: str) -> str | None:
    """The resolver's verdict on one answer: refused only when every open guard refuses it."""
    if not _ACTIVE:
        return None
    try:
        address = ipaddress.ip_address(address_text.split("%", 1)[0])
    except ValueError:
        return None
    refusals = [guard.connect_refusal(name, address) for guard in list(_ACTIVE)]
    if any(refusal is None for refusal in refusals):
        return None
    detail = refusals[0]
    assert detail is not None
    logger.warning("SSRF guard: not connecting to %s: %s", name, detail)
    for guard in list(_ACTIVE):
        guard.note_connect_refusal(name, detail)
    return detail


@implementer(IResolverSimple)
class SsrfGuardResolver(CachingThreadedResolver):
    """``TWISTED_DNS_RESOLVER``: Scrapy's default caching resolver (IPv4), whose answers the open SSRF
    guards judge at connect time; a refused answer fails the lookup."""

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Deferred[str]:
        deferred = super().getHostByName(name, timeout)
        deferred.addCallback(self._checked, name)
        return deferred

    @staticmethod
    def _checked(address: str, name: str) -> str:
        detail = _refusal_at_connect(name, address)
        if detail is not None:
            raise DNSLookupError(f"SSRF guard: {detail}")
        return address


@implementer(IResolutionReceiver)
class _GuardedReceiver:
    def __init__(self, receiver: IResolutionReceiver, name: str) -> None:
        # Any: zope interfaces are not classes mypy can check calls against.
        self._receiver: Any = receiver
        self._name = name

    def resolutionBegan(self, resolution: IHostResolution) -> None:
        self._receiver.resolutionBegan(resolution)

    def addressResolved(self, address: IAddress) -> None:
        host = getattr(address, "host", None)
        if isinstance(host, str) and _refusal_at_connect(self._name, host) is not None:
            return
        self._receiver.addressResolved(address)

    def resolutionComplete(self) -> None:
        self._receiver.resolutionComplete()


@implementer(IHostnameResolver)
class SsrfGuardHostnameResolver(CachingHostnameResolver):
    """``TWISTED_DNS_RESOLVER`` for IPv6: Scrapy's ``CachingHostnameResolver`` with refused answers
    dropped (the cache keeps the raw answers; they are judged on every lookup)."""

    def resolveHostName(
        self,
        resolutionReceiver: IResolutionReceiver,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Sequence[type[IAddress]] | None = None,
        transportSemantics: str = "TCP",
    ) -> IHostResolution:
        guarded: Any = _GuardedReceiver(resolutionReceiver, hostName)
        resolution: IHostResolution = super().resolveHostName(
            guarded, hostName, portNumber, addressTypes, transportSemantics
        )
        return resolution


def resolve_host(host: str) -> list[IPAddress]:
    """Every address *host* resolves to (blocking; run in a thread)."""
    addresses: list[IPAddress] = []
    for *_, sockaddr in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM):
        try:
            address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        except ValueError:
            continue
        if address not in addresses:
            addresses.append(address)
    return addresses


def _connect_guard_installed() -> bool | None:
    """Whether the reactor's resolver is a guard resolver; None when no reactor is installed."""
    if not is_reactor_installed():
        return None
    reactor = sys.modules["twisted.internet.reactor"]
    return isinstance(getattr(reactor, "resolver", None), SsrfGuardResolver) or isinstance(
        getattr(reactor, "nameResolver", None), SsrfGuardHostnameResolver
    )


class SsrfGuardMiddleware:
    """Refuse requests to the crawler's own network (see the module docstring).

    Settings: ``DOCSCRAPER_SSRF_GUARD_ENABLED`` (on), ``DOCSCRAPER_SSRF_ALLOWED_HOSTS`` (empty).
    Meta: reads ``redirect_urls``, ``docscraper_page_id``, ``docscraper_discovery``, ``proxy``; sets
    ``docscraper_refused``. Stats: ``docscraper/ssrf/refused``, ``docscraper/ssrf/refused_at_connect``.
    """

    def __init__(self, crawler: Crawler, config: SsrfConfig) -> None:
        self.crawler = crawler
        # the run's target (trusted hosts) and outcomes (refusals); None outside a docs crawl
        self.resources = CrawlResources.find(crawler)
        self.config = config
        self._proxy_hosts = environment_proxy_hosts()
        self._verdicts: dict[str, str | None] = {}
        self._connect_refusals: dict[str, str] = {}
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SsrfGuardMiddleware:
        try:
            config = SsrfConfig.from_config(crawl_config(crawler))
        except ConfigError as exc:
            raise ConfigError(f"SSRF guard: {exc}") from None
        if not config.enabled:
            raise NotConfigured("DOCSCRAPER_SSRF_GUARD_ENABLED is off")
        return cls(crawler, config)

    # lifecycle -------------------------------------------------------------------------------------

    def _spider_opened(self, spider: Any) -> None:
        if self not in _ACTIVE:
            _ACTIVE.append(self)
        installed = _connect_guard_installed()
        logger.debug("SSRF guard on (connect-time check: %s); allowed: %s %s", installed,
                     sorted(self.config.allowed_names), [str(n) for n in self.config.allowed_networks])
        if installed is False:
            logger.warning(
                "SSRF guard: the installed DNS resolver is not docscraper.crawl.ssrf.SsrfGuardResolver "
                "(TWISTED_DNS_RESOLVER); names are checked before each request but not at connect time"
            )

    def _spider_closed(self, spider: Any) -> None:
        if self in _ACTIVE:
            _ACTIVE.remove(self)

    # policy ----------------------------------------------------------------------------------------

    def trusted_hosts(self) -> set[str]:
        """The source's host, an explicit ``llms_txt`` URL's host (unless the source's scope says
        ``trust_host: false``: a server's client registered it), and the proxies in use."""
        return self._proxy_hosts | source_hosts(self._target())

    def _target(self) -> CrawlTarget | None:
        return self.resources.target if self.resources is not None else None

    def _file_allowed(self, url: str) -> bool:
        target = self._target()
        if target is None:
            return False
        if urlsplit(target.seed_url).scheme.lower() == "file":
            return True
        return bool(target.args.llms_txt) and url == target.args.llms_txt

    def connect_refusal(self, name: str, address: IPAddress) -> str | None:
        """The verdict on a connection to *address*, resolved from *name* (the resolver layer)."""
        host = normalize_host(name)
        return check_addresses(host, [address], self.config, trusted=host in self.trusted_hosts())

    def note_connect_refusal(self, name: str, detail: str) -> None:
        self._connect_refusals[normalize_host(name)] = detail
        self._stat("ssrf/refused_at_connect")

    async def check(self, url: str) -> str | None:
        """Why *url* must not be fetched, or None; names are resolved (off the reactor thread)."""
        trusted = self.trusted_hosts()
        verdict = check_url(url, self.config, trusted, file_allowed=self._file_allowed(url))
        if verdict.resolve is None:
            return verdict.refusal
        host = verdict.resolve
        if host in self._verdicts:
            return self._verdicts[host]
        try:
            addresses = await run_in_thread(resolve_host, host)
        except (OSError, UnicodeError):
            return None  # cannot resolve: the download fails on its own, as a network error
        refusal = check_addresses(host, addresses, self.config)
        self._verdicts[host] = refusal
        return refusal

    # downloader middleware -------------------------------------------------------------------------

    async def process_request(self, request: Request) -> None:
        proxy = request.meta.get("proxy")
        if proxy and _host_of(str(proxy)):
            self._proxy_hosts.add(_host_of(str(proxy)))
        # A name the resolver refused is refused at once: RetryMiddleware retries DNS failures.
        detail = self._connect_refusals.get(_host_of(request.url)) or await self.check(request.url)
        if detail is not None:
            self._refuse(request, detail)

    def process_exception(self, request: Request, exception: Exception) -> None:
        if isinstance(exception, (DNSLookupError, CannotResolveHostError)):
            detail = self._connect_refusals.get(_host_of(request.url))
            if detail is not None:
                self._refuse(request, detail)

    def _stat(self, name: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"docscraper/{name}")

    def _refuse(self, request: Request, detail: str) -> NoReturn:
        record_refusal(self.crawler, self.resources, request, detail)
