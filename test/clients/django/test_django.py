"""Django with snowflake IDs: primary keys filled by the database through a
BigAutoField subclass (Debian 12 ships Django 3.2, before db_default), the
committed migration, ORM inserts that read the ID back with RETURNING,
exact reads, decoding, bulk_create() with IDs from one snowflake_nextval(n)
batch, a time range on the primary key, and a key of type snowflake
without and with psycopg2 reading the type as int8.  Run with
DJANGO_SETTINGS_MODULE=snowflake_site.settings and this directory on
PYTHONPATH (test/clients/run.sh does)."""

import os
import sys
import time

import django

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pycheck import LAYOUT_SQL, Checks, check_decoded, decode  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.db.backends.signals import connection_created  # noqa: E402
from shop.fields import snowflake_as_int  # noqa: E402
from shop.models import Customer, Order, SnowflakeMaxId, SnowflakeMinId, Ticket  # noqa: E402

c = Checks("django")
c.ok(django.VERSION >= (3, 2), f"Django {django.get_version()}")


def query(sql, params=()):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


call_command("migrate", verbosity=0)
try:
    call_command("makemigrations", "shop", check=True, dry_run=True, verbosity=0)
    c.ok(True, "the committed migration matches the models")
except SystemExit:
    c.ok(False, "the committed migration matches the models")

columns = query("SELECT table_name, column_name, data_type, column_default "
                "FROM information_schema.columns WHERE table_schema = 'public' "
                "AND table_name IN ('shop_customer', 'shop_order') "
                "AND column_name IN ('id', 'customer_id') "
                "ORDER BY 1, 2")
c.eq(columns, [("shop_customer", "id", "bigint", "snowflake_nextval()"),
               ("shop_order", "customer_id", "bigint", None),
               ("shop_order", "id", "bigint", "snowflake_nextval()")],
     "both keys are bigint DEFAULT snowflake_nextval() (one explicit, one "
     "from DEFAULT_AUTO_FIELD), and the foreign key is bigint")
c.eq(query("SELECT count(*) FROM pg_sequences WHERE sequencename LIKE 'shop%%'"),
     [(0,)], "no sequence was made")

layout = query(LAYOUT_SQL)[0]
since = query("SELECT clock_timestamp()")[0][0]
with CaptureQueriesContext(connection) as insert_queries:
    # docs: django-insert
    customer = Customer.objects.create(name="Ada")
    order = Order.objects.create(customer=customer, item="tea")
    # order.id came back from INSERT ... RETURNING
    # end docs
    second = Order.objects.create(customer=customer, item="cake")
    third = Order.objects.create(customer=customer, item="scone")
time.sleep(0.02)    # so that the time range below can split the rows
more = Order.objects.bulk_create(
    [Order(customer=customer, item=f"bulk {i}") for i in range(20)])
until = query("SELECT clock_timestamp()")[0][0]
worker = query("SELECT worker_id FROM snowflake_workers "
               "WHERE pid = pg_backend_pid()")[0][0]
ids = [order.id, second.id, third.id] + [o.id for o in more]

sql = [q["sql"] for q in insert_queries.captured_queries]
c.ok(len(sql) == 4 and all(s.startswith("INSERT INTO") and ' RETURNING "' in s
                           for s in sql), "create() ran one INSERT ... RETURNING each", sql)
c.ok(sql and sql[-1].startswith('INSERT INTO "shop_order" ("customer_id", "item")'),
     "the INSERT leaves the key to the database", sql)
c.ok(type(customer.id) is int and customer.id > 0, "the customer got its ID")
c.eq(len(ids), 23, "create() and bulk_create() set 23 order IDs")
c.ok(all(type(i) is int for i in ids), "every ID is a Python int")
c.increasing([customer.id] + ids, "IDs strictly increase in insertion order (one session)")

rows = query("SELECT id, id::text AS id_text FROM shop_order ORDER BY id")
c.eq([r[0] for r in rows], ids, "the IDs read back equal the IDs Django set")
c.ok(all(r[0] == int(r[1]) for r in rows), "each ID equals its id::text")
c.eq(list(Order.objects.order_by("id").values_list("id", flat=True)), ids,
     "the ORM reads the same IDs")
c.eq(Order.objects.get(pk=ids[5]).item, "bulk 2", "get(pk=...) finds the row")
c.eq(Order.objects.filter(customer__id=customer.id).count(), 23,
     "the foreign key joins on the snowflake key")
server = [query("SELECT ts, node_id, worker_id, seq FROM snowflake_decode(%s)",
                [i])[0] for i in ids]
check_decoded(c, ids, server, layout, worker, since, until)

with c.step("batch: snowflake_nextval(n)"):
    # docs: django-batch
    with connection.cursor() as cursor:
        cursor.execute("SELECT snowflake_nextval(%s)", [50])
        new_ids = [row[0] for row in cursor.fetchall()]
    Order.objects.bulk_create(
        Order(id=id_, customer=customer, item=f"preassigned {n}")
        for n, id_ in enumerate(new_ids))
    # end docs
    c.eq(len(new_ids), 50, "the batch has 50 IDs")
    c.increasing(new_ids, "the batch strictly increases")
    c.ok(new_ids[0] > ids[-1], "the batch follows the session's earlier IDs")
    c.eq(Order.objects.filter(id__in=new_ids).count(), 50,
         "bulk_create() inserted the preassigned IDs")

with c.step("time bounds"):
    probe = ids[len(ids) // 2]
    ts = query("SELECT snowflake_timestamp(%s)", [probe])[0][0]
    lo, hi = (Order.objects.filter(pk=probe)
              .annotate(lo=SnowflakeMinId(ts), hi=SnowflakeMaxId(ts))
              .values_list("lo", "hi").get())
    c.ok(lo <= probe <= hi, "snowflake_min_id(ts) <= id <= snowflake_max_id(ts)",
         f"{lo} <= {probe} <= {hi}")
    start = query("SELECT snowflake_timestamp(%s)", [ids[0]])[0][0]
    end = query("SELECT snowflake_timestamp(%s)", [ids[2]])[0][0]
    # docs: django-range
    in_range = Order.objects.filter(id__gte=SnowflakeMinId(start),
                                    id__lte=SnowflakeMaxId(end))
    # end docs
    got = sorted(in_range.values_list("id", flat=True))
    every = Order.objects.values_list("id", flat=True)
    want = sorted(i for i in every if start <= decode(i, layout)[0] <= end)
    c.eq(got, want, "the range query returns exactly the rows whose "
         "timestamps lie in the range")
    c.eq(got, ids[:3], "the range holds the three rows made before the pause")

with c.step("the snowflake type"):
    # Django 3.2 reads through psycopg2, which has only the text format and
    # hands a type it does not know over as a str.
    c.eq(connection.Database.__name__, "psycopg2", "Django's driver is psycopg2")
    c.eq(query("SELECT format_type(atttypid, atttypmod), pg_get_expr(adbin, adrelid) "
               "FROM pg_attribute JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum "
               "WHERE attrelid = 'shop_ticket'::regclass AND attname = 'id'"),
         [("snowflake", "snowflake_nextval()")],
         "the migration makes shop_ticket.id a snowflake with the default")
    tea = Ticket.objects.create(item="tea")
    tea_text = query("SELECT id::text FROM shop_ticket WHERE item = 'tea'")[0][0]
    c.ok(int(tea_text) > 2**53, f"the snowflake key is above 2^53 ({tea_text})")
    c.eq((type(tea.id), tea.id), (str, tea_text),
         "snowflake, no adapter: create() sets the key to a str, the decimal ID")
    got = Ticket.objects.values_list("id", flat=True).get()
    c.eq((type(got), got), (str, tea_text), "snowflake, no adapter: the ORM reads a str")
    got = query("SELECT id FROM shop_ticket")[0][0]
    c.eq((type(got), got), (str, tea_text), "snowflake, no adapter: a cursor reads a str")
    c.eq(Ticket.objects.get(pk=int(tea_text)).item, "tea",
         "snowflake, no adapter: get(pk=int) finds the row")
    doc, row = query("SELECT to_json(t), row_to_json(t) FROM shop_ticket t")[0]
    c.eq((doc, row), ({"id": tea_text, "item": "tea"},) * 2,
         "snowflake: to_json() and row_to_json() give the ID as a str")

    # From the next connection on, psycopg2 reads the type as int8.
    # docs: django-snowflake-connect
    connection_created.connect(snowflake_as_int)   # in an AppConfig.ready()
    # end docs
    connection.close()
    cake = Ticket.objects.create(item="cake")
    cake_text = query("SELECT id::text FROM shop_ticket WHERE item = 'cake'")[0][0]
    c.eq((type(cake.id), str(cake.id)), (int, cake_text),
         "snowflake, with the adapter: create() sets the key to an int, the exact ID")
    got = list(Ticket.objects.order_by("id").values_list("id", flat=True))
    c.eq([(type(i), str(i)) for i in got], [(int, tea_text), (int, cake_text)],
         "snowflake, with the adapter: the ORM reads ints, the exact IDs")
    got = query("SELECT id FROM shop_ticket WHERE id = %s", [cake.id])[0][0]
    c.eq((type(got), got), (int, cake.id),
         "snowflake, with the adapter: a cursor reads an int, and the int parameter finds its row")
    c.eq(Ticket.objects.get(pk=cake.id).item, "cake",
         "snowflake, with the adapter: get(pk=int) finds the row")

c.finish()
