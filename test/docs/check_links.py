"""The link check of the docs tier: every relative link of README.md and
docs/*.md (or of the pages given) names a file or directory that exists
inside the repository, and every #anchor, in the same page or in
page.md#anchor, is a heading of the target page as GitHub slugs it
(markdown.slug; a repeated heading gets -1, -2, ...).  Also README.md has
at most 250 lines.  Prints one line per broken link (page:line, the link,
what is wrong) and last
  links: N checked, F broken; README.md: L lines (at most 250)
and exits 1 if anything failed.  Usage:
check_links.py [--root DIR] [PAGE.md ...]"""

import argparse
import pathlib
import sys
import urllib.parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import markdown  # noqa: E402

README_MAX_LINES = 250
EXTERNAL = ("http:", "https:", "mailto:", "ftp:", "tel:", "data:")


class Links:
    def __init__(self, root):
        self.root = pathlib.Path(root).resolve()
        self.checked = 0
        self.failures = []          # (path, line, message)
        self._anchors = {}

    def anchors_of(self, path):
        if path not in self._anchors:
            self._anchors[path] = markdown.anchors(markdown.parse(path.read_text()))
        return self._anchors[path]

    def fail(self, path, line, message):
        self.failures.append((path, line, message))

    def check_page(self, path):
        path = pathlib.Path(path).resolve()
        page = markdown.parse(path.read_text())
        for line, target in markdown.links(page):
            if not target or target.lower().startswith(EXTERNAL) or target.startswith("//"):
                continue
            self.checked += 1
            self.check_link(path, line, target)

    def check_link(self, page, line, target):
        where, _, anchor = target.partition("#")
        where = urllib.parse.unquote(where.split("?")[0])
        if where:
            base = self.root if where.startswith("/") else page.parent
            dest = (base / where.lstrip("/")).resolve()
            if dest != self.root and self.root not in dest.parents:
                self.fail(page, line, f"link ({target}): points outside the repository")
                return
            if not dest.exists():
                self.fail(page, line, f"link ({target}): no such file {self.rel(dest)}")
                return
        else:
            dest = page
        if anchor and dest.is_file() and dest.suffix == ".md":
            anchor = urllib.parse.unquote(anchor)
            if anchor not in self.anchors_of(dest):
                self.fail(page, line, f"link ({target}): no heading of {self.rel(dest)} "
                          f"has the anchor #{anchor}")

    def check_readme_length(self, path, limit=README_MAX_LINES):
        """The line count of the front page; a failure above the limit."""
        n = len(path.read_text().splitlines())
        if n > limit:
            self.fail(path, n, f"README.md has {n} lines, more than {limit}")
        return n

    def rel(self, path):
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)


def default_pages(root):
    root = pathlib.Path(root)
    return [root / "README.md"] + sorted((root / "docs").glob("*.md"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=pathlib.Path(__file__).resolve().parents[2])
    ap.add_argument("pages", nargs="*")
    args = ap.parse_args()
    links = Links(args.root)
    pages = [pathlib.Path(p) for p in args.pages] or default_pages(links.root)
    for p in pages:
        links.check_page(p)
    readme = links.root / "README.md"
    n = links.check_readme_length(readme) if readme.exists() else 0
    for path, line, message in links.failures:
        print(f"{links.rel(path)}:{line}: {message}")
    broken = sum(1 for f in links.failures if f[2].startswith("link "))
    print(f"links: {links.checked} checked, {broken} broken; "
          f"README.md: {n} lines (at most {README_MAX_LINES})")
    sys.exit(1 if links.failures else 0)


if __name__ == "__main__":
    main()
