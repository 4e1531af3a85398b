"""Packaging for Scrapyd: ``scrapyd-deploy`` builds an egg of the project from this file."""

from setuptools import find_packages, setup

setup(
    name="docscraper",
    version="0.1.0",
    packages=find_packages(exclude=["tests", "tests.*", "benchmarks", "benchmarks.*"]),
    package_data={"docscraper": ["schema/*.json", "storage/state/migrations/*.mako"]},
    include_package_data=True,
    zip_safe=False,
    entry_points={
        "scrapy": ["settings = settings"],
        # the MCP server (also `scrapy mcp`); run it from the project root, or set SCRAPY_SETTINGS_MODULE
        "console_scripts": ["docscraper-mcp = docscraper.ops.mcp_server:main"],
    },
    python_requires=">=3.11",
)
