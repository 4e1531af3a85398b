"""Structure fixes before conversion: tab labels, embedded images, line-numbered code tables, layout
tables and pathological nesting, rewritten into the plain HTML that converts to good Markdown."""

from __future__ import annotations

import itertools
import re

from lxml import etree

from docscraper.content.extraction._dom import (
    HEADING_NAMES,
    HEADING_TAIL_RE,
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
    text_len,
    tokens,
)
from docscraper.content.images import image_source

__all__ = [
    "LINENO_TOKENS",
    "MAX_DEPTH",
    "flatten_deep",
    "is_signature",
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
#: Blocks that a data cell can hold as one line (a heading as bold text, a short definition or
#: one-line code block as a span) when they are this short; a longer one makes the table layout.
_INLINE_BLOCKS = ("h1", "h2", "h3", "h4", "h5", "h6", "dl", "pre", "blockquote")
_SHORT_BLOCK = 200
#: What makes a cell more than a line of text: a one-row table of cells without them is a line.
_LINE_BREAKERS = (*_BLOCK_IN_CELL, "p", "div", "ul", "ol", "section", "figure", "hr")
_ROW_GROUP_NAMES = frozenset({"thead", "tbody", "tfoot"})
_CELL_NAMES = frozenset({"td", "th"})
_SIGNATURE_SPACES_RE = re.compile(r"(?<=\()\s+|\s+(?=[),])")


def _table_rows(table: Node) -> list[Node]:
    rows: list[Node] = []
    for child in child_elements(table):
        if child.tag == "tr":
            rows.append(child)
        elif child.tag in _ROW_GROUP_NAMES:
            rows.extend(child_elements(child, frozenset({"tr"})))
    return rows


def _is_empty(el: Node) -> bool:
    return not text_len(el) and not has_descendant(el, ("img", "svg"))


def _heading_cell(row: Node) -> Node | None:
    """The cell of a row that is a section heading of its table (its only cell with content holds a heading)."""
    if not has_descendant(row, HEADING_NAMES):  # the common case, without reading any cell's text
        return None
    filled = [c for c in child_elements(row, _CELL_NAMES) if not _is_empty(c)]
    if len(filled) == 1 and has_descendant(filled[0], HEADING_NAMES):
        return filled[0]
    return None


def _signature(table: Node) -> None:
    """Doxygen's prototype table (``table.memname``: return type, name, one row per parameter) as one code span."""
    paragraph = table.makeelement("p", {})
    code = etree.SubElement(paragraph, "code")
    code.text = _SIGNATURE_SPACES_RE.sub("", collapse_ws(" ".join(table.itertext())))
    replace(table, paragraph)


def _as_line(table: Node, cells: list[Node]) -> None:
    """A one-row table of inline cells (a prototype split into cells, a "Jump to" letter bar) as a paragraph."""
    paragraph = table.makeelement("p", {})
    for cell in cells:
        cell.tag = "span"
        for name in list(cell.attrib):
            del cell.attrib[name]
        paragraph.append(cell)  # moves it out of its row
        cell.tail = " "
    replace(table, paragraph)


def _split_at_headings(table: Node, rows: list[Node], heading_cells: list[Node | None]) -> list[Node]:
    """Doxygen's member summaries: a table whose section heading rows (``h2.groupheader`` in a spanning cell)
    separate runs of data rows becomes each heading, then the rows below it as a table of their own. The
    new tables are returned, to be prepared in turn."""
    wrapper = table.makeelement("div", {})
    tables: list[Node] = []
    current: Node | None = None
    for row, cell in zip(rows, heading_cells, strict=True):
        if cell is None:
            if current is None:
                current = etree.SubElement(wrapper, "table")
                tables.append(current)
            current.append(row)
            continue
        current = None
        block = etree.SubElement(wrapper, "div")
        block.text = cell.text
        for child in list(cell):
            block.append(child)
    replace(table, wrapper)
    return tables


_SIGNATURE_TOKENS = frozenset({"sig", "sig-object"})
_SIGNATURE_NAME_TOKENS = frozenset({"descname", "sig-name", "category", "def-name"})
_DEF_TOKEN_RE = re.compile(r"^(?:first-)?def[a-z]+$")


def is_signature(dt: Node) -> bool:
    """Whether a ``<dt>`` is an API signature (Sphinx domains, Texinfo ``@deffn``)."""
    found = tokens(dt)
    if set(found) & _SIGNATURE_TOKENS or any(_DEF_TOKEN_RE.match(t) for t in found):
        return True
    parent = dt.getparent()
    if parent is not None and any(_DEF_TOKEN_RE.match(t) for t in tokens(parent)):
        return True
    # Sphinx before 4.0 had no "sig" class but named the object "descname"; Texinfo 6 starts the
    # entry with its category ("Function:").
    return dt.get("id") is not None and any(set(tokens(node)) & _SIGNATURE_NAME_TOKENS for node in dt.iterdescendants())


def _inline_blocks(cells: list[Node]) -> bool:
    """Write the short blocks in data cells as one line each; False (nothing changed) if one is too long."""
    blocks = [b for cell in cells for b in cell.iterdescendants(*_INLINE_BLOCKS)]
    for block in blocks:
        content = text(block).strip()
        if len(content) > _SHORT_BLOCK or (block.tag == "pre" and "\n" in content):
            return False
    for block in blocks:
        if block.tag in HEADING_NAMES:
            block.tag = "strong"
        elif block.tag == "pre":
            code = block.makeelement("code", {})
            code.text = collapse_ws(text(block))
            replace(block, code)
        else:  # a definition list or a quote: its text, on the cell's line
            block.tag = "span"
    for cell in cells:
        for dt in list(cell.iterdescendants("dt")):
            # an object description (decimal's constants table, a Texinfo definition) is a name: a code span
            signature = is_signature(dt)
            dt.tag = "code" if signature else "strong"
            if signature:
                dt.text = HEADING_TAIL_RE.sub("", collapse_ws(text(dt)))
                for child in list(dt):
                    dt.remove(child)
            dt.tail = " " + (dt.tail or "")
        for dd in list(cell.iterdescendants("dd")):
            dd.tag = "span"
    return True


def prepare_tables(root: Node) -> None:
    """Make data tables convertible to pipe tables and turn layout tables into plain blocks."""
    for table in list(root.iterdescendants("table")):
        if is_under(table, root):
            _prepare(table)


def _prepare(table: Node) -> None:
    if "memname" in classes(table):
        _signature(table)
        return
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
    if len(rows) > 1:
        for row in rows:
            if _is_empty(row):  # spacer rows (Doxygen's separators)
                row.drop_tree()
        rows = [row for row in rows if row.getparent() is not None]
    cells = [c for r in rows for c in child_elements(r, _CELL_NAMES)]
    presentation = attr(table, "role").lower() in ("presentation", "none")
    heading_cells = [_heading_cell(r) for r in rows]
    headings = sum(cell is not None for cell in heading_cells)
    if not presentation and len(cells) > 1 and 0 < headings < len(rows):
        for new in _split_at_headings(table, rows, heading_cells):
            _prepare(new)
        return
    if not presentation and len(rows) == 1 and len(cells) > 1 and not has_descendant(table, _LINE_BREAKERS):
        _as_line(table, cells)
        return
    layout = (
        presentation
        or not cells
        or len(cells) == 1
        or has_descendant(table, ("table",))
        or (
            any(has_descendant(cell, _BLOCK_IN_CELL) for cell in cells)
            and (len(rows) == 1 or not _inline_blocks(cells))
        )
    )
    if not layout:
        # The first row is the header (html-to-markdown would read a small headerless table
        # whose cells are mostly links as a list).
        for cell in child_elements(rows[0], _CELL_NAMES):
            cell.tag = "th"
        return
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
