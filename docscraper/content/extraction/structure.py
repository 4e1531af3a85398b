"""Structure fixes before conversion: tab labels, embedded images, line-numbered code tables, layout
tables and pathological nesting, rewritten into the plain HTML that converts to good Markdown."""

from __future__ import annotations

import itertools
import re

from lxml import etree

from docscraper.content.extraction._dom import (
    Node,
    attr,
    child_elements,
    classes,
    collapse_ws,
    has_descendant,
    is_under,
    prepend,
    replace,
    replace_with_text,
    text,
    tokens,
)
from docscraper.content.images import image_source

__all__ = [
    "LINENO_TOKENS",
    "MAX_DEPTH",
    "flatten_deep",
    "label_tab_panels",
    "objects_to_images",
    "prepare_tables",
    "unwrap_code_tables",
]

#: Elements nested deeper than this below ``<body>`` are flattened to their text, so that no
#: converter recursion has to go deeper.
MAX_DEPTH = 120

_FLATTEN_AT = etree.XPath("/".join(["*"] * MAX_DEPTH))


def _label(el: Node, label: str) -> None:
    """Put ``**label**`` as a paragraph at the top of ``el``."""
    if not label:
        return
    paragraph = el.makeelement("p", {})  # of the page's tree, so that it is a Node too
    strong = etree.SubElement(paragraph, "strong")
    strong.text = label
    prepend(el, paragraph)


_TABLISTS = etree.XPath("descendant::*[@role = 'tablist']")
_MAYBE_LABEL_GROUPS = etree.XPath("descendant::*[contains(@class, 'tabbed-labels')]")


def label_tab_panels(root: Node) -> None:
    """Put each tab's label at the top of its panel, then drop the tab strip.

    Tabbed examples (pip/conda, Python/JavaScript) are content; their labels sit in a separate strip
    of buttons or labels that chrome removal would discard.
    """
    for tablist in _TABLISTS(root):
        parent = tablist.getparent()
        if parent is None or not is_under(tablist, root):
            continue
        tabs = [t for t in tablist.iterdescendants() if attr(t, "role") == "tab"]
        found = [t for t in parent.iterdescendants() if attr(t, "role") == "tabpanel"]
        found_set = set(found)
        panels = [p for p in found if not any(a in found_set for a in p.iterancestors())]
        by_id = {attr(t, "id"): collapse_ws(text(t)) for t in tabs if t.get("id")}
        if by_id and all(attr(p, "aria-labelledby") in by_id for p in panels):
            for panel in panels:
                _label(panel, by_id[attr(panel, "aria-labelledby")])
        elif len(tabs) == len(panels):
            for tab, panel in zip(tabs, panels, strict=True):
                _label(panel, collapse_ws(text(tab)))
        tablist.drop_tree()

    # Material for MkDocs content tabs: labels and blocks in two sibling groups.
    for labels in _MAYBE_LABEL_GROUPS(root):
        container = labels.getparent()
        if container is None or "tabbed-labels" not in classes(labels) or not is_under(labels, root):
            continue
        content = next((c for c in child_elements(container) if "tabbed-content" in classes(c)), None)
        blocks = [b for b in child_elements(content) if "tabbed-block" in classes(b)] if content is not None else []
        names = [collapse_ws(text(label)) for label in labels.iterdescendants("label")]
        if blocks and len(blocks) == len(names):
            for name, block in zip(names, blocks, strict=True):
                _label(block, name)
        labels.drop_tree()


_IMAGE_DATA_RE = re.compile(r"\.(?:svgz?|png|gif|jpe?g|webp|avif|bmp)$", re.I)


def objects_to_images(root: Node) -> None:
    """Turn an image shown through ``<object data="x.svg" type="image/svg+xml">`` into an ``<img>``.

    DocBook's HTML (the PostgreSQL manual's figures) embeds its SVG diagrams this way; ``<object>`` is
    otherwise junk, so the diagram would vanish from the page's images and Markdown. A fallback
    ``<img>`` inside the object takes its place; else a new ``<img>`` gets the fallback text as its alt.
    """
    for obj in list(root.iterdescendants("object")):
        data = attr(obj, "data")
        kind = attr(obj, "type").lower()
        if not data or not (kind.startswith("image/") or _IMAGE_DATA_RE.search(data.split("?", 1)[0].split("#", 1)[0])):
            continue
        if not is_under(obj, root):
            continue
        img = next((i for i in obj.iterdescendants("img") if image_source(i)), None)
        if img is None:
            img = obj.makeelement("img", {"src": data, "alt": collapse_ws(text(obj))})
            for name in ("title", "width", "height"):
                value = obj.get(name)
                if value is not None:
                    img.set(name, value)
        replace(obj, img)


#: Class tokens of line-number gutters in code blocks.
LINENO_TOKENS = frozenset(
    {
        "linenos", "lineno", "linenodiv", "linenumber", "line-number", "line-numbers",
        "line-numbers-rows", "lnt", "ln", "gutter", "blob-num", "code-line-number",
    }
)  # fmt: skip


def unwrap_code_tables(root: Node) -> None:
    """Replace line-numbered code tables (Pygments ``highlighttable``, Chroma ``lntable``) by the code."""
    for table in list(root.iterdescendants("table")):
        if not is_under(table, root):
            continue
        # The cheap tests first: walking every table's whole subtree for <pre> is quadratic in nesting.
        found = set(tokens(table))
        gutter = any(set(tokens(cell)) & LINENO_TOKENS for cell in itertools.islice(table.iterdescendants("td", "th"), 4))
        if not (found & {"highlighttable", "lntable"} or gutter):
            continue
        pres = list(table.iterdescendants("pre"))
        if not pres:
            continue
        code_cell = next((td for td in table.iterdescendants("td") if "code" in classes(td)), None)
        code = next(code_cell.iterdescendants("pre"), None) if code_cell is not None else None
        replace(table, code if code is not None else pres[-1])


_BLOCK_IN_CELL = ("h1", "h2", "h3", "h4", "h5", "h6", "dl", "pre", "blockquote", "table")
_ROW_GROUP_NAMES = frozenset({"thead", "tbody", "tfoot"})
_CELL_NAMES = frozenset({"td", "th"})


def _table_rows(table: Node) -> list[Node]:
    rows: list[Node] = []
    for child in child_elements(table):
        if child.tag == "tr":
            rows.append(child)
        elif child.tag in _ROW_GROUP_NAMES:
            rows.extend(child_elements(child, frozenset({"tr"})))
    return rows


def prepare_tables(root: Node) -> None:
    """Make data tables convertible to pipe tables and turn layout tables into plain blocks."""
    for table in list(root.iterdescendants("table")):
        for col in list(table.iterdescendants("colgroup", "col")):
            if col.getparent() is not None:
                col.drop_tree()
        captions = child_elements(table, frozenset({"caption"}))
        if captions:
            caption = captions[0]
            caption.tag = "p"
            caption.drop_tree()
            caption.tail = None
            table.addprevious(caption)
        rows = _table_rows(table)
        cells = [c for r in rows for c in child_elements(r, _CELL_NAMES)]
        layout = (
            attr(table, "role").lower() in ("presentation", "none")
            or not cells
            or len(cells) == 1
            or has_descendant(table, ("table",))
            or any(has_descendant(cell, _BLOCK_IN_CELL) for cell in cells)
        )
        if not layout:
            # The first row is the header (html-to-markdown would read a small headerless table
            # whose cells are mostly links as a list).
            for cell in child_elements(rows[0], _CELL_NAMES):
                cell.tag = "th"
            continue
        table.tag = "div"
        for child in child_elements(table, _ROW_GROUP_NAMES):
            child.tag = "div"
        for row in rows:
            row.tag = "div"
        for cell in cells:
            cell.tag = "div"


def flatten_deep(root: Node) -> None:
    """Replace elements nested deeper than :data:`MAX_DEPTH` below ``root`` by their text."""
    for el in _FLATTEN_AT(root):
        replace_with_text(el, " ".join(s for s in el.itertext() if s))
