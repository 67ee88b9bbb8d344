"""Keeps docs/clients.md and docs/leases.md in step with the client tests.

The tests mark the lines a user copies:

    # docs: NAME            (// docs: NAME in JavaScript and Java)
    ...
    # end docs

and one of the docs shows each of them in a code block right after the
line <!-- tested: NAME -->.  Every marked region must appear in the docs,
dedented, exactly as it stands in the test, and every tested block in the
docs must name a region.  Usage:
docs_sync.py docs/clients.md docs/leases.md test/clients
(the clients tier checks these two pages; the docs tier, test/docs/run.sh,
README.md and every page of docs/).
"""

import pathlib
import re
import sys
import textwrap

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from pycheck import Checks  # noqa: E402

START = re.compile(r"^\s*(?:#|//) docs: ([\w-]+)\s*$")
END = re.compile(r"^\s*(?:#|//) end docs\s*$")


def regions(root):
    found = {}
    for path in sorted(root.rglob("*")):
        if (path.suffix not in (".py", ".js", ".java", ".go") or "node_modules" in path.parts
                or path.name == "docs_sync.py"):
            continue
        name, lines = None, []
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = START.match(line)
            if m:
                name, lines = m.group(1), []
            elif END.match(line):
                if name is None:
                    raise SystemExit(f"{path}:{n}: 'end docs' without a start")
                if name in found:
                    raise SystemExit(f"{path}:{n}: region {name} defined twice")
                found[name] = (path.relative_to(root.parent.parent),
                               textwrap.dedent("\n".join(lines)).strip("\n"))
                name = None
            elif name is not None:
                lines.append(line)
        if name is not None:
            raise SystemExit(f"{path}: region {name} is not closed")
    return found


def tested_blocks(doc):
    blocks = {}
    pattern = re.compile(r"<!-- tested: ([\w-]+) -->\n```\w*\n(.*?)\n```", re.S)
    for m in pattern.finditer(doc):
        blocks.setdefault(m.group(1), []).append(m.group(2))
    return blocks


def main():
    doc_paths = [pathlib.Path(p) for p in sys.argv[1:-1]]
    root = pathlib.Path(sys.argv[-1]).resolve()
    c = Checks("docs")
    code = regions(root)
    docs = {}                       # region -> [(doc name, block)]
    for doc_path in doc_paths:
        doc = doc_path.read_text()
        blocks = tested_blocks(doc)
        # A marker is a line of its own; the same words inside a sentence
        # (docs/testing.md explains the marker) are none.
        markers = len(re.findall(r"^<!-- tested:", doc, re.M))
        c.ok(markers == sum(len(v) for v in blocks.values()),
             f"every <!-- tested: --> marker of {doc_path.name} is followed by a code block")
        for name, found in blocks.items():
            docs.setdefault(name, []).extend((doc_path.name, b) for b in found)
    names = ", ".join(p.name for p in doc_paths)
    for name, (path, text) in sorted(code.items()):
        c.ok(name in docs, f"{path}: region {name} is shown in {names}")
        for doc_name, block in docs.get(name, []):
            c.ok(block == text, f"{doc_name} shows region {name} as it is "
                 f"in {path}", f"docs:\n{block}\ntest:\n{text}")
    for name in sorted(set(docs) - set(code)):
        c.ok(False, f"{docs[name][0][0]} shows region {name}, which no test has")
    c.finish()


main()
