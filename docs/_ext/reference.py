"""The reference pages generated from the code at each build, so that they cannot drift from it.

A Sphinx extension (``docs/conf.py`` loads it): when the build starts it writes Markdown under
``docs/reference/_generated/`` (ignored by git), which the reference pages include:

* ``commands.md``: each docscraper command's ``scrapy <command> -h``, run with the project's interpreter;
* ``settings.md``: every ``DOCSCRAPER_*`` name the code reads, with its default as the code states it (the
  settings modules' assignments, the default of each ``settings.get``), where it is read, and what the
  :class:`docscraper.config.DocscraperConfig` docstring or the settings module's comment says about it;
* ``schema-<name>.md``: each JSON Schema of ``docscraper/schema/``, its fields and their descriptions.
"""

from __future__ import annotations

import ast
import json
import os
import re
import site
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "reference" / "_generated"
CODE = ("docscraper", "pipelines", "settings")
SETTINGS_MODULES = (ROOT / "settings" / "__init__.py", ROOT / "settings" / "distributed.py")
SETTING = re.compile(r"^DOCSCRAPER_[A-Z0-9_]+$")
#: What ``settings.get`` and friends are called on: a Scrapy ``Settings`` object, or the environment.
READERS = {"get", "getbool", "getint", "getfloat", "getlist", "getdict", "getwithbase", "pop"}


def _venv() -> Path:
    return Path(os.environ.get("DOCSCRAPER_DOCS_VENV") or ROOT / ".venv").resolve()


def add_project_packages() -> None:
    """The project and its venv's packages first on ``sys.path``, so autodoc imports docscraper with the packages
    it runs with. Sphinx and its docutils were imported from the docs venv before this runs, and stay."""
    before = list(sys.path)
    for packages in sorted(_venv().glob("lib/python3*/site-packages")):
        site.addsitedir(str(packages))
    added = [path for path in sys.path if path not in before]
    sys.path[:] = [str(ROOT), *added, *(path for path in before if path != str(ROOT))]


def _python() -> str:
    """The project's interpreter: ``$DOCSCRAPER_DOCS_VENV/bin/python`` (make docs sets it), else ``.venv``'s."""
    return str(_venv() / "bin" / "python")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    text = " ".join(text.split())
    ticks = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{ticks}{pad}{text}{pad}{ticks}".replace("|", "\\|")


# -- commands ----------------------------------------------------------------------------------------

def command_names() -> list[str]:
    return sorted(p.stem for p in (ROOT / "docscraper" / "commands").glob("*.py") if not p.stem.startswith("_"))


def command_help(name: str) -> str:
    env = dict(os.environ, COLUMNS="100", HF_HUB_OFFLINE="1", PYTHONWARNINGS="ignore")
    proc = subprocess.run([_python(), "-m", "scrapy", name, "-h"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"scrapy {name} -h exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc.stdout.rstrip()


def commands_markdown() -> str:
    names = command_names()
    with ThreadPoolExecutor(max_workers=2) as pool:
        helps = list(pool.map(command_help, names))
    parts = []
    for name, text in zip(names, helps, strict=True):
        parts.append(f"## `scrapy {name}`\n\n```text\n$ scrapy {name} -h\n{text}\n```\n")
    return "\n".join(parts)


# -- settings ----------------------------------------------------------------------------------------

def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _comment_above(lines: list[str], lineno: int) -> str:
    """The ``#`` comment lines right above line *lineno* (1-based), joined."""
    found: list[str] = []
    index = lineno - 2
    while index >= 0 and lines[index].lstrip().startswith("#") and not lines[index].lstrip().startswith("# --"):
        found.insert(0, lines[index].strip().lstrip("#").strip())
        index -= 1
    return " ".join(found)


class _Reads(ast.NodeVisitor):
    """Every ``<x>.get*("DOCSCRAPER_...", default)`` of a module, with its default as written (an ``or``
    after the call counts as its default)."""

    def __init__(self, source: str, constants: dict[str, str]) -> None:
        self.source = source
        self.constants = constants  # module-level names bound to a setting's name (``TOKEN_ENV = "DOCSCRAPER_..."``)
        self.found: list[tuple[str, str | None, bool]] = []  # name, default, from the environment

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        if isinstance(node.op, ast.Or) and self._read(node.values[0]) is not None:
            name, default, env = self._read(node.values[0])  # type: ignore[misc]
            fallback = " or ".join(ast.get_source_segment(self.source, v) or "" for v in node.values[1:])
            self.found.append((name, default or fallback, env))
            for value in node.values[1:]:
                self.visit(value)
            for arg in node.values[0].args:  # type: ignore[attr-defined]
                self.visit(arg)
            return
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        read = self._read(node)
        if read is not None:
            self.found.append(read)
        self.generic_visit(node)

    def _read(self, node: ast.AST) -> tuple[str, str | None, bool] | None:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in READERS
                and node.args):
            return None
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            name = first.value
        elif isinstance(first, ast.Name) and first.id in self.constants:
            name = self.constants[first.id]
        else:
            return None
        if not SETTING.match(name):
            return None
        env = ast.unparse(node.func.value) in ("os.environ", "environ")
        if node.func.attr == "pop" and not env:
            return None
        default = ast.get_source_segment(self.source, node.args[1]) if len(node.args) > 1 else None
        if node.func.attr == "pop" and default == "None":
            default = None
        return name, default, env


def _setting_constants(paths: list[Path]) -> dict[str, str]:
    """Module-level names bound to a ``DOCSCRAPER_*`` string (``SETTINGS_ENV``, ``TOKEN_ENV``), in any module."""
    found: dict[str, str] = {}
    for path in paths:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str) and SETTING.match(node.value.value)):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found[target.id] = node.value.value
    return found


def _docstring_notes() -> dict[str, str]:
    """What the ``DocscraperConfig`` docstring says after each ``DOCSCRAPER_*`` name, up to the next one."""
    tree = ast.parse((ROOT / "docscraper" / "config.py").read_text(encoding="utf-8"))
    doc = next(ast.get_docstring(node) or "" for node in ast.walk(tree)
               if isinstance(node, ast.ClassDef) and node.name == "DocscraperConfig")
    text = " ".join(doc.split())
    notes: dict[str, str] = {}
    matches = list(re.finditer(r"``(DOCSCRAPER_[A-Z0-9_]+)``", text))
    for match, following in zip(matches, [*matches[1:], None], strict=True):
        rest = text[match.end():]
        if rest.startswith(" ("):  # ``NAME`` (what it does): the parenthesis, balanced
            depth, end = 0, len(rest)
            for index, char in enumerate(rest):
                depth += {"(": 1, ")": -1}.get(char, 0)
                if char == ")" and depth == 0:
                    end = index
                    break
            note = rest[2:end]
        else:  # ``NAME``: what it does, up to the next setting or the sentence's end
            stop = following.start() - match.end() if following else len(rest)
            note = re.split(r"(?<=[a-z)])\. ", rest[:stop], maxsplit=1)[0]
        note = note.strip(" ,;.:")
        if match.group(1) not in notes and note:
            notes[match.group(1)] = note
    return notes


def settings_inventory() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}

    def entry(name: str) -> dict[str, Any]:
        return found.setdefault(name, {"assigned": {}, "defaults": set(), "modules": set(), "env": False,
                                       "comment": ""})

    for path in SETTINGS_MODULES:
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        for node in ast.parse(source).body:
            targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
            for target in targets:
                if isinstance(target, ast.Name) and SETTING.match(target.id) and node.value is not None:
                    item = entry(target.id)
                    item["assigned"][_module_name(path)] = ast.get_source_segment(source, node.value)
                    item["comment"] = item["comment"] or _comment_above(lines, node.lineno)
    paths = [path for package in CODE for path in sorted((ROOT / package).rglob("*.py"))
             if "migrations" not in path.parts]
    constants = _setting_constants(paths)
    for path in paths:
        source = path.read_text(encoding="utf-8")
        reads = _Reads(source, constants)
        reads.visit(ast.parse(source))
        for name, default, env in reads.found:
            item = entry(name)
            item["modules"].add(_module_name(path))
            item["env"] = item["env"] or env
            if default is not None:
                item["defaults"].add((_module_name(path), default))
    return dict(sorted(found.items()))


def settings_markdown() -> str:
    notes = _docstring_notes()
    rows = ["| setting | default, as each module states it | read by | what it does |", "|---|---|---|---|"]
    for name, item in settings_inventory().items():
        defaults = [f"`{module}`: {_code(value)}" for module, value in item["assigned"].items()]
        defaults += [f"`{module}`: {_code(value)}" for module, value in sorted(item["defaults"])]
        if not defaults:
            defaults = ["unset"]
        readers = [f"`{m}`" for m in sorted(item["modules"])]
        if item["env"]:
            readers.append("(environment)")
        note = notes.get(name) or item["comment"] or "(not described in `DocscraperConfig`'s docstring)"
        rows.append(f"| `{name}` | {'<br>'.join(defaults)} | {', '.join(readers) or 'the settings module'} | "
                    f"{_cell(_rst_to_markdown(note))} |")
    return "\n".join(rows) + "\n"


def _rst_to_markdown(text: str) -> str:
    """The docstring's reStructuredText inline markup, as Markdown for the table."""
    text = re.sub(r":(?:mod|class|func|data|meth|attr):`~?([^`]+)`", r"`\1`", text)
    return re.sub(r"``([^`]+)``", r"`\1`", text)


# -- JSON Schemas ------------------------------------------------------------------------------------

def _type(node: dict[str, Any]) -> str:
    if "const" in node:
        return _code(json.dumps(node["const"]))
    if "enum" in node:
        return " \\| ".join(_code(json.dumps(v)) for v in node["enum"])
    kind = node.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array" and isinstance(node.get("items"), dict) and node["items"].get("type"):
        return f"array of {_type(node['items'])}"
    if kind:
        return str(kind)
    if "oneOf" in node or "anyOf" in node:
        return " or ".join(_type(n) for n in node.get("oneOf") or node.get("anyOf"))
    return "any"


def _fields(node: dict[str, Any], prefix: str, rows: list[str]) -> None:
    required = set(node.get("required", []))
    for key, child in (node.get("properties") or {}).items():
        path = f"{prefix}{key}"
        need = "yes" if key in required else ""
        rows.append(f"| `{path}` | {_type(child)} | {need} | {_cell(child.get('description', ''))} |")
        _fields(child, f"{path}.", rows)
        items = child.get("items")
        if isinstance(items, dict):
            _fields(items, f"{path}[].", rows)
        extra = child.get("additionalProperties")
        if isinstance(extra, dict) and (extra.get("properties") or extra.get("description")):
            rows.append(f"| `{path}.<key>` | {_type(extra)} |  | {_cell(extra.get('description', ''))} |")
            _fields(extra, f"{path}.<key>.", rows)


def schema_markdown(path: Path) -> str:
    schema = json.loads(path.read_text(encoding="utf-8"))
    relative = path.relative_to(ROOT).as_posix()
    rows = ["| field | type | required | description |", "|---|---|---|---|"]
    _fields(schema, "", rows)
    return (f"{schema.get('description', '')}\n\nSchema: `{relative}` (`{schema.get('$id', '')}`).\n\n"
            + "\n".join(rows) + "\n")


# -- Sphinx ------------------------------------------------------------------------------------------

def _write(name: str, text: str) -> None:
    target = OUT / name
    if not target.exists() or target.read_text(encoding="utf-8") != text:  # untouched: Sphinx reads it again only if changed
        target.write_text(text, encoding="utf-8")


def generate() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    _write("commands.md", commands_markdown())
    _write("settings.md", settings_markdown())
    for path in sorted((ROOT / "docscraper" / "schema").glob("*.schema.json")):
        _write(f"schema-{path.name.removesuffix('.schema.json')}.md", schema_markdown(path))


def _on_builder_inited(app: Any) -> None:
    generate()


def setup(app: Any) -> dict[str, Any]:
    add_project_packages()  # again: Sphinx may restore sys.path after reading conf.py
    # LlamaIndex's pydantic models fail to build when first imported from inside autodoc's importer (Sphinx 9.0,
    # pydantic 2.14): imported here, before it, they build as in a program.
    import docscraper.library.llamaindex  # noqa: F401
    app.connect("builder-inited", _on_builder_inited)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    generate()
    print(f"wrote {OUT}")
