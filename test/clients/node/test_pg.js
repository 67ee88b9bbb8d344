'use strict'
// node-postgres (pg) with snowflake IDs: int8 arrives as a string, then
// as BigInt (BigInt(string), pg.types.setTypeParser(20, BigInt)); Number
// loses precision with the default layout but not with the JavaScript-safe
// one; the checks of every client (the column default, exact reads,
// decoding, a batch, a time range); the lease recipe of docs/leases.md; and
// a key of type snowflake in text and binary mode, without and with a
// parser for its OID.  Connects through the PG* environment variables; the
// JavaScript-safe cluster is on the same socket directory at port
// SNOWFLAKE_JS_SAFE_PORT, database "node" (test/clients/run.sh sets them up).

const pg = require('pg')

let passed = 0
let failed = 0
function ok(cond, what, detail) {
  const n = passed + failed + 1
  if (cond) {
    passed++
    console.log(`ok ${n} - ${what}`)
  } else {
    failed++
    console.log(`not ok ${n} - ${what}`)
    if (detail !== undefined) console.log(`#   ${detail}`)
  }
  return cond
}
const show = (v) => JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? `${x}n` : x))
const eq = (got, want, what) => ok(show(got) === show(want), what, `got ${show(got)}, want ${show(want)}`)
const increasing = (xs, what) => ok(xs.every((x, i) => i === 0 || xs[i - 1] < x), what, show(xs.slice(0, 5)))
// A failed step counts once, and the test goes on.
async function step(name, fn) {
  try {
    await fn()
  } catch (e) {
    failed++
    console.log(`not ok ${passed + failed} - ${name} threw ${e.stack}`)
  }
}

// The fields of an ID from the layout in snowflake_status(), in BigInt.
function decode(id, layout) {
  const sb = BigInt(layout.sequence_bits)
  const wb = BigInt(layout.worker_bits)
  const nb = BigInt(layout.node_bits)
  const mask = (bits) => (1n << bits) - 1n
  return {
    ms: Number(BigInt(layout.epoch_ms) + (id >> (sb + wb + nb))),
    node_id: Number((id >> (sb + wb)) & mask(nb)),
    worker_id: Number((id >> sb) & mask(wb)),
    seq: Number(id & mask(sb)),
  }
}
const LAYOUT_SQL = `SELECT (extract(epoch FROM epoch) * 1000)::bigint::text AS epoch_ms,
  node_bits, worker_bits, sequence_bits, node_id, max_drift_ms FROM snowflake_status()`
const DECODE_SQL = `SELECT (extract(epoch FROM ts) * 1000)::bigint::text AS ms, node_id, worker_id, seq
  FROM snowflake_decode($1)`
const TABLE_SQL = 'CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text NOT NULL)'
// snowflake_decode() of each ID, in the shape of decode().
async function serverDecode(client, ids) {
  const server = []
  for (const x of ids) {
    const d = (await client.query(DECODE_SQL, [x])).rows[0]
    server.push({ ms: Number(d.ms), node_id: d.node_id, worker_id: d.worker_id, seq: d.seq })
  }
  return server
}
const clockMs = async (client) => BigInt((await client.query(
  "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint::text AS ms")).rows[0].ms)

// 200 IDs from one statement, read as node-postgres gives them.
async function twoHundred(client) {
  await client.query(TABLE_SQL)
  const { rows } = await client.query(
    "INSERT INTO orders (item) SELECT 'bulk ' || g FROM generate_series(1, 200) AS g RETURNING id")
  return rows.map((r) => r.id)
}

async function defaultLayout() {
  const client = new pg.Client()
  await client.connect()
  await client.query(TABLE_SQL)
  const layout = (await client.query(LAYOUT_SQL)).rows[0]
  const since = await clockMs(client)

  // docs: node-string
  const res = await client.query('INSERT INTO orders (item) VALUES ($1) RETURNING id', ['tea'])
  const id = res.rows[0].id          // a string, e.g. '250624425517395969'
  const exact = BigInt(id)           // exact; Number(id) would round it
  // end docs
  ok(typeof id === 'string', 'int8 arrives as a string by default')
  const ids = [exact]
  for (let i = 0; i < 22; i++) {
    // A pause after the third row, so that the time range below can split the rows.
    if (i === 2) await new Promise((resolve) => setTimeout(resolve, 20))
    const r = await client.query('INSERT INTO orders (item) VALUES ($1) RETURNING id', [`row ${i}`])
    ids.push(BigInt(r.rows[0].id))
  }
  const until = await clockMs(client)
  const worker = (await client.query(
    'SELECT worker_id FROM snowflake_workers WHERE pid = pg_backend_pid()')).rows[0].worker_id
  increasing(ids, 'IDs strictly increase in insertion order (one session)')

  // Exact: BigInt of the string equals the server's text.
  const text = (await client.query('SELECT id::text AS t FROM orders ORDER BY id')).rows.map((r) => r.t)
  eq(ids.map(String), text, 'BigInt(id) equals id::text for every row')

  // Decode here and on the server.
  const server = await serverDecode(client, ids)
  eq(server, ids.map((x) => decode(x, layout)), "snowflake_decode() on the server equals the client's decoding")
  ok(server.every((d) => d.node_id === layout.node_id), `every node_id is this server's (${layout.node_id})`)
  ok(server.every((d) => d.worker_id === worker), `every worker_id is the session's slot (${worker})`)
  const late = Number(until) + layout.max_drift_ms
  ok(server.every((d) => d.ms >= Number(since) && d.ms <= late),
    'every timestamp lies between the clock before the inserts and the clock after them plus max_drift')

  // JSON: a BigInt does not serialize by itself; as a string it is exact.
  let threw = false
  try {
    JSON.stringify({ id: exact })
  } catch (e) {
    threw = e instanceof TypeError
  }
  ok(threw, 'JSON.stringify() of a BigInt throws a TypeError')
  // docs: node-json
  const body = JSON.stringify({ id: exact }, (key, value) =>
    typeof value === 'bigint' ? value.toString() : value)
  // end docs
  eq(body, `{"id":"${text[0]}"}`, 'a replacer writes the ID as an exact JSON string')
  // docs: node-json-sql
  const { rows } = await client.query(
    "SELECT json_build_object('id', id::text, 'item', item) AS doc FROM orders WHERE id = $1",
    [exact])                         // rows[0].doc.id: the ID as an exact string
  // end docs
  eq(rows[0].doc, { id: text[0], item: 'tea' }, "json_build_object('id', id::text) arrives as the exact string")

  // The BigInt parser: every int8 column arrives as a BigInt.
  // docs: node-bigint
  pg.types.setTypeParser(20, BigInt)   // int8 (bigint) columns arrive as BigInt
  // end docs
  const asBig = (await client.query('SELECT id FROM orders ORDER BY id')).rows.map((r) => r.id)
  ok(asBig.every((x) => typeof x === 'bigint'), 'after setTypeParser(20, BigInt) IDs arrive as BigInt')
  eq(asBig, ids, 'and equal the IDs')
  eq((await client.query('SELECT item FROM orders WHERE id = $1', [ids[1]])).rows[0].item, 'row 0',
    'a BigInt parameter finds its row')

  await step('batch: snowflake_nextval(n)', async () => {
    // docs: node-batch
    const { rows } = await client.query('SELECT id FROM snowflake_nextval($1) AS id', [100])
    const batch = rows.map((r) => r.id)   // BigInts, increasing
    // end docs
    eq(batch.length, 100, 'the batch has 100 IDs')
    ok(batch.every((x) => typeof x === 'bigint'), 'the batch arrives as BigInt')
    increasing(batch, 'the batch strictly increases')
    ok(batch[0] > ids[ids.length - 1], "the batch follows the session's earlier IDs")
  })

  await step('time bounds', async () => {
    const probe = ids[10]
    const ts = (await client.query('SELECT snowflake_timestamp($1) AS ts', [probe])).rows[0].ts
    ok(ts instanceof Date, 'snowflake_timestamp() arrives as a Date')
    const b = (await client.query('SELECT snowflake_min_id($1) AS lo, snowflake_max_id($1) AS hi', [ts])).rows[0]
    ok(b.lo <= probe && probe <= b.hi, 'snowflake_min_id(ts) <= id <= snowflake_max_id(ts)', `${b.lo} ${probe} ${b.hi}`)
    const start = (await client.query('SELECT snowflake_timestamp($1) AS ts', [ids[0]])).rows[0].ts
    const end = (await client.query('SELECT snowflake_timestamp($1) AS ts', [ids[2]])).rows[0].ts
    // docs: node-range
    const { rows } = await client.query(
      'SELECT id FROM orders WHERE id >= snowflake_min_id($1) AND id <= snowflake_max_id($2) ORDER BY id',
      [start, end])   // two Dates
    // end docs
    const want = ids.filter((x) => {
      const ms = decode(x, layout).ms
      return ms >= start.getTime() && ms <= end.getTime()
    })
    eq(rows.map((r) => r.id), want, 'the range query returns exactly the rows whose timestamps lie in the range')
    eq(rows.map((r) => r.id), ids.slice(0, 3), 'the range holds the three rows made before the pause')
  })

  // Back to strings for the Number checks.
  pg.types.setTypeParser(20, (s) => s)
  await client.query('DROP TABLE orders')
  const strings = await twoHundred(client)
  const numbers = strings.map(Number)
  ok(strings.every((s) => BigInt(s) > BigInt(Number.MAX_SAFE_INTEGER)),
    'default layout: every ID is above Number.MAX_SAFE_INTEGER (2^53 - 1)')
  const wrong = strings.find((s) => BigInt(Number(s)) !== BigInt(s))
  ok(wrong !== undefined, 'default layout: Number(id) rounds a real ID',
    'no ID was rounded')
  if (wrong !== undefined) {
    console.log(`#   Number('${wrong}') = ${Number(wrong)}, BigInt('${wrong}') = ${BigInt(wrong)}`)
  }
  ok(new Set(numbers).size < new Set(strings).size,
    'default layout: Number() maps distinct IDs to one value',
    `${new Set(strings).size} IDs, ${new Set(numbers).size} Numbers`)
  ok(strings.some((s) => String(JSON.parse(`{"id": ${s}}`).id) !== s),
    'default layout: an ID as a bare JSON number does not survive JSON.parse()')
  await client.end()
}

async function jsSafeLayout() {
  const client = new pg.Client({ port: Number(process.env.SNOWFLAKE_JS_SAFE_PORT), database: 'node' })
  await client.connect()
  const layout = (await client.query(LAYOUT_SQL)).rows[0]
  eq(layout.node_bits + layout.worker_bits + layout.sequence_bits, 12,
    'JavaScript-safe layout: 12 bits below the timestamp')
  const strings = await twoHundred(client)
  ok(strings.every((s) => BigInt(s) < 2n ** 53n), 'JavaScript-safe layout: every ID is below 2^53')
  ok(strings.every((s) => Number.isSafeInteger(Number(s))), 'JavaScript-safe layout: Number(id) is a safe integer')
  ok(strings.every((s) => BigInt(Number(s)) === BigInt(s) && String(Number(s)) === s),
    'JavaScript-safe layout: Number(id) is exact')
  ok(strings.every((s) => String(JSON.parse(`{"id": ${s}}`).id) === s),
    'JavaScript-safe layout: an ID as a bare JSON number survives JSON.parse()')
  eq(new Set(strings.map(Number)).size, 200, 'JavaScript-safe layout: 200 IDs, 200 distinct Numbers')
  const server = await serverDecode(client, strings)
  eq(server, strings.map((s) => decode(BigInt(s), layout)),
    "JavaScript-safe layout: snowflake_decode() equals the client's decoding")
  // Plain Number arithmetic decodes it too: the timestamp is Math.floor(id / 2^12).
  const shift = 2 ** 12
  eq(strings.map((s) => Math.floor(Number(s) / shift) + Number(layout.epoch_ms)), server.map((d) => d.ms),
    'JavaScript-safe layout: Number arithmetic gives the exact timestamps')
  await client.end()
}

// Worker-id leases, in database "postgres" (any database with the
// extension; snowflake.lease_workers = 4): the recipe of
// docs/leases.md, with a generator just large enough to test it.
async function leases() {
  const os = require('os')
  const client = new pg.Client({ database: 'postgres' })
  await client.connect()
  const layout = (await client.query(LAYOUT_SQL)).rows[0]
  // docs: node-lease
  const { rows: [l] } = await client.query(
    `SELECT worker_id, node_id, token::text,
            (extract(epoch FROM not_before) * 1000)::bigint::text AS not_before,
            (extract(epoch FROM not_after) * 1000)::bigint::text AS not_after
       FROM snowflake_lease_worker($1, '30 seconds', $2)`,
    [`${os.hostname()}:${process.pid}`, new Date()])
  // end docs
  ok(l.worker_id >= 124 && l.worker_id <= 127, `a worker id of the lease space (${l.worker_id})`)
  // IDs strictly between not_before and not_after, one per millisecond.
  const shifts = { node: BigInt(layout.worker_bits + layout.sequence_bits), worker: BigInt(layout.sequence_bits) }
  const gen = {
    last: null,
    stopped: false,
    notAfter: BigInt(l.not_after),
    next() {
      let ms = BigInt(Date.now())
      while (ms <= BigInt(l.not_before) || (this.last !== null && ms <= this.lastMs)) ms = BigInt(Date.now())
      if (ms >= this.notAfter || this.stopped) throw new Error('outside the lease')
      this.lastMs = ms
      this.last = ((ms - BigInt(layout.epoch_ms)) << (shifts.node + BigInt(layout.node_bits))) |
        (BigInt(l.node_id) << shifts.node) | (BigInt(l.worker_id) << shifts.worker)
      return this.last
    },
    lastId() { return this.last },
    stop() { this.stopped = true },
  }
  const id = gen.next()
  const idMs = gen.lastMs
  gen.next()
  const d = (await client.query(
    `SELECT node_id, worker_id, (extract(epoch FROM ts) * 1000)::bigint::text AS ms
       FROM snowflake_decode($1)`, [id.toString()])).rows[0]
  eq([d.node_id, d.worker_id, BigInt(d.ms)], [l.node_id, l.worker_id, idMs],
    "snowflake_decode() gives the lease's node and worker id and the ID's millisecond")
  ok(BigInt(d.ms) > BigInt(l.not_before) && BigInt(d.ms) < gen.notAfter, 'the ID lies in the lease\'s window')
  const before = gen.notAfter
  await new Promise((resolve) => setTimeout(resolve, 5))
  const renew = async () => {
    // docs: node-renew
    try {
      const { rows: [r] } = await client.query(
        `SELECT (extract(epoch FROM not_after) * 1000)::bigint::text AS not_after
           FROM snowflake_renew_lease($1, $2, $3)`, [l.token, gen.lastId().toString(), new Date()])
      gen.notAfter = BigInt(r.not_after)
    } catch (e) {
      if (e.code === '55000') gen.stop()    // lost: stop for good
      else throw e
    }
    // end docs
  }
  await renew()
  ok(gen.notAfter > before && !gen.stopped, 'a renewal moves not_after')
  // docs: node-release
  await client.query('SELECT snowflake_release_lease($1, $2)', [l.token, gen.lastId().toString()])
  // end docs
  eq((await client.query('SELECT state, (extract(epoch FROM last_timestamp) * 1000)::bigint::text AS ms' +
    ' FROM snowflake_leases WHERE token = $1', [l.token])).rows[0], { state: 'released', ms: gen.lastMs.toString() },
  'the release records the last ID\'s millisecond')
  await renew()
  ok(gen.stopped, 'a renewal of a released lease fails with 55000, and the generator stops')
  await client.end()
}

// A key of type snowflake (in database "node"): stored and sent as a
// bigint, but its OID is one pg-types has no parser for.  Runs last: the
// adapter it shows sets a parser for every client of this process.
async function snowflakeType() {
  const client = new pg.Client()
  await client.connect()
  try {
    await snowflakeTypeChecks(client)
  } finally {
    await client.end()
  }
}

async function snowflakeTypeChecks(client) {
  await client.query('CREATE TABLE tickets (id snowflake PRIMARY KEY DEFAULT snowflake_nextval(), item text NOT NULL)')
  const idText = (await client.query("INSERT INTO tickets (item) VALUES ('tea') RETURNING id::text AS t")).rows[0].t
  ok(BigInt(idText) > 2n ** 53n, `the snowflake key is above 2^53 (${idText})`)
  let r = await client.query('SELECT id FROM tickets')
  eq([typeof r.rows[0].id, r.rows[0].id], ['string', idText], 'snowflake, text mode: a string, the decimal ID')
  for (const param of [idText, BigInt(idText)]) {
    r = await client.query('SELECT item FROM tickets WHERE id = $1', [param])
    eq(r.rows, [{ item: 'tea' }], `snowflake, text mode: a ${typeof param} parameter finds the row`)
  }
  r = await client.query('SELECT to_json(t) AS doc, row_to_json(t) AS row FROM tickets t')
  eq(r.rows[0], { doc: { id: idText, item: 'tea' }, row: { id: idText, item: 'tea' } },
    'snowflake: to_json() and row_to_json() arrive as objects whose id is the exact string')

  // binary: true (it applies to queries with parameters): pg 8 decodes
  // every field as UTF-8 text before any parser runs, so each byte that is
  // not valid UTF-8 is replaced (brianc/node-postgres#3495).
  const bytes = Buffer.alloc(8)
  bytes.writeBigInt64BE(BigInt(idText))
  r = await client.query({ text: 'SELECT id FROM tickets WHERE id = $1', values: [idText], binary: true })
  eq([typeof r.rows[0].id, r.rows[0].id], ['string', bytes.toString('utf8')],
    "snowflake, binary: true: a string, int8's 8 bytes decoded as UTF-8, not the ID")
  r = await client.query({ text: 'SELECT $1::bigint AS b', values: ['252117412827103232'], binary: true })
  eq(r.rows[0].b, '252183710952320959', 'bigint, binary: true: 252117412827103232 arrives as 252183710952320959')

  // docs: node-snowflake-parser
  const { rows: [{ oid }] } = await client.query("SELECT 'snowflake'::regtype::oid AS oid")
  pg.types.setTypeParser(oid, BigInt)   // snowflake columns arrive as BigInt
  // end docs
  r = await client.query("INSERT INTO tickets (item) VALUES ('cake') RETURNING id, id::text AS t")
  eq([typeof r.rows[0].id, r.rows[0].id], ['bigint', BigInt(r.rows[0].t)],
    'snowflake, text mode, setTypeParser(oid, BigInt): RETURNING id gives the exact BigInt')
  const cake = r.rows[0].id
  r = await client.query('SELECT id, item FROM tickets ORDER BY id')
  eq(r.rows, [{ id: BigInt(idText), item: 'tea' }, { id: cake, item: 'cake' }],
    'snowflake, text mode, setTypeParser(oid, BigInt): the IDs arrive as exact BigInts')
  r = await client.query('SELECT item FROM tickets WHERE id = $1', [cake])
  eq(r.rows, [{ item: 'cake' }], 'snowflake, text mode, setTypeParser(oid, BigInt): the BigInt finds its row')
}

async function main() {
  ok(require('pg/package.json').version === require('./package.json').dependencies.pg,
    `pg ${require('pg/package.json').version}, the pinned version`)
  await step('default layout', defaultLayout)
  await step('JavaScript-safe layout', jsSafeLayout)
  await step('worker-id leases', leases)
  await step('the snowflake type', snowflakeType)
  console.log(`node: ${passed} passed, ${failed} failed`)
  process.exitCode = failed === 0 && passed > 0 ? 0 : 1
}

main()
