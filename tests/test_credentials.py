"""Credentials of private sources: references, values, and the origin rule (docscraper.credentials,
docscraper.crawl.auth). The crawls behind credentials are in test_private_sources.py."""

from __future__ import annotations

import base64
import os
import time
from pathlib import Path

import pytest

from docscraper.config import ConfigError, CrawlArgs, DocscraperConfig
from docscraper.crawl.auth import apply_credentials
from docscraper.credentials import CredentialError, CredentialRefs, load_credentials, parse_reference

SECRET = "s3cr3t-Token-0123456789"


def test_references_are_names_never_values() -> None:
    assert parse_reference("env:DOCS_TOKEN") == "env:DOCS_TOKEN"
    assert parse_reference("DOCS_TOKEN") == "env:DOCS_TOKEN"
    assert parse_reference(" FILE:intranet-cookies.txt ") == "file:intranet-cookies.txt"
    for bad in ("file:/etc/passwd", "file:../x", "file:a/b", f"Authorization: Bearer {SECRET}", "env:", "ftp:x",
                f"env:{SECRET} x"):
        with pytest.raises(CredentialError) as caught:
            parse_reference(bad)
        assert SECRET not in str(caught.value)
        assert "/etc/passwd" not in str(caught.value)
    with pytest.raises(CredentialError, match="unknown credential kind"):
        CredentialRefs.parse({"token": "env:X"})


def test_crawl_arguments_take_references(tmp_path: Path) -> None:
    args = CrawlArgs.parse({"source": "https://docs.example.com/", "auth_headers": "DOCS_H",
                            "auth_cookies": "file:jar.txt"})
    assert args.credentials.as_dict() == {"headers": "env:DOCS_H", "cookies": "file:jar.txt"}
    with pytest.raises(ConfigError) as caught:
        CrawlArgs.parse({"source": "https://docs.example.com/", "auth_basic": f"user:{SECRET}"})
    assert SECRET not in str(caught.value)
    with pytest.raises(ConfigError, match="http"):
        CrawlArgs.parse({"source": tmp_path.as_uri(), "auth_basic": "env:X"})


def test_headers_go_to_the_source_origin_only() -> None:
    env = {"DOCS_H": f"# a comment\nAuthorization: Bearer {SECRET}\nX-Api-Key: key-{SECRET}\n"}
    creds = load_credentials(CredentialRefs(headers="env:DOCS_H"), "https://docs.example.com:8443/en/", environ=env)
    assert creds is not None
    assert creds.headers_for("https://docs.example.com:8443/en/page.html") == {
        "Authorization": f"Bearer {SECRET}", "X-Api-Key": f"key-{SECRET}"}
    # another scheme, host (a subdomain included) or port is another origin
    for url in ("http://docs.example.com:8443/en/", "https://docs.example.com/en/", "https://cdn.docs.example.com:8443/",
                "https://example.com:8443/", "https://evil.example/"):
        assert creds.headers_for(url) == {}
    assert SECRET not in repr(creds)
    assert f"Bearer {SECRET}" in creds.secrets() and SECRET in creds.secrets()
    # the default port is the scheme's
    implicit = load_credentials(CredentialRefs(headers="env:DOCS_H"), "https://docs.example.com/", environ=env)
    assert implicit is not None and implicit.applies_to("https://docs.example.com:443/x")


def test_basic_auth_from_a_private_file(tmp_path: Path) -> None:
    secret_file = tmp_path / "docs-basic"
    secret_file.write_text(f"reader:{SECRET}\n")
    secret_file.chmod(0o600)
    creds = load_credentials(CredentialRefs(basic="file:docs-basic"), "http://127.0.0.1:8000/", secrets_dir=tmp_path)
    assert creds is not None
    token = base64.b64encode(f"reader:{SECRET}".encode()).decode()
    assert creds.headers_for("http://127.0.0.1:8000/docs/") == {"Authorization": f"Basic {token}"}
    assert token in creds.secrets()
    secret_file.chmod(0o644)
    with pytest.raises(CredentialError, match="chmod 600"):
        load_credentials(CredentialRefs(basic="file:docs-basic"), "http://127.0.0.1:8000/", secrets_dir=tmp_path)
    with pytest.raises(CredentialError, match="no file nothing-here"):
        load_credentials(CredentialRefs(basic="file:nothing-here"), "http://127.0.0.1:8000/", secrets_dir=tmp_path)


def test_missing_or_malformed_values_are_named_not_shown() -> None:
    with pytest.raises(CredentialError, match="DOCS_UNSET is not set"):
        load_credentials(CredentialRefs(headers="env:DOCS_UNSET"), "https://d.example/", environ={})
    for kind, value in (("headers", f"Bearer {SECRET}"), ("basic", SECRET), ("headers", f"Host: {SECRET}")):
        with pytest.raises(CredentialError) as caught:
            load_credentials(CredentialRefs(**{kind: "env:V"}), "https://d.example/", environ={"V": value})
        assert SECRET not in str(caught.value)
    with pytest.raises(CredentialError, match="both set Authorization"):
        load_credentials(CredentialRefs(headers="env:H", basic="env:B"), "https://d.example/",
                         environ={"H": "Authorization: Bearer x", "B": "u:p"})
    with pytest.raises(CredentialError, match="http"):
        load_credentials(CredentialRefs(headers="env:H"), "file:///tmp/docs/", environ={"H": "A: b"})


def test_netscape_cookies_match_host_path_expiry_and_scheme() -> None:
    future = int(time.time()) + 3600
    jar = "\n".join([
        "# Netscape HTTP Cookie File",
        f"docs.example.com\tFALSE\t/\tFALSE\t{future}\tsession\t{SECRET}",
        "#HttpOnly_docs.example.com\tFALSE\t/private\tFALSE\t0\tdeep\tdeep-value",
        f".example.com\tTRUE\t/\tTRUE\t{future}\tsecure_only\tsv-1234",
        f"docs.example.com\tFALSE\t/\tFALSE\t{int(time.time()) - 10}\texpired\told-value",
        f"other.example.org\tFALSE\t/\tFALSE\t{future}\tforeign\tforeign-value",
    ])
    creds = load_credentials(CredentialRefs(cookies="env:JAR"), "http://docs.example.com/", environ={"JAR": jar})
    assert creds is not None
    assert creds.headers_for("http://docs.example.com/guide/") == {"Cookie": f"session={SECRET}"}
    assert creds.headers_for("http://docs.example.com/private/a.html") == {
        "Cookie": f"session={SECRET}; deep=deep-value"}
    assert creds.headers_for("http://docs.example.com:8080/") == {}
    https = load_credentials(CredentialRefs(cookies="env:JAR"), "https://docs.example.com/", environ={"JAR": jar})
    assert https is not None
    assert "secure_only=sv-1234" in https.headers_for("https://docs.example.com/")["Cookie"]
    with pytest.raises(CredentialError, match="no cookie in it is for"):
        load_credentials(CredentialRefs(cookies="env:JAR"), "http://elsewhere.example/", environ={"JAR": jar})
    pairs = load_credentials(CredentialRefs(cookies="env:C"), "http://d.example/", environ={"C": "a=1; b=2"})
    assert pairs is not None and pairs.headers_for("http://d.example/x") == {"Cookie": "a=1; b=2"}


def test_apply_credentials_adds_on_origin_and_strips_elsewhere() -> None:
    creds = load_credentials(CredentialRefs(headers="env:H", cookies="env:C"), "http://127.0.0.1:8000/",
                             environ={"H": f"X-Api-Key: {SECRET}", "C": f"sid={SECRET}"})
    assert creds is not None
    on, stripped = apply_credentials(creds, "http://127.0.0.1:8000/a", {"Cookie": "theme=dark", "Accept": "*/*"})
    assert on == {"accept": "*/*", "x-api-key": SECRET, "cookie": f"theme=dark; sid={SECRET}"} and not stripped
    # a redirect to another origin carried them on: taken off, the other site's own cookie kept
    off, stripped = apply_credentials(creds, "http://127.0.0.1:9000/a",
                                      {"X-Api-Key": SECRET, "Cookie": f"sid={SECRET}; lang=en", "Accept": "*/*"})
    assert off == {"accept": "*/*", "cookie": "lang=en"} and stripped
    clean, stripped = apply_credentials(creds, "http://127.0.0.1:9000/a", {"Accept": "*/*"})
    assert clean == {"accept": "*/*"} and not stripped


def test_server_credentials_setting_is_references() -> None:
    from scrapy.settings import Settings

    config = DocscraperConfig.from_settings(Settings({"DOCSCRAPER_SERVER_CREDENTIALS": "DOCS_TOKEN, file:jar"}))
    assert config.server_credentials == ("env:DOCS_TOKEN", "file:jar")
    with pytest.raises(ConfigError):
        DocscraperConfig.from_settings(Settings({"DOCSCRAPER_SERVER_CREDENTIALS": "file:/etc/shadow"}))
    assert os.environ.get("DOCS_UNSET") is None
