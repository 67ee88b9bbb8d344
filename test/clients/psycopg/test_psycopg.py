"""psycopg 3 with snowflake IDs: rows keyed by the column default, IDs read
back exactly as Python ints, decoded, a batch from snowflake_nextval(n),
a time range on the primary key, a key of type snowflake in text and binary
mode, without and with int8's loaders, and worker-id leases in pipeline mode
(in its own database: any database with the extension leases).  Connects through
the PG* environment variables (test/clients/run.sh sets them)."""

import os
import sys
import time

import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pycheck import LAYOUT_SQL, Checks, check_decoded, decode  # noqa: E402

c = Checks("psycopg")
conn = psycopg.connect(autocommit=True)
c.ok(psycopg.__version__.startswith("3."), f"psycopg {psycopg.__version__}")
cur = conn.cursor()

# docs: psycopg-table
cur.execute("""
    CREATE TABLE orders (
        id   bigint PRIMARY KEY DEFAULT snowflake_nextval(),
        item text NOT NULL
    )""")
# end docs

layout = cur.execute(LAYOUT_SQL).fetchone()
since = cur.execute("SELECT clock_timestamp()").fetchone()[0]

# One row at a time, then many in one executemany().
ids = []
for item in ("tea", "cake", "scone"):
    # docs: psycopg-insert
    cur.execute("INSERT INTO orders (item) VALUES (%s) RETURNING id", (item,))
    order_id = cur.fetchone()[0]    # a Python int: all 64 bits, exact
    # end docs
    ids.append(order_id)
# A pause, so that the time range below can split the rows.
time.sleep(0.02)
cur.executemany("INSERT INTO orders (item) VALUES (%s) RETURNING id",
                [(f"bulk {i}",) for i in range(20)], returning=True)
while True:
    ids.append(cur.fetchone()[0])
    if not cur.nextset():
        break
until = cur.execute("SELECT clock_timestamp()").fetchone()[0]
worker = cur.execute("SELECT worker_id FROM snowflake_workers "
                     "WHERE pid = pg_backend_pid()").fetchone()[0]

c.eq(len(ids), 23, "23 IDs came back from RETURNING")
c.ok(all(type(i) is int for i in ids), "every ID is a Python int")
c.increasing(ids, "IDs strictly increase in insertion order (one session)")

# Exact: the ints equal the server's own text of the IDs.
rows = cur.execute("SELECT id, id::text AS id_text FROM orders ORDER BY id").fetchall()
c.eq([r[0] for r in rows], ids, "the IDs read back equal the IDs returned")
c.ok(all(r[0] == int(r[1]) for r in rows), "each ID equals its id::text")
c.ok(all(i > 2**53 for i in ids),
     "the IDs are above 2^53 (where a float would round them)")

server = [cur.execute("SELECT ts, node_id, worker_id, seq "
                      "FROM snowflake_decode(%s)", (i,)).fetchone() for i in ids]
check_decoded(c, ids, server, layout, worker, since, until)

with c.step("batch: snowflake_nextval(n)"):
    # docs: psycopg-batch
    cur.execute("SELECT snowflake_nextval(%s)", (100,))
    batch = [row[0] for row in cur.fetchall()]
    cur.executemany("INSERT INTO orders (id, item) VALUES (%s, %s)",
                    [(id_, f"preassigned {n}") for n, id_ in enumerate(batch)])
    # end docs
    c.eq(len(batch), 100, "the batch has 100 IDs")
    c.increasing(batch, "the batch strictly increases")
    c.ok(batch[0] > ids[-1], "the batch follows the session's earlier IDs")
    c.eq(cur.execute("SELECT count(*) FROM orders WHERE id = ANY(%s)",
                     (batch,)).fetchone()[0], 100,
         "the preassigned IDs were inserted")

with c.step("time bounds"):
    # A row's ID lies between the bounds of its own timestamp.
    probe = ids[len(ids) // 2]
    ts = cur.execute("SELECT snowflake_timestamp(%s)", (probe,)).fetchone()[0]
    lo, hi = cur.execute("SELECT snowflake_min_id(%s), snowflake_max_id(%s)",
                         (ts, ts)).fetchone()
    c.ok(lo <= probe <= hi, "snowflake_min_id(ts) <= id <= snowflake_max_id(ts)",
         f"{lo} <= {probe} <= {hi}")
    # A time range of the primary key, from the first row to the third.
    start = cur.execute("SELECT snowflake_timestamp(%s)", (ids[0],)).fetchone()[0]
    end = cur.execute("SELECT snowflake_timestamp(%s)", (ids[2],)).fetchone()[0]
    # docs: psycopg-range
    cur.execute("SELECT id FROM orders"
                " WHERE id >= snowflake_min_id(%s) AND id <= snowflake_max_id(%s)"
                " ORDER BY id", (start, end))
    # end docs
    got = [r[0] for r in cur.fetchall()]
    every = [r[0] for r in cur.execute("SELECT id FROM orders").fetchall()]
    want = sorted(i for i in every if start <= decode(i, layout)[0] <= end)
    c.eq(got, want, "the range query returns exactly the rows whose "
         "timestamps lie in the range")
    c.eq(got, ids[:3], "the range holds the three rows made before the pause")

with c.step("the snowflake type"):
    # A key of type snowflake: stored and sent as a bigint, but its OID is
    # one psycopg does not know, so it has no loader for it.
    cur.execute("CREATE TABLE tickets (id snowflake PRIMARY KEY DEFAULT snowflake_nextval(),"
                " item text NOT NULL)")
    ticket_text = cur.execute("INSERT INTO tickets (item) VALUES ('tea') RETURNING id::text"
                              ).fetchone()[0]
    ticket = int(ticket_text)
    c.ok(ticket > 2**53, f"the snowflake key is above 2^53 ({ticket_text})")
    got = cur.execute("SELECT id FROM tickets").fetchone()[0]
    c.eq((type(got), got), (str, ticket_text),
         "snowflake, text mode, no loader: a str, the decimal ID")
    bcur = conn.cursor(binary=True)
    got = bcur.execute("SELECT id FROM tickets").fetchone()[0]
    c.eq((type(got), got), (bytes, ticket.to_bytes(8, "big")),
         "snowflake, binary mode, no loader: bytes, the 8 big-endian bytes of int8")
    for mode, curs in (("text", cur), ("binary", bcur)):
        c.eq(curs.execute("SELECT item FROM tickets WHERE id = %s", (ticket,)).fetchone(),
             ("tea",), f"snowflake, {mode} mode: an int parameter finds the row (%s)")
        c.eq(curs.execute("SELECT item FROM tickets WHERE id = %b", (ticket,)).fetchone(),
             ("tea",), f"snowflake, {mode} mode: an int parameter finds the row (%b)")
        doc, row = curs.execute("SELECT to_json(t), row_to_json(t) FROM tickets t").fetchone()
        c.eq((doc, row), ({"id": ticket_text, "item": "tea"},) * 2,
             f"snowflake, {mode} mode: to_json() and row_to_json() give the ID as a str")

    # The loaders of int8, registered for the type's OID on this connection
    # (cursors made after it use them).  By name, only once psycopg knows
    # the type.
    from psycopg.types.numeric import IntLoader as Loader
    try:
        conn.adapters.register_loader("snowflake", Loader)
        c.ok(False, "register_loader('snowflake', ...) fails with a KeyError")
    except KeyError:
        c.ok(True, "register_loader('snowflake', ...) fails with a KeyError")
    # docs: psycopg-snowflake-loader
    from psycopg.types import TypeInfo
    from psycopg.types.numeric import Int8BinaryLoader, IntLoader

    oid = TypeInfo.fetch(conn, "snowflake").oid
    conn.adapters.register_loader(oid, IntLoader)           # text
    conn.adapters.register_loader(oid, Int8BinaryLoader)    # binary
    # end docs
    for mode, binary in (("text", False), ("binary", True)):
        curs = conn.cursor(binary=binary)
        got = curs.execute("SELECT id FROM tickets WHERE item = 'tea'").fetchone()[0]
        c.eq((type(got), got), (int, ticket),
             f"snowflake, {mode} mode, int8's loader: an int, the exact ID")
        got = curs.execute("INSERT INTO tickets (item) VALUES ('cake') RETURNING id").fetchone()[0]
        c.eq((type(got), str(got)),
             (int, cur.execute("SELECT id::text FROM tickets WHERE item = 'cake'").fetchone()[0]),
             f"snowflake, {mode} mode, int8's loader: RETURNING id gives the exact int")
        c.eq(curs.execute("SELECT item FROM tickets WHERE id = %s", (got,)).fetchone(),
             ("cake",), f"snowflake, {mode} mode, int8's loader: the int finds its row")
        curs.execute("DELETE FROM tickets WHERE item = 'cake'")

with c.step("worker-id leases in a pipeline"), \
        psycopg.connect(autocommit=True) as lconn:
    # In this client's own database: since 1.5 any database with the
    # extension leases from the server's one lease table.
    # In a pipeline, statements before the Sync share one transaction.
    # Since 1.5 a lease is not transactional, so a lease after another
    # statement of a pipeline is granted ...
    with lconn.pipeline() as p:
        lconn.execute("SELECT 1")
        after = lconn.execute(
            "SELECT worker_id, token FROM snowflake_lease_worker('pipelined', '1 minute')")
        p.sync()
    after_worker, after_token = after.fetchone()
    c.ok(after_token > 0, "a lease after another statement of a pipeline is granted")
    # ... and a failure after a lease in the same pipeline (so in its
    # transaction) does not undo it.
    try:
        with lconn.pipeline() as p:
            first = lconn.execute(
                "SELECT worker_id, token FROM snowflake_lease_worker('first', '1 minute')")
            lconn.execute("SELECT 1/0")
            p.sync()
        c.ok(False, "the statement after the lease fails")
    except psycopg.errors.DivisionByZero:
        pass
    held = lconn.execute("SELECT holder, worker_id, token, state FROM snowflake_leases"
                         " WHERE holder IN ('pipelined', 'first') AND state = 'held'"
                         " ORDER BY token").fetchall()
    c.eq([(h, s) for h, _, _, s in held], [("pipelined", "held"), ("first", "held")],
         "a lease followed by a failing statement in its pipeline stays held")
    c.eq(held[0][1:3], (after_worker, after_token),
         "the view shows the pipelined lease the client read")
    # The next grant gets another worker id: neither lease's window is
    # handed out again.
    third = lconn.execute("SELECT worker_id, token FROM snowflake_lease_worker('third', '1 minute')"
                          ).fetchone()
    c.ok(third[0] not in (held[0][1], held[1][1]) and held[0][1] != held[1][1],
         "each grant gets a worker id of its own "
         f"({held[0][1]}, {held[1][1]}, {third[0]})")
    for token in [t for _, _, t, _ in held] + [third[1]]:
        lconn.execute("SELECT snowflake_release_lease(%s, NULL)", (token,))

conn.close()
c.finish()
