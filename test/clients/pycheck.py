"""What the Python client tests share: counting checks, and decoding an ID
on the client side to compare with snowflake_decode() on the server."""

import contextlib
import datetime
import sys
import traceback


class Checks:
    """Counts checks.  A failed check or a step that raises counts as a
    failure and the test goes on, so one missing function fails only the
    checks that need it.  finish() prints "<client>: N passed, M failed"
    (the clients tier sums these lines) and exits non-zero on any failure."""

    def __init__(self, client):
        self.client = client
        self.passed = 0
        self.failed = 0

    def ok(self, cond, what, detail=None):
        n = self.passed + self.failed + 1
        if cond:
            self.passed += 1
            print(f"ok {n} - {what}")
        else:
            self.failed += 1
            print(f"not ok {n} - {what}")
            if detail is not None:
                print(f"#   {detail}")
        return bool(cond)

    def eq(self, got, want, what):
        return self.ok(got == want, what, f"got {got!r}, want {want!r}")

    def increasing(self, ids, what):
        bad = [(a, b) for a, b in zip(ids, ids[1:]) if not a < b]
        return self.ok(not bad, what, f"out of order: {bad[:3]!r}")

    @contextlib.contextmanager
    def step(self, name):
        try:
            yield
        except Exception as e:  # noqa: BLE001 - report and go on
            self.failed += 1
            print(f"not ok {self.passed + self.failed} - {name} raised "
                  f"{type(e).__name__}: {e}")
            traceback.print_exc(file=sys.stdout)

    def finish(self):
        print(f"{self.client}: {self.passed} passed, {self.failed} failed")
        sys.exit(0 if self.failed == 0 and self.passed > 0 else 1)


LAYOUT_SQL = ("SELECT epoch, node_bits, worker_bits, sequence_bits, node_id, "
              "max_drift_ms FROM snowflake_status()")


def decode(id_, layout):
    """The fields of an ID, computed here from the layout row
    (LAYOUT_SQL): (ts, node_id, worker_id, seq)."""
    epoch, node_bits, worker_bits, sequence_bits = layout[:4]
    seq = id_ & ((1 << sequence_bits) - 1)
    worker = (id_ >> sequence_bits) & ((1 << worker_bits) - 1)
    node = (id_ >> (sequence_bits + worker_bits)) & ((1 << node_bits) - 1)
    ms = id_ >> (sequence_bits + worker_bits + node_bits)
    return (epoch + datetime.timedelta(milliseconds=ms), node, worker, seq)


def check_decoded(c, ids, server_rows, layout, worker, since, until):
    """The checks every Python client makes on the IDs it inserted in one
    session: the server's snowflake_decode() rows equal the client's own
    decoding, the node id is this server's, the worker id is the session's
    slot, and the timestamps lie between a clock reading taken before the
    inserts (since) and one taken after (until) plus max_drift."""
    c.eq([tuple(r) for r in server_rows], [decode(i, layout) for i in ids],
         "snowflake_decode() on the server equals the client's decoding")
    c.ok(all(r[1] == layout[4] for r in server_rows),
         f"every node_id is this server's ({layout[4]})")
    c.ok(all(r[2] == worker for r in server_rows),
         f"every worker_id is the session's slot ({worker})")
    floor = since.replace(microsecond=since.microsecond // 1000 * 1000)
    late = until + datetime.timedelta(milliseconds=layout[5])
    c.ok(all(floor <= r[0] <= late for r in server_rows),
         "every timestamp lies between the clock before the inserts and "
         "the clock after them plus max_drift",
         f"{floor} .. {late}: {[r[0] for r in server_rows][:5]}")
