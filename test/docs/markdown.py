"""What the docs tier reads from a Markdown page: its fenced code blocks,
each with the marker on the line right before its fence (test/docs/README.md:
<!-- not run: REASON -->, <!-- error: SQLSTATE -->, <!-- tested: NAME -->,
<!-- quickstart: ... -->, <!-- run by: PATH NAME -->, <!-- same as:
PAGE#ANCHOR -->), its headings as GitHub turns them into anchors, and its
links.  Fences indented inside list items count, their text
dedented by the fence's indentation."""

import dataclasses
import re

FENCE_OPEN = re.compile(r"^( *)(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$")
MARKER = re.compile(r"^\s*<!--\s*(not run|error|tested|quickstart|run by|same as)\s*:(.*?)-->\s*$")
# Anything that starts like a marker, to catch a malformed or misplaced one.
MARKER_LIKE = re.compile(
    r"^\s*<!--\s*(not[ _-]?run|error|tested|quickstart|run[ _-]?by|same[ _-]?as)\b", re.I)
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
EXPLICIT_ANCHOR = re.compile(r"""<a\s+(?:name|id)\s*=\s*["']([^"']+)["']""", re.I)


@dataclasses.dataclass
class Block:
    line: int          # the line of the opening fence, 1-based
    lang: str          # the info string's first word, lower case ("" if none)
    marker: tuple      # (kind, argument) or None
    text: str          # the content, dedented by the fence's indentation
    indent: int


@dataclasses.dataclass
class Page:
    blocks: list
    problems: list     # (line, message): what is wrong with the page's structure
    lines: list        # the page's lines, with every fenced block's lines blanked


def parse(text):
    """The blocks of a page, the problems of its markup (a marker that is
    not right before a fence, a fence never closed), and its lines outside
    fences (for headings and links)."""
    lines = text.split("\n")
    blocks, problems, outside = [], [], list(lines)
    i = 0
    while i < len(lines):
        m = FENCE_OPEN.match(lines[i])
        if not m:
            if MARKER_LIKE.match(lines[i]):
                nxt = lines[i + 1] if i + 1 < len(lines) else ""
                if not FENCE_OPEN.match(nxt):
                    problems.append((i + 1, "marker not on the line right before a fence: "
                                     + lines[i].strip()))
                elif not MARKER.match(lines[i]):
                    problems.append((i + 1, "malformed marker (want e.g. <!-- not run: REASON -->): "
                                     + lines[i].strip()))
            i += 1
            continue
        indent, fence, lang = len(m.group(1)), m.group(2), m.group(3).lower()
        close = re.compile(r"^ *" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        if j == len(lines):
            problems.append((i + 1, "fence never closed"))
        body = [dedent(line, indent) for line in lines[i + 1:j]]
        marker = None
        if i > 0:
            mm = MARKER.match(lines[i - 1])
            if mm:
                marker = (mm.group(1), mm.group(2).strip())
        blocks.append(Block(i + 1, lang, marker, "\n".join(body), indent))
        for k in range(i, min(j + 1, len(lines))):
            outside[k] = ""
        i = j + 1
    return Page(blocks, problems, outside)


def dedent(line, n):
    """Removes up to n leading spaces (a fence in a list item)."""
    k = 0
    while k < n and k < len(line) and line[k] == " ":
        k += 1
    return line[k:]


def inline_text(text):
    """The text a reader sees of inline Markdown: links and images become
    their text, HTML tags and emphasis and code marks go."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.replace("`", "")
    text = re.sub(r"(\*\*|\*|~~)", "", text)
    return text


def slug(heading):
    """GitHub's anchor of a heading: the text as rendered, lower case,
    every character but letters, digits, '_', '-' and spaces removed,
    spaces to '-'."""
    s = inline_text(heading).strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def headings(page):
    """(line, level, anchor) of every heading of a page, 1-based lines,
    a repeated slug getting -1, -2, ... as on GitHub."""
    found, seen = [], {}
    for k, line in enumerate(page.lines, 1):
        m = HEADING.match(line)
        if m:
            base = slug(m.group(2))
            n = seen.get(base, 0)
            found.append((k, len(m.group(1)), base if n == 0 else f"{base}-{n}"))
            seen[base] = n + 1
    return found


def section(page, anchor):
    """The lines (first, last) of the section under the heading with that
    anchor, up to the next heading of the same or a higher level; None if
    no heading has it."""
    hs = headings(page)
    for i, (line, level, a) in enumerate(hs):
        if a == anchor:
            end = next((h[0] for h in hs[i + 1:] if h[1] <= level), len(page.lines) + 1)
            return line, end - 1
    return None


def anchors(page):
    """Every anchor of a page: its headings' slugs (markdown.headings) and
    <a name=...>/<a id=...>."""
    found = {a for _, _, a in headings(page)}
    for line in page.lines:
        for a in EXPLICIT_ANCHOR.finditer(line):
            found.add(a.group(1))
    return found


INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.M)
HREF = re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']+)["']""", re.I)


def links(page):
    """(line, target) of every link outside code: inline links and images,
    reference definitions, and href/src of HTML."""
    text = "\n".join(page.lines)
    # Code spans and comments hold no links; keep their newlines so that
    # line numbers stay right.
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))  # noqa: E731
    text = re.sub(r"<!--.*?-->", blank, text, flags=re.S)
    text = re.sub(r"(`+)(?!`).+?(?<!`)\1(?!`)", blank, text, flags=re.S)
    found = []
    for pattern in (INLINE_LINK, REFERENCE_DEF, HREF):
        for m in pattern.finditer(text):
            found.append((text.count("\n", 0, m.start(1)) + 1, m.group(1)))
    return sorted(found)
