"""Packaging: ``scrapyd-deploy`` builds an egg of the project from this file; ``pip install .`` installs the
library (``pip install ".[langchain]"``, ``".[llamaindex]"`` for the integrations)."""

from setuptools import find_packages, setup

setup(
    name="docscraper",
    version="0.1.0",
    packages=find_packages(exclude=["tests", "tests.*", "benchmarks", "benchmarks.*"]),
    package_data={"docscraper": ["schema/*.json", "storage/state/migrations/*.mako", "ops/templates/*.html", "ops/static/*"]},
    include_package_data=True,
    zip_safe=False,
    entry_points={
        "scrapy": ["settings = settings"],
        # the MCP server (also `scrapy mcp`); run it from the project root, or set SCRAPY_SETTINGS_MODULE
        "console_scripts": ["docscraper-mcp = docscraper.ops.mcp_server:main", "docscraper-serve = docscraper.ops.server:main"],
    },
    python_requires=">=3.11",
    # docscraper.library.langchain / .llamaindex (README, "Python API"); requirements-dev.txt pins the versions
    # CI tests
    extras_require={
        "langchain": ["langchain-core>=1.8.3,<2"],
        "llamaindex": ["llama-index-core>=0.14.25,<0.15"],
    },
)
