"""SQLAlchemy ORM with snowflake IDs: a model whose primary key has
server_default=text('snowflake_nextval()'), ORM inserts whose IDs come back
through RETURNING in the same INSERT, exact reads, decoding, objects with
IDs preassigned from one snowflake_nextval(n) batch, a time range on
the primary key, and a key of type snowflake without and with a type that
reads it as an int.  Written in the 2.0 style, which SQLAlchemy 1.4 (Debian
12's) runs with future=True.  Connects through the PG* environment
variables (test/clients/run.sh sets them)."""

import datetime
import os
import sys
import time

import sqlalchemy
from sqlalchemy import (BigInteger, Column, Text, create_engine, event, func,
                        select, text)
from sqlalchemy.orm import Session, declarative_base
from sqlalchemy.types import UserDefinedType

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pycheck import LAYOUT_SQL, Checks, check_decoded, decode  # noqa: E402

c = Checks("sqlalchemy")
c.ok(sqlalchemy.__version__.split(".")[0] in ("1", "2"),
     f"SQLAlchemy {sqlalchemy.__version__}")

Base = declarative_base()


# docs: sqlalchemy-model
class Order(Base):
    __tablename__ = "orders"

    id = Column(BigInteger, primary_key=True,
                server_default=text("snowflake_nextval()"))
    item = Column(Text, nullable=False)
# end docs


# An empty URL: psycopg2 (libpq) takes the server from PGHOST and friends.
engine = create_engine("postgresql+psycopg2://", future=True)
statements = []


@event.listens_for(engine, "before_cursor_execute")
def record(conn, cursor, statement, parameters, context, executemany):
    statements.append(statement)


Base.metadata.create_all(engine)
ddl = [s for s in statements if s.lstrip().startswith("CREATE TABLE")]
c.ok(len(ddl) == 1 and "id BIGINT DEFAULT snowflake_nextval() NOT NULL" in ddl[0]
     and "SERIAL" not in ddl[0].upper(),
     "create_all() makes a bigint key with the default, not a bigserial",
     ddl)

with Session(engine) as session:
    layout = session.execute(text(LAYOUT_SQL)).one()
    since = session.scalar(text("SELECT clock_timestamp()"))

    statements.clear()
    # docs: sqlalchemy-insert
    orders = [Order(item=item) for item in ("tea", "cake", "scone")]
    session.add_all(orders)
    session.flush()                 # INSERT ... RETURNING orders.id
    ids = [order.id for order in orders]
    # end docs
    flushed = list(statements)
    time.sleep(0.02)                # so that the time range below can split the rows
    more = [Order(item=f"bulk {i}") for i in range(20)]
    session.add_all(more)
    session.flush()
    ids += [order.id for order in more]
    until = session.scalar(text("SELECT clock_timestamp()"))
    worker = session.scalar(text("SELECT worker_id FROM snowflake_workers "
                                 "WHERE pid = pg_backend_pid()"))
    session.commit()

c.ok(flushed and all(s.lstrip().startswith("INSERT INTO orders") and
                     "RETURNING orders.id" in s for s in flushed),
     "the flush ran only INSERTs, each with RETURNING orders.id", flushed)
c.eq(len(ids), 23, "23 IDs after flushing")
c.ok(all(type(i) is int for i in ids), "every ID is a Python int")
c.increasing(ids, "IDs strictly increase in insertion order (one session)")

with Session(engine) as session:
    rows = session.execute(text("SELECT id, id::text AS id_text FROM orders "
                                "ORDER BY id")).all()
    c.eq([r.id for r in rows], ids, "the IDs read back equal the flushed IDs")
    c.ok(all(r.id == int(r.id_text) for r in rows), "each ID equals its id::text")
    c.eq(session.get(Order, ids[1]).item, "cake", "Session.get() by ID finds the row")
    server = [session.execute(text("SELECT ts, node_id, worker_id, seq FROM "
                                   "snowflake_decode(:id)"), {"id": i}).one()
              for i in ids]
check_decoded(c, ids, server, layout, worker, since, until)

with c.step("batch: snowflake_nextval(n)"), Session(engine) as session:
    last = session.scalar(select(func.snowflake_nextval()))
    # docs: sqlalchemy-batch
    new_ids = session.scalars(select(func.snowflake_nextval(50))).all()
    session.add_all([Order(id=id_, item=f"preassigned {n}")
                     for n, id_ in enumerate(new_ids)])
    session.commit()
    # end docs
    c.eq(len(new_ids), 50, "the batch has 50 IDs")
    c.increasing(new_ids, "the batch strictly increases")
    c.ok(new_ids[0] > last, "the batch follows the session's earlier ID")
    c.eq(session.scalar(select(func.count()).select_from(Order)
                        .where(Order.id.in_(new_ids))), 50,
         "the objects were inserted with the preassigned IDs")

with c.step("time bounds"), Session(engine) as session:
    probe = ids[len(ids) // 2]
    ts = session.scalar(select(func.snowflake_timestamp(probe)))
    c.ok(isinstance(ts, datetime.datetime) and ts.tzinfo is not None,
         "snowflake_timestamp() comes back as an aware datetime")
    lo, hi = session.execute(select(func.snowflake_min_id(ts),
                                    func.snowflake_max_id(ts))).one()
    c.ok(lo <= probe <= hi, "snowflake_min_id(ts) <= id <= snowflake_max_id(ts)",
         f"{lo} <= {probe} <= {hi}")
    start = session.scalar(select(func.snowflake_timestamp(ids[0])))
    end = session.scalar(select(func.snowflake_timestamp(ids[2])))
    # docs: sqlalchemy-range
    in_range = session.scalars(
        select(Order)
        .where(Order.id >= func.snowflake_min_id(start),
               Order.id <= func.snowflake_max_id(end))
        .order_by(Order.id)).all()
    # end docs
    every = session.scalars(select(Order.id)).all()
    want = sorted(i for i in every if start <= decode(i, layout)[0] <= end)
    c.eq([o.id for o in in_range], want, "the range query returns exactly the "
         "rows whose timestamps lie in the range")
    c.eq([o.id for o in in_range], ids[:3],
         "the range holds the three rows made before the pause")

# docs: sqlalchemy-snowflake-type
class Snowflake(UserDefinedType):
    """A column of type snowflake, read as a Python int (psycopg2 hands a
    type it does not know over as a str)."""
    cache_ok = True

    def get_col_spec(self, **kw):
        return "snowflake"

    def result_processor(self, dialect, coltype):
        return lambda value: None if value is None else int(value)
# end docs


# docs: sqlalchemy-snowflake-model
class Ticket(Base):
    __tablename__ = "tickets"

    id = Column(Snowflake, primary_key=True,
                server_default=text("snowflake_nextval()"))
    item = Column(Text, nullable=False)
# end docs


# The same table declared with BigInteger, as for a bigint key.
class BigIntegerTicket(declarative_base()):
    __tablename__ = "tickets"

    id = Column(BigInteger, primary_key=True,
                server_default=text("snowflake_nextval()"))
    item = Column(Text, nullable=False)


with c.step("the snowflake type"):
    # SQLAlchemy 1.4 reads through psycopg2 (text results only): its
    # psycopg 3 dialect came with 2.0.
    if sqlalchemy.__version__.startswith("1."):
        try:
            create_engine("postgresql+psycopg://")
            c.ok(False, "SQLAlchemy 1.4 has no psycopg 3 dialect")
        except sqlalchemy.exc.NoSuchModuleError:
            c.ok(True, "SQLAlchemy 1.4 has no psycopg 3 dialect")
    statements.clear()
    Base.metadata.create_all(engine)
    ddl = [s for s in statements if s.lstrip().startswith("CREATE TABLE")]
    c.ok(len(ddl) == 1 and "id snowflake DEFAULT snowflake_nextval() NOT NULL" in ddl[0],
         "create_all() makes the Snowflake key a snowflake column with the default", ddl)
    with Session(engine) as session:
        plain = BigIntegerTicket(item="tea")
        session.add(plain)
        session.flush()
        ticket_text = session.scalar(text("SELECT id::text FROM tickets"))
        ticket = int(ticket_text)
        c.ok(ticket > 2**53, f"the snowflake key is above 2^53 ({ticket_text})")
        c.eq((type(plain.id), plain.id), (str, ticket_text),
             "snowflake, declared BigInteger: the flush gives a str, the decimal ID")
        got = session.scalar(text("SELECT id FROM tickets"))
        c.eq((type(got), got), (str, ticket_text),
             "snowflake, text() query: a str, the decimal ID")
        got = session.scalar(select(BigIntegerTicket.id).where(BigIntegerTicket.id == ticket))
        c.eq((type(got), got), (str, ticket_text),
             "snowflake, declared BigInteger: an int parameter finds the row, read as a str")
        doc, row = session.execute(text("SELECT to_json(t), row_to_json(t) FROM tickets t")).one()
        c.eq((doc, row), ({"id": ticket_text, "item": "tea"},) * 2,
             "snowflake: to_json() and row_to_json() give the ID as a str")
        session.commit()
    with Session(engine) as session:
        statements.clear()
        # docs: sqlalchemy-snowflake-insert
        ticket = Ticket(item="cake")
        session.add(ticket)
        session.flush()                 # INSERT ... RETURNING tickets.id: an int
        # end docs
        c.ok(len(statements) == 1 and "RETURNING tickets.id" in statements[0],
             "the flush of a Ticket is one INSERT ... RETURNING tickets.id", statements)
        cake_text = session.scalar(text("SELECT id::text FROM tickets WHERE item = 'cake'"))
        c.eq((type(ticket.id), str(ticket.id)), (int, cake_text),
             "snowflake, declared Snowflake: the flush gives an int, the exact ID")
        session.commit()
    with Session(engine) as session:
        got = session.scalars(select(Ticket).order_by(Ticket.id)).all()
        c.eq([(type(t.id), str(t.id), t.item) for t in got],
             [(int, ticket_text, "tea"), (int, cake_text, "cake")],
             "snowflake, declared Snowflake: the ORM reads ints, the exact IDs")
        c.eq(session.get(Ticket, int(cake_text)).item, "cake",
             "snowflake, declared Snowflake: Session.get() with the int finds the row")
        c.eq(session.scalar(select(Ticket.item).where(Ticket.id == int(ticket_text))), "tea",
             "snowflake, declared Snowflake: an int parameter finds the row")

c.finish()
