"""The converter: the main-content element becomes Markdown with html-to-markdown.

html-to-markdown (a Rust converter with a Python binding) turns HTML into Markdown in one call. What documentation
needs beyond its defaults is done first on the lxml tree, so that the HTML it receives already says exactly what the
Markdown must hold: every ``<pre>`` a fenced block with its language, API signatures code spans, admonitions quotes
led by their label, a table inside a table cell its text, links and images with absolute, safe URLs
(:class:`~docscraper.content.extraction.links.LinkResolver`), MathML its TeX. The Markdown is then normalized
(:func:`~docscraper.content.extraction.normalize.normalize_markdown`). Each rewrite, generator by generator:
docs/explanation/extraction.md.
"""

from __future__ import annotations

import re

import html_to_markdown
from lxml import etree

from docscraper.content.extraction._dom import (
    HEADING_NAMES,
    Node,
    attr,
    classes,
    collapse_ws,
    has_ancestor,
    has_descendant,
    heading_words,
    prepend,
    replace,
    replace_with_text,
    text,
    tokens,
)
from docscraper.content.extraction.code import code_language, code_text
from docscraper.content.extraction.links import LinkResolver
from docscraper.content.extraction.normalize import normalize_markdown
from docscraper.content.extraction.structure import LINENO_TOKENS, is_signature
from docscraper.content.images import image_alt, image_source
from docscraper.content.markdown import closes_fence, fence_open

__all__ = ["INVISIBLE_RE", "to_markdown"]

_OPTIONS = html_to_markdown.ConversionOptions(
    heading_style="atx",
    newline_style="backslash",  # a <br> stays a hard break: trailing spaces would be stripped by normalize_markdown
    bullets="-",
    list_indent_width=2,
    escape_asterisks=True,
    escape_underscores=False,
    escape_misc=False,
    autolinks=True,
    compact_tables=True,
    code_block_style="backticks",
    extract_metadata=False,
    hidden_content="all",  # hidden content was judged already (tab panels stay)
    expand_abbreviations=False,
    include_blockquote_citations=False,
    sup_symbol="<sup>",  # html-to-markdown closes a symbol that is a tag: 2<sup>32</sup>
    sub_symbol="<sub>",
    preprocessing=html_to_markdown.PreprocessingOptions(enabled=False),
)

#: Elements whose content is one line in Markdown: images there are their alt text, code a span.
_INLINE_CONTEXT = HEADING_NAMES | {"td", "th"}
_BOLD_PARAGRAPH_TOKENS = frozenset({"admonition-title", "rubric", "topic-title", "sidebar-title"})
#: Class tokens of admonitions (DocBook, Sphinx and MkDocs name the kind); the kind alone marks one
#: only with a title element (a plain ``div.note`` is no admonition).
_ADMONITION_TOKENS = frozenset({"admonition", "admonitionblock"})
_ADMONITION_KINDS = frozenset(
    {"note", "tip", "hint", "warning", "caution", "important", "danger", "attention", "error", "seealso", "todo"}
)
_TITLE_TOKENS = frozenset({"admonition-title", "title", "admonitionheading", "admonition-heading"})
_BLOCKS = ("details", "figure", "main", "header", "footer", "aside", "nav", "center", "fieldset", "dl", "dd")
_UNQUOTED_BLOCKS = ("pre", "table", "dl")
_EDGE_RULES_RE = re.compile(r"\A(?:\s*---[ \t]*\n)+|(?:\n[ \t]*---)+\s*\Z")
INVISIBLE_RE = re.compile("[\u200b\u200c\u200d\u2060\ufeff\u00ad]")
#: The first line of an admonition's quote (:func:`_rewrite_admonitions`).
_ADMONITION_LEAD_RE = re.compile(r"^> \*\*[^*\n]{1,40}:\*\* ")
_ATX_RE = re.compile(r"^(#{1,6}) (.*)$")
_INLINE_CODE = ("code", "kbd", "samp", "tt")
_PRE_BLOCK_RE = re.compile(r"(<pre[\s>].*?</pre>)", re.S)
_LINE_BREAK_RE = re.compile(r"\n\s*")  # the white space before it is collapsed by the converter
#: In a line of text: a code span, a link destination in brackets, the tags and autolinks the converter
#: writes, or a ``<`` that CommonMark could read as the start of an HTML tag (escaped by :func:`_finish`).
_TEXT_TOKEN_RE = re.compile(
    r"(`+).+?(?<!`)\1(?!`)"
    r"|\]\(<[^<>\n]*>"
    r"|</?su[bp]>"
    r"|<[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*>"
    r"|<[^\s<>@`]+@[^\s<>`]+>"
    r"|<(?=[A-Za-z/!?])"
)


def _code_span(context: Node, value: str) -> Node:
    """A new ``<code>`` element of ``context``'s tree holding ``value``."""
    code = context.makeelement("code", {})
    code.text = value
    return code


def _wrap_children(el: Node, name: str) -> None:
    """Move everything inside ``el`` into a new child element ``name``."""
    wrapper = el.makeelement(name, {})
    wrapper.text, el.text = el.text, None
    for child in list(el):
        wrapper.append(child)  # an element moves with its tail
    el.append(wrapper)


def _rewrite_fragments(root: Node) -> None:
    """Doxygen writes code as ``div.fragment`` of ``div.line`` rows (a ``span.lineno`` gutter in each, hidden
    ``div.ttc`` tooltips among them), not as ``<pre>``: each becomes the ``<pre>`` of its rows' text."""
    for fragment in list(root.iter("div")):
        if "fragment" not in classes(fragment) or fragment.getparent() is None:
            continue
        lines = [child for child in fragment if child.tag == "div" and "line" in classes(child)]
        if not lines:
            continue
        rows = []
        for line in lines:
            for gutter in [el for el in line.iter() if el is not line and set(classes(el)) & LINENO_TOKENS]:
                gutter.drop_tree()  # its tail, the row's indentation, stays
            rows.append("".join(line.itertext()).rstrip())
        pre = fragment.makeelement("pre", {})
        pre.text = "\n".join(rows)
        replace(fragment, pre)


def _rewrite_grids(root: Node) -> None:
    """javadoc (JDK 16 and later) draws its summaries as CSS grids, not tables: a ``div.summary-table`` whose
    children are its cells in reading order, the first row ``div.table-header``. Each becomes the table it
    shows, so that a field's type, name and description stay one row."""
    for grid in list(root.iter("div")):
        if "summary-table" not in classes(grid) or grid.getparent() is None:
            continue
        cells = [child for child in grid if child.tag == "div"]
        width = sum(1 for cell in cells if "table-header" in classes(cell))
        if width < 2 or len(cells) % width:
            continue
        table = grid.makeelement("table", {})
        for start in range(0, len(cells), width):
            row = etree.SubElement(table, "tr")
            for cell in cells[start:start + width]:
                cell.tag = "th" if start == 0 else "td"
                cell.attrib.clear()
                cell.tail = None
                row.append(cell)
        replace(grid, table)


def _rewrite_code(root: Node) -> None:
    for pre in list(root.iter("pre")):
        if pre.getparent() is None or has_ancestor(pre, ("pre",)):
            continue
        # Several <code> children: alternative versions of one example (Node.js shows CommonJS and ES
        # module syntax).
        blocks = [child for child in pre if child.tag == "code"]
        code = "\n\n".join(filter(None, map(code_text, blocks if len(blocks) > 1 else [pre])))
        if not code.strip():
            pre.drop_tree()
        elif has_ancestor(pre, _INLINE_CONTEXT):
            replace(pre, _code_span(pre, " ".join(line.strip() for line in code.split("\n") if line.strip())))
        else:
            lang = code_language(pre)
            pre.clear(keep_tail=True)
            block = etree.SubElement(pre, "code")
            if lang:
                block.set("class", "language-" + lang)
            block.text = code


def _rewrite_definitions(root: Node) -> None:
    for dt in list(root.iter("dt")):
        if is_signature(dt):
            words = collapse_ws(text(dt))
            if not words:
                dt.drop_tree()
                continue
            dt.clear(keep_tail=True)
            dt.append(_code_span(dt, words))
        elif not collapse_ws(text(dt)):
            dt.drop_tree()
            continue
        elif not has_descendant(dt, ("strong", "b")):
            _wrap_children(dt, "strong")
        dt.tag = "p"


def _rewrite_blocks(root: Node) -> None:
    for p in list(root.iter("p")):
        if (
            p.get("class")
            and set(tokens(p, with_id=False)) & _BOLD_PARAGRAPH_TOKENS
            and not has_ancestor(p, _INLINE_CONTEXT)
            and not has_descendant(p, ("strong", "b"))
        ):
            _wrap_children(p, "strong")
    for summary in list(root.iter("summary")):
        if has_descendant(summary, HEADING_NAMES):
            summary.tag = "div"  # rustdoc: each impl block's and method's heading is a <details>' summary
            continue
        summary.tag = "p"
        if not has_descendant(summary, ("strong", "b")):
            _wrap_children(summary, "strong")
    for quote in list(root.iter("blockquote")):
        children = list(quote)
        indentation = len(children) == 1 and children[0].tag == "div"
        if indentation or has_descendant(quote, _UNQUOTED_BLOCKS):
            quote.tag = "div"
    for el in list(root.iter(*_BLOCKS)):
        el.tag = "div"
    for table in list(root.iter("table")):
        if has_ancestor(table, ("td", "th")):
            replace_with_text(table, " " + collapse_ws(" ".join(table.itertext())) + " ")
    for row in list(root.iter("tr")):
        if not has_descendant(row, ("td", "th")):
            row.drop_tree()
    for math in list(root.iter("math")):
        annotation = next(
            (a for a in math.iterdescendants("annotation") if a.get("encoding") == "application/x-tex"), None
        )
        if annotation is None:
            replace_with_text(math, collapse_ws(" ".join(math.itertext())))
            continue
        tex = text(annotation).strip()
        if attr(math, "display") == "block":
            paragraph = math.makeelement("p", {})
            paragraph.text = f"$${tex}$$"
            replace(math, paragraph)
        else:
            replace_with_text(math, f"${tex}$")


def _admonition_parts(el: Node, found: set[str]) -> tuple[str, list[Node | str]] | None:
    """An admonition's label and its content (text and elements, in order), or None if ``el`` is none."""
    children = [child for child in el if isinstance(child.tag, str)]
    first = children[0] if children else None
    label_el: Node | None = None
    content: Node = el
    if first is not None and first.tag == "table" and len(children) == 1:
        # DocBook XSL (a <th> label) and asciidoc (td.icon, td.content): the content is the last cell
        cells = list(first.iter("td", "th"))
        body = [c for c in cells if "content" in tokens(c)] or [
            c for c in cells if c.tag == "td" and (collapse_ws(text(c)) or has_descendant(c, ("p",)))
        ]
        if not body:
            return None
        content = body[-1]
        label_el = next((c for c in cells if c.tag == "th" or "icon" in tokens(c)), None)
        label = collapse_ws(text(label_el)) if label_el is not None else ""
        if not label and label_el is not None:
            label = next(
                (attr(n, "alt") or attr(n, "title") for n in label_el.iter() if n.get("alt") or n.get("title")), ""
            )
        label = label.strip("[]")
    elif first is not None and (first.tag in HEADING_NAMES or set(tokens(first, with_id=False)) & _TITLE_TOKENS):
        label_el = first
        label = collapse_ws(text(first))
    elif found & _ADMONITION_TOKENS:
        label = ""
    else:
        return None
    if not label:
        kind = next((t for t in found if t in _ADMONITION_KINDS), "")
        label = kind.capitalize() if kind else ""
    parts: list[Node | str] = [content.text] if content.text else []
    parts += [
        child
        for child in content
        if child is not label_el and not (label_el is not None and any(a is child for a in label_el.iterancestors()))
    ]
    label = label.rstrip(":").strip()
    return (label.capitalize() if label.islower() else label), parts  # Docusaurus capitalizes with CSS


def _rewrite_admonitions(root: Node) -> None:
    """Each admonition as a quote (or a plain block around code) led by ``**Label:**``."""
    for el in list(root.iter("div", "aside")):
        found = set(tokens(el, with_id=False))
        if not found & (_ADMONITION_TOKENS | _ADMONITION_KINDS) or has_ancestor(el, _INLINE_CONTEXT):
            continue
        parts = _admonition_parts(el, found)
        if parts is None:
            continue
        label, content = parts
        quote = el.makeelement("blockquote", {})
        for part in content:
            if isinstance(part, str):
                quote.text = part
            else:
                quote.append(part)  # an element moves with its tail
        if has_descendant(quote, _UNQUOTED_BLOCKS):
            quote.tag = "div"
        if label:
            strong = quote.makeelement("strong", {})
            strong.text = label + ":"
            lead = quote
            while not (lead.text or "").strip() and len(lead) and lead[0].tag in ("div", "section"):
                lead = lead[0]
            if not (lead.text or "").strip() and len(lead) and lead[0].tag == "p":
                lead = lead[0]
            elif (lead.text or "").strip() and lead.tag != "p":
                paragraph = quote.makeelement("p", {})
                paragraph.text, lead.text = lead.text, None
                while len(lead) and lead[0].tag not in ("p", "div", "ul", "ol", "pre", "table", "dl", "blockquote"):
                    paragraph.append(lead[0])
                prepend(lead, paragraph)
                lead = paragraph
            else:
                lead = quote.makeelement("p", {})
                prepend(quote, lead)
                lead.tail = None
            prepend(lead, strong)
            strong.tail = " " + (strong.tail or "").lstrip()
        replace(el, quote)


def _rewrite_links(root: Node, resolve: LinkResolver) -> None:
    for a in list(root.iter("a")):
        if has_ancestor(a, ("code", "kbd", "samp")):
            a.drop_tag()
            continue
        href = resolve(a.get("href"))
        a.attrib.clear()
        if href:
            a.set("href", href)
    for img in list(root.iter("img")):
        alt = image_alt(img).replace("[", "\\[").replace("]", "\\]")
        url = resolve(image_source(img))
        if not url or has_ancestor(img, _INLINE_CONTEXT):
            replace_with_text(img, alt)
            continue
        img.attrib.clear()
        img.set("src", url)
        img.set("alt", alt)


def _rewrite_inline_code(root: Node) -> None:
    """Inline code as plain text on one line, the white space at its edges moved outside it."""
    for code in list(root.iter(*_INLINE_CODE)):
        if code.getparent() is None or has_ancestor(code, ("pre", *_INLINE_CODE)):
            continue
        raw = text(code)
        words = collapse_ws(raw)
        code.clear(keep_tail=True)
        if not words:
            replace_with_text(code, " " if raw else "")
            continue
        code.text = words
        previous = code.getprevious()
        if previous is not None and previous.tag in _INLINE_CODE and not previous.tail:
            previous.tail = " "  # two code spans side by side (DocBook's name and type) stay two words
        if raw[:1].isspace():
            previous = code.getprevious()
            if previous is not None:
                previous.tail = (previous.tail or "") + " "
            else:
                parent = code.getparent()
                parent.text = (parent.text or "") + " "
        if raw[-1:].isspace():
            code.tail = " " + (code.tail or "")


def _clean_markup(html: str) -> str:
    """Outside code blocks: no invisible characters, plain spaces for no-break ones, and a line break
    of the source (with the white space around it) as one space.

    html-to-markdown keeps a paragraph's line breaks with the source's indentation after them, so a
    paragraph that starts on a new line inside a list item lost the item's indentation (ending the
    list), and it drops a line break that stands alone between two elements, joining their words.
    Done on the serialized HTML, where each code block is one ``<pre><code>`` holding only escaped text.
    """
    parts = _PRE_BLOCK_RE.split(html)
    for index in range(0, len(parts), 2):  # the code blocks are at the odd positions
        part = parts[index]
        if "\n" in part:
            part = _LINE_BREAK_RE.sub(" ", part)
        if "\xa0" in part:
            part = part.replace("\xa0", " ")
        parts[index] = INVISIBLE_RE.sub("", part)
    return "".join(parts)


def _escape_tag_start(match: re.Match[str]) -> str:
    return "\\<" if match.group(0) == "<" else match.group(0)


def _finish(markdown: str) -> str:
    """Headings without permalink glyphs (empty ones dropped), quotes set apart, no edge rules, normalized.

    Text that looks like a tag (``<string>``, ``Range<T>``, ``<commit>``: the page's ``&lt;``) is
    written ``\\<string>``: the converter escapes no ``<``, and CommonMark reads ``<string>`` as raw HTML
    that a viewer does not display."""
    lines = markdown.split("\n")
    fence: str | None = None
    out: list[str] = []
    for line in lines:
        if fence is not None:
            if closes_fence(line, fence):
                fence = None
        else:
            fence = fence_open(line)
            heading = _ATX_RE.match(line) if fence is None and line[:1] == "#" else None
            if heading is not None:
                words = heading_words(heading.group(2))
                if not words:
                    continue
                line = f"{heading.group(1)} {words}"
            if fence is None and "<" in line:
                line = _TEXT_TOKEN_RE.sub(_escape_tag_start, line)
            elif (
                fence is None
                and line[:1] == ">"
                and out
                and out[-1]
                and (out[-1][:1] != ">" or (out[-1].rstrip() != ">" and _ADMONITION_LEAD_RE.match(line)))
            ):
                # html-to-markdown can run a quote into the list before it, and two quotes into one
                out.append("")
        out.append(line)
    markdown = "\n".join(out)
    # A leading "---" would read as YAML front matter to the next tool; edge rules carry nothing. (The
    # expression is tried at every line break: only where there is a rule at an edge.)
    edges = markdown.strip()
    if edges.startswith("---") or edges.endswith("---"):
        markdown = _EDGE_RULES_RE.sub("", markdown)
    return normalize_markdown(markdown)


def to_markdown(main: Node, resolve: LinkResolver) -> str:
    """The normalized Markdown of ``main``; the element is rewritten in place for the converter."""
    _rewrite_fragments(main)
    _rewrite_grids(main)
    _rewrite_code(main)
    _rewrite_definitions(main)
    _rewrite_blocks(main)
    _rewrite_admonitions(main)
    _rewrite_links(main, resolve)
    _rewrite_inline_code(main)
    html = _clean_markup(etree.tostring(main, method="html", encoding="unicode", with_tail=False))
    return _finish(html_to_markdown.convert(html, _OPTIONS).content or "")
