#!/usr/bin/env bash
# Debian packages the test suite needs, installed only when missing (`make test` runs this first):
#   chromium       the rendering tests (tests/test_render.py) render pages in it
#   postgresql     initdb/pg_ctl for the PostgreSQL state tests (tests/test_postgres.py)
#   redis-server   the shared frontier tests (tests/test_distributed.py)
#   faketime       libfaketime, which steps the wall clock of a crawl (tests/test_clock.py)
#   tesseract-ocr  OCR of scanned PDFs (DOCSCRAPER_DOCUMENT_OCR; tests/test_documents.py); with its English data
# The tests that need them fail, never skip, when they are missing. Tries the package lists at hand first
# and runs `apt-get update` only when that fails. Needs root or sudo; prints what to do otherwise.
set -euo pipefail

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
if ! command -v initdb >/dev/null 2>&1 && ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
    missing+=(postgresql)
fi
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
compgen -G "/usr/lib/*/faketime/libfaketime.so.1" >/dev/null || missing+=(faketime)
command -v tesseract >/dev/null 2>&1 || missing+=(tesseract-ocr)
[ ${#missing[@]} -eq 0 ] && exit 0

echo "system-deps: installing ${missing[*]} (Debian packages)"
sudo_cmd=""
if [ "$(id -u)" != 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "system-deps: run as root: apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
    sudo_cmd="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
if ! $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1; then
    $sudo_cmd apt-get update -qq >/dev/null
    $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
