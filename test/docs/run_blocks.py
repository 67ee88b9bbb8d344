"""Runs the code blocks of README.md and docs/*.md (or of the pages given)
against the server of PGHOST/PGPORT/PGUSER, as test/docs/README.md says.

Each block may take DOCS_BLOCK_TIMEOUT seconds (default 60); exits 1 if
any failed.  --block PAGE NAME prints the block of PAGE marked <!-- run
by: PATH NAME -->, dedented (exit 1 if there is none).  --self-test runs
the pages of test/docs/fixtures/ and their links and asserts exactly the
failures and the summary that they announce.

Usage: run_blocks.py [--root DIR] [--workdir DIR] [PAGE.md ...]
       run_blocks.py [--root DIR] --block PAGE NAME
       run_blocks.py --self-test [--workdir DIR]"""

import argparse
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile

here = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(here))
import check_links  # noqa: E402
import markdown  # noqa: E402

SQL = {"sql"}
SH = {"sh", "bash", "shell"}
INI = {"ini"}
OUTPUT = {"text", "txt", "plaintext", "output"}
CLIENT = {"python", "py", "javascript", "js", "typescript", "ts", "java", "go", "cpp",
          "c++", "c", "json", "yaml", "yml", "toml", "xml", "perl", "ruby", "rust",
          "kotlin", "csharp", "diff"}
BLOCK_TIMEOUT = int(os.environ.get("DOCS_BLOCK_TIMEOUT", "60"))
PSQL = os.environ.get("DOCS_PSQL", "psql")
CREATES_EXTENSION = re.compile(
    r"^\s*CREATE\s+EXTENSION\s+(IF\s+NOT\s+EXISTS\s+)?\"?snowflake\"?", re.I | re.M)
PSQL_ERROR = re.compile(r"^psql:.*?:(\d+): (?:ERROR|FATAL):\s+(?:([0-9A-Z]{5}): )?(.*)$", re.M)
SH_TRAP = "docs-block-failed"
RUN_BY = re.compile(r"(\S+)\s+([\w-]+)")
SAME_AS = re.compile(r"([^\s#]*)#(\S+)")


def short(text, width=90):
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


class Runner:
    def __init__(self, root, workdir):
        self.root = pathlib.Path(root).resolve()
        self.workdir = pathlib.Path(workdir)
        self.counts = {"sql": 0, "sh": 0, "ini": 0}
        self.not_run = {"marked": 0, "output": 0, "client": 0}
        self.tested = 0
        self.run_by = 0
        self.failures = []        # (path, line, message)
        self.settings = None

    def fail(self, path, line, message):
        self.failures.append((path, line, message))

    def rel(self, path):
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    # ------------------------------------------------------------ the server
    def psql(self, db, *args, timeout=BLOCK_TIMEOUT):
        return subprocess.run([PSQL, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose",
                               "-d", db, *args], capture_output=True, text=True, timeout=timeout)

    def load_settings(self):
        r = self.psql("postgres", "-At", "-F", "\t", "-c",
                      "SELECT name, vartype, coalesce(min_val, ''), coalesce(max_val, ''), "
                      "coalesce(array_to_string(enumvals, ','), '') FROM pg_settings")
        if r.returncode != 0:
            raise SystemExit(f"run_blocks: cannot read pg_settings: {r.stderr.strip()}")
        self.settings = {}
        for row in r.stdout.splitlines():
            name, vartype, lo, hi, enums = row.split("\t")
            self.settings[name.lower()] = (vartype, lo, hi, enums.split(",") if enums else [])

    def fresh_database(self, db, create_extension):
        """Drops and creates the page's database; None or the error."""
        steps = [("postgres", f"DROP DATABASE IF EXISTS {db} WITH (FORCE)"),
                 ("postgres", f"CREATE DATABASE {db}")]
        if create_extension:
            steps.append((db, "CREATE EXTENSION snowflake"))
        for where, sql in steps:
            r = self.psql(where, "-c", sql)
            if r.returncode != 0:
                return f"{sql}: {short(r.stderr)}"
        return None

    # ------------------------------------------------------------ the pages
    def run_page(self, path):
        path = pathlib.Path(path).resolve()
        first_failure = len(self.failures)
        roles_before = self.roles()
        made = self._run_blocks(path)
        new = self.roles() - roles_before if made else None
        if new:
            self.drop_roles(path, made, new)
        # The page's failures in line order.
        self.failures[first_failure:] = sorted(self.failures[first_failure:],
                                               key=lambda f: f[1])

    def roles(self):
        r = self.psql("postgres", "-At", "-c", "SELECT rolname FROM pg_roles")
        return set(r.stdout.split()) if r.returncode == 0 else set()

    def drop_roles(self, path, db, roles):
        """Roles are the cluster's, not the page's database's: those a page
        created go with it, so that the next page starts as fresh."""
        names = ", ".join(f'"{r}"' for r in sorted(roles))
        for where, sql in [(db, f"DROP OWNED BY {names}"), ("postgres", f"DROP OWNED BY {names}"),
                           ("postgres", f"DROP ROLE {names}")]:
            r = self.psql(where, "-c", sql)
            if r.returncode != 0:
                self.fail(path, 1, f"the roles the page created ({names}) could not be dropped: "
                          f"{sql}: {short(r.stderr)}")
                return

    def _run_blocks(self, path):
        """Runs the page's blocks; the name of its database if it made one."""
        page = markdown.parse(path.read_text())
        name = self.rel(path)
        for line, problem in page.problems:
            self.fail(path, line, problem)
        db = "docs_" + re.sub(r"[^a-z0-9]+", "_", path.stem.lower()).strip("_")
        scratch = self.workdir / db
        ready = None                  # None: the database is not made yet
        kinds = [self.kind(path, b) for b in page.blocks]
        self.check_block_names(path, page)
        first_sql = next((b for b, k in zip(page.blocks, kinds) if k == "sql"), None)
        for b, kind in zip(page.blocks, kinds):
            if kind == "bad":
                continue
            if kind in ("sql", "sh") and ready is None:
                creates = first_sql is not None and CREATES_EXTENSION.search(first_sql.text)
                err = self.fresh_database(db, not creates)
                if err:
                    self.fail(path, b.line, f"{name}: the page's database {db}: {err}")
                    ready = False
                else:
                    shutil.rmtree(scratch, ignore_errors=True)
                    scratch.mkdir(parents=True)
                    ready = True
            if kind in self.counts:
                self.counts[kind] += 1
                if kind == "ini":
                    self.check_ini(path, b)
                elif ready:
                    {"sql": self.run_sql, "sh": self.run_sh}[kind](path, b, db, scratch)
        return db if ready else None

    def kind(self, path, b):
        """What to do with a block: sql, sh, ini, tested, not run
        (marked, output, client), or bad (a failure recorded)."""
        marker, arg = b.marker or (None, None)
        if not b.lang:
            self.fail(path, b.line, "a fence without a language (say sql, sh, ini, text, "
                      "python, ...; every block must say what it is)")
            return "bad"
        if marker == "not run":
            if not arg:
                self.fail(path, b.line, "<!-- not run: --> without a reason")
                return "bad"
            self.not_run["marked"] += 1
            return "not run"
        if marker == "tested":
            self.tested += 1
            return "tested"
        if marker == "run by":
            if not self.check_run_by(path, b, arg):
                return "bad"
            self.run_by += 1
            return "run by"
        if marker == "same as":
            twin = self.check_same_as(path, b, arg)
            # A twin that a test runs, or that cannot run here, covers this
            # copy too: it is the same text.
            twin_kind = (twin.marker or (None, None))[0] if twin is not None else None
            if twin_kind == "run by":
                self.run_by += 1
                return "run by"
            if twin_kind == "not run":
                self.not_run["marked"] += 1
                return "not run"
        if marker == "error" and (b.lang not in SQL or not re.fullmatch(r"[0-9A-Z]{5}", arg)):
            self.fail(path, b.line, f"<!-- error: {arg} --> on a {b.lang} block: only sql blocks, "
                      "with a five-character SQLSTATE")
            return "bad"
        for kind, langs in (("sql", SQL), ("sh", SH), ("ini", INI)):
            if b.lang in langs:
                return kind
        for why, langs in (("output", OUTPUT), ("client", CLIENT)):
            if b.lang in langs:
                self.not_run[why] += 1
                return "not run"
        known = ", ".join(sorted(SQL | SH | INI | OUTPUT | CLIENT))
        self.fail(path, b.line, f"a fence in a language the docs tier does not know: {b.lang} "
                  f"(it knows {known})")
        return "bad"

    # ------------------------------------------------------------ the markers
    def inside(self, target):
        """target resolved, if it lies inside the repository, else None."""
        target = target.resolve()
        return target if target == self.root or self.root in target.parents else None

    def check_run_by(self, path, b, arg):
        """<!-- run by: PATH NAME -->: PATH exists and names the block."""
        m = RUN_BY.fullmatch(arg)
        if not m:
            self.fail(path, b.line, f"<!-- run by: {arg} -->: want <!-- run by: PATH NAME -->, "
                      "PATH from the repository root, NAME of letters, digits, _ and -")
            return False
        where, name = m.groups()
        target = self.inside(self.root / where)
        if target is None or not target.is_file():
            self.fail(path, b.line, f"<!-- run by: {arg} -->: no such file {where} "
                      "(the test that runs this block)")
            return False
        text = target.read_text(errors="replace")
        if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text):
            self.fail(path, b.line, f"<!-- run by: {arg} -->: {where} does not contain {name}, "
                      "so it does not run this block")
            return False
        return True

    def check_block_names(self, path, page):
        """A name of <!-- run by: --> names one block of its page."""
        first = {}
        for b in page.blocks:
            if b.marker and b.marker[0] == "run by":
                m = RUN_BY.fullmatch(b.marker[1])
                if not m:
                    continue
                name = m.group(2)
                if name in first:
                    self.fail(path, b.line, f"<!-- run by: {b.marker[1]} -->: a second block "
                              f"named {name} on this page (the first at line {first[name]})")
                else:
                    first[name] = b.line

    def check_same_as(self, path, b, arg):
        """<!-- same as: PAGE#ANCHOR -->: the block equals its twin."""
        here_ = f"<!-- same as: {arg} -->"
        m = SAME_AS.fullmatch(arg)
        if not m:
            self.fail(path, b.line, f"{here_}: want <!-- same as: PAGE#ANCHOR -->, PAGE relative "
                      "to this page")
            return
        where, anchor = m.groups()
        target = self.inside(path.parent / where) if where else path
        if target is None or not target.is_file():
            self.fail(path, b.line, f"{here_}: no such page {where}")
            return
        page = markdown.parse(target.read_text())
        span = markdown.section(page, anchor)
        if span is None:
            self.fail(path, b.line, f"{here_}: no heading of {self.rel(target)} has the anchor "
                      f"#{anchor}")
            return
        twin = next((t for t in page.blocks
                     if span[0] < t.line <= span[1] and t.lang == b.lang), None)
        if twin is None:
            self.fail(path, b.line, f"{here_}: no {b.lang} block under the heading #{anchor} "
                      f"of {self.rel(target)} (lines {span[0]} to {span[1]})")
            return
        if twin.text == b.text:
            return twin
        mine, theirs = b.text.split("\n"), twin.text.split("\n")
        k = next((k for k, (x, y) in enumerate(zip(mine, theirs)) if x != y),
                 min(len(mine), len(theirs)))
        def show(lines):
            # As written: a difference may be in white space alone.
            if k >= len(lines):
                return "no line"
            line = lines[k] if len(lines[k]) <= 70 else lines[k][:67] + "..."
            return f"`{line}`"
        spaces = (k < len(mine) and k < len(theirs) and mine[k].split() == theirs[k].split())
        self.fail(path, b.line, f"{here_}: this block differs from its twin at "
                  f"{self.rel(target)}:{twin.line}: its line {k + 1} is {show(mine)} here "
                  f"and {show(theirs)} there" + (" (in white space)" if spaces else ""))
        return None

    def run_pages(self, paths):
        for p in paths:
            self.run_page(p)

    # ------------------------------------------------------------ the blocks
    def run_sql(self, path, b, db, scratch):
        script = scratch / f"L{b.line}.sql"
        script.write_text(b.text + "\n")
        expect = b.marker[1] if b.marker and b.marker[0] == "error" else None
        cmd = f"psql -X -v ON_ERROR_STOP=1 -d {db}"
        try:
            r = self.psql(db, "-f", str(script))
        except subprocess.TimeoutExpired:
            self.fail(path, b.line, f"{cmd}: did not finish in {BLOCK_TIMEOUT} s")
            return
        (scratch / f"L{b.line}.sql.out").write_text(r.stdout + r.stderr)
        m = PSQL_ERROR.search(r.stderr)
        lines = b.text.split("\n")
        if m:
            at = int(m.group(1))
            start = statement_start(lines, at)
            what = f"{cmd}: `{short(lines[start - 1], 70)}`"
            error = f"ERROR {m.group(2) or '(no SQLSTATE)'}: {m.group(3)}"
        else:
            at = start = len(lines)
            what = f"{cmd} (block)"
            error = short(r.stderr.strip().splitlines()[-1]) if r.stderr.strip() else ""
        if expect is None:
            if r.returncode != 0:
                self.fail(path, b.line + start, f"{what}: {error or f'exit status {r.returncode}'}")
            return
        if r.returncode == 0:
            self.fail(path, b.line, f"{cmd}: <!-- error: {expect} -->, but the block ran "
                      "without an error")
        elif not m:
            self.fail(path, b.line, f"{what}: <!-- error: {expect} -->, but psql failed "
                      f"otherwise: {error}")
        elif m.group(2) != expect:
            self.fail(path, b.line + start, f"{what}: <!-- error: {expect} -->, but got {error}")
        elif at < last_statement_end(lines):
            self.fail(path, b.line + start, f"{what}: <!-- error: {expect} --> is for the last "
                      f"statement, but this earlier one failed: {error}")

    def run_sh(self, path, b, db, scratch):
        script = scratch / f"L{b.line}.sh"
        # Line 1: name the command that fails; the block starts on line 2.
        script.write_text(f"trap 'echo \"{SH_TRAP}: line $((LINENO - 1)): $BASH_COMMAND "
                          f"(exit status $?)\" >&2' ERR\n" + b.text + "\n")
        env = dict(os.environ, PGDATABASE=db, HOME=str(scratch))
        cmd = "bash -euo pipefail"
        # Output to files, not pipes: a process the block leaves running
        # would hold a pipe open.
        out_path, err_path = scratch / f"L{b.line}.sh.out", scratch / f"L{b.line}.sh.err"
        with open(out_path, "w") as out, open(err_path, "w") as err:
            proc = subprocess.Popen(["bash", "-euo", "pipefail", str(script)], cwd=scratch,
                                    env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    start_new_session=True)
            try:
                proc.wait(timeout=BLOCK_TIMEOUT)
            except subprocess.TimeoutExpired:
                stop_processes([proc.pid] + descendants(proc.pid))
                proc.wait()
                self.fail(path, b.line, f"{cmd}: did not finish in {BLOCK_TIMEOUT} s")
                stop_processes(descendants(os.getpid()))
                return
        # What it started in the background (even a server that left its
        # session, as pg_ctl's does): our descendants, as subreaper.
        reap()
        left = [p for p in descendants(os.getpid()) if not zombie(p)]
        if left:
            names = sorted({process_name(p) for p in left})
            stop_processes(left)
            self.fail(path, b.line, f"{cmd}: the block left {len(left)} processes running "
                      f"({', '.join(names)}); a recipe that starts servers is not run here")
            return
        if proc.returncode == 0:
            return
        # bash names the script and counts its trap line: the block's lines.
        err = re.sub(rf"^{re.escape(str(script))}: line (\d+): ",
                     lambda m: f"line {int(m.group(1)) - 1}: ", err_path.read_text(), flags=re.M)
        lines = b.text.split("\n")
        trap = re.search(rf"^{SH_TRAP}: line (\d+): (.*) \((exit status \d+)\)$", err, re.M)
        bash_line = re.search(r"^line (\d+): (.*)$", err, re.M)
        others = [x for x in err.strip().splitlines() if not x.startswith(SH_TRAP)]
        error = short(others[-1]) if others else f"exit status {proc.returncode}"
        if trap:
            # The line as the page shows it (a pipeline whole, not its
            # last command, which $BASH_COMMAND names).
            at = int(trap.group(1))
            what = lines[at - 1] if 0 < at <= len(lines) else trap.group(2)
            if not others:
                error = trap.group(3)
        elif bash_line:
            at = int(bash_line.group(1))
            what = lines[at - 1] if 0 < at <= len(lines) else ""
            error = short(bash_line.group(2))
        else:
            at, what = 0, ""
        what = f"{cmd}: `{short(what, 70)}`" if what else cmd
        self.fail(path, b.line + max(at, 0), f"{what}: {error}")

    def check_ini(self, path, b):
        if self.settings is None:
            self.load_settings()
        bad = []
        for k, line in enumerate(b.text.split("\n"), 1):
            problem = self.ini_line_problem(line)
            if problem:
                bad.append((k, problem))
        if bad:
            k, problem = bad[0]
            more = f" (and {len(bad) - 1} more lines)" if len(bad) > 1 else ""
            self.fail(path, b.line + k, f"ini: {problem}{more}")

    def ini_line_problem(self, line):
        s = line.strip()
        if not s or s.startswith("#"):
            return None
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*('(?:[^'\\]|''|\\.)*'|[^\s'#]+)"
                         r"\s*(#.*)?", s)
        if not m:
            return f"`{short(s, 70)}` is not a `name = value` line (no SQL or prose in ini blocks)"
        name, value = m.group(1), m.group(2)
        setting = self.settings.get(name.lower())
        if setting is None:
            return f"`{short(s, 70)}`: {name} is no setting of the server (pg_settings)"
        vartype, lo, hi, enums = setting
        plain = value[1:-1] if value.startswith("'") and len(value) > 1 else value
        if vartype == "bool" and plain.lower() not in (
                "on", "off", "true", "false", "yes", "no", "1", "0", "t", "f", "y", "n"):
            return f"`{short(s, 70)}`: {name} is a boolean"
        if vartype == "enum" and enums and plain.lower() not in [e.lower() for e in enums]:
            return f"`{short(s, 70)}`: {name} is one of {', '.join(enums)}"
        if vartype == "integer" and re.fullmatch(r"-?\d+", plain) and lo and hi \
                and not int(lo) <= int(plain) <= int(hi):
            return f"`{short(s, 70)}`: {name} is from {lo} to {hi}"
        return None

    # ------------------------------------------------------------ the report
    def summary(self):
        run = sum(self.counts.values())
        not_run = sum(self.not_run.values())
        c = self.counts
        return (f"docs: {run} blocks run ({c['sql']} sql, {c['sh']} sh, {c['ini']} ini), "
                f"{self.run_by} run by tests, {not_run} not run, {self.tested} tested elsewhere; "
                f"{len(self.failures)} failed")

    def not_run_detail(self):
        n = self.not_run
        return (f"docs: not run: {n['marked']} marked <!-- not run -->, {n['output']} text or "
                f"output, {n['client']} client code not marked <!-- tested -->")


def become_subreaper():
    """Processes that the blocks start and that leave their parent (a
    server that pg_ctl started, a job put in the background) become our
    children, so that descendants() finds them."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0          # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def descendants(pid):
    """Every process below pid, read from /proc."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = pathlib.Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(d))
    found, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found


def process_name(pid):
    try:
        return pathlib.Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return str(pid)


def stop_processes(pids, grace=5.0):
    """SIGTERM (a server shuts down and removes its shared memory), then
    SIGKILL what is left after the grace time; reaps our zombies."""
    import time
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        until = time.monotonic() + grace
        while time.monotonic() < until:
            reap()
            if not any(pathlib.Path(f"/proc/{p}").exists() and not zombie(p) for p in pids):
                return
            time.sleep(0.05)
    reap()


def zombie(pid):
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def sql_content(line):
    """A line without its -- comment (strings are not parsed)."""
    return line.split("--", 1)[0].strip()


def statement_start(lines, end):
    """The 1-based first line of the statement that psql sent at line
    `end` (the line of its semicolon): after the previous statement's
    semicolon, skipping blank and comment lines."""
    k = end - 1
    while k >= 1 and not sql_content(lines[k - 1]).endswith(";"):
        k -= 1
    k += 1
    while k < end and not sql_content(lines[k - 1]):
        k += 1
    return max(1, min(k, len(lines)))


def last_statement_end(lines):
    """The line of the last statement's semicolon (or the last line with
    SQL, for a last statement without one)."""
    with_sql = [k for k, x in enumerate(lines, 1) if sql_content(x)]
    if not with_sql:
        return len(lines)
    ends = [k for k in with_sql if sql_content(lines[k - 1]).endswith(";")]
    last = with_sql[-1]
    return ends[-1] if ends and ends[-1] == last else last


def block(root, page, name):
    """The text of the block of page marked <!-- run by: PATH name -->, or
    None."""
    for b in markdown.parse((pathlib.Path(root) / page).read_text()).blocks:
        if b.marker and b.marker[0] == "run by":
            m = RUN_BY.fullmatch(b.marker[1])
            if m and m.group(2) == name:
                return b.text
    return None


def print_block(root, page, name):
    try:
        text = block(root, page, name)
    except OSError as e:
        print(f"run_blocks: {page}: {e.strerror}", file=sys.stderr)
        return 1
    if text is None:
        print(f"run_blocks: {page} has no block marked <!-- run by: PATH {name} -->",
              file=sys.stderr)
        return 1
    sys.stdout.write(text + "\n")
    return 0


# ---------------------------------------------------------------- self-test
EXPECT_FAILURE = re.compile(r"<!-- expect failure: (.*?) -->")
EXPECT_SUMMARY = re.compile(r"<!-- expect summary: (.*?) -->")


def self_test(workdir):
    fixtures = here / "fixtures"
    passed, failed = 0, []

    def ok(cond, what):
        nonlocal passed
        if cond:
            passed += 1
            print(f"ok {passed + len(failed)} - {what}")
        else:
            failed.append(what)
            print(f"not ok {passed + len(failed)} - {what}")

    for page in sorted(fixtures.glob("*.md")):
        runner = Runner(fixtures, workdir)
        runner.run_pages([page])
        links = check_links.Links(fixtures)
        links.check_page(page)
        got = [(line, msg) for _, line, msg in runner.failures + links.failures]
        text = page.read_text().split("\n")
        marks = [(k, m.group(1)) for k, line in enumerate(text, 1)
                 for m in EXPECT_FAILURE.finditer(line)]
        for i, (k, want) in enumerate(marks):
            until = marks[i + 1][0] if i + 1 < len(marks) else len(text) + 1
            hits = [g for g in got if k < g[0] < until and want in g[1]]
            ok(hits, f"{page.name}:{k}: a failure with '{want}' in lines {k + 1} to {until - 1}"
               + (f": {hits[0][1]}" if hits else f"; got {got}"))
        spans = [(k, marks[i + 1][0] if i + 1 < len(marks) else len(text) + 1, want)
                 for i, (k, want) in enumerate(marks)]
        unexpected = [g for g in got
                      if not any(a < g[0] < b and want in g[1] for a, b, want in spans)]
        ok(not unexpected, f"{page.name}: no failure that its comments do not announce"
           + (f"; unexpected: {unexpected}" if unexpected else ""))
        for m in EXPECT_SUMMARY.finditer(page.read_text()):
            ok(runner.summary() == m.group(1),
               f"{page.name}: the summary is '{m.group(1)}' (got '{runner.summary()}')")

    # --block: how a test outside the tier reads a block marked run by.
    def block_cli(*args):
        return subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), "--root",
                               str(fixtures), "--block", *args], capture_output=True, text=True)
    r = block_cli("good.md", "install-steps")
    ok(r.returncode == 0 and r.stdout == "make\nmake install\n",
       f"--block good.md install-steps prints the block, dedented (got {r.returncode}, "
       f"{r.stdout!r}, {r.stderr!r})")
    r = block_cli("good.md", "no-such-block")
    ok(r.returncode == 1 and not r.stdout and "good.md has no block marked <!-- run by: PATH "
       "no-such-block -->" in r.stderr,
       f"--block good.md no-such-block exits 1, saying so (got {r.returncode}, {r.stderr!r})")
    r = block_cli("no-such-page.md", "install-steps")
    ok(r.returncode == 1 and not r.stdout and "no-such-page.md" in r.stderr,
       f"--block of a missing page exits 1, saying so (got {r.returncode}, {r.stderr!r})")

    # The front page's length limit.
    with tempfile.TemporaryDirectory(dir=workdir) as d:
        readme = pathlib.Path(d) / "README.md"
        links = check_links.Links(d)
        readme.write_text("line\n" * check_links.README_MAX_LINES)
        ok(links.check_readme_length(readme) == 250 and not links.failures,
           "a README.md of 250 lines passes")
        readme.write_text("line\n" * (check_links.README_MAX_LINES + 1))
        links.check_readme_length(readme)
        ok([f[2] for f in links.failures] == ["README.md has 251 lines, more than 250"],
           f"a README.md of 251 lines fails with its count: {links.failures}")

    # GitHub's slugs.
    for heading, want in [("`snowflake_status()`", "snowflake_status"),
                          ("Which function do I use?", "which-function-do-i-use"),
                          ("Errors and SQLSTATEs", "errors-and-sqlstates"),
                          ("Upgrading PostgreSQL 15 -> 17", "upgrading-postgresql-15---17"),
                          ("[Links](x.md) *and* **emphasis**", "links-and-emphasis"),
                          ("snake_case, kebab-case & dots.", "snake_case-kebab-case--dots")]:
        ok(markdown.slug(heading) == want, f"slug({heading!r}) is {want!r} "
           f"(got {markdown.slug(heading)!r})")

    print(f"self-test: {passed} passed, {len(failed)} failed")
    return not failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=here.parents[1])
    ap.add_argument("--workdir", help="where block scripts, outputs and scratch directories go "
                    "(default: a temporary directory, removed at the end)")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--block", nargs=2, metavar=("PAGE", "NAME"),
                    help="print the block of PAGE marked <!-- run by: PATH NAME -->")
    ap.add_argument("pages", nargs="*")
    args = ap.parse_args()
    if args.block:
        sys.exit(print_block(args.root, *args.block))
    workdir = args.workdir or tempfile.mkdtemp(prefix="snowflake-docs-blocks.")
    pathlib.Path(workdir).mkdir(parents=True, exist_ok=True)
    become_subreaper()
    try:
        if args.self_test:
            sys.exit(0 if self_test(workdir) else 1)
        runner = Runner(args.root, workdir)
        pages = [pathlib.Path(p) for p in args.pages] or check_links.default_pages(runner.root)
        runner.run_pages(pages)
        for path, line, message in runner.failures:
            print(f"{runner.rel(path)}:{line}: {message}")
        print(runner.not_run_detail())
        print(runner.summary())
        sys.exit(1 if runner.failures else 0)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
