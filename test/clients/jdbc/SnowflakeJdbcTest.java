import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.postgresql.util.PGobject;
import org.postgresql.util.PSQLException;

/**
 * JDBC (Debian's PostgreSQL driver) with snowflake IDs: rows keyed by the
 * column default, IDs from getGeneratedKeys(), exact reads as long,
 * decoding, one snowflake_nextval(n) batch and one time range; a key of
 * type snowflake, read in text and with binary transfer; and the
 * worker-id lease recipe of docs/leases.md, in database "postgres" (any
 * database with the extension leases).  Argument: the path of the server's Unix
 * socket; PGDATABASE and PGUSER name the database and the user
 * (test/clients/run.sh sets them).
 */
public class SnowflakeJdbcTest {
    private static int passed;
    private static int failed;

    private static boolean ok(boolean cond, String what, Object detail) {
        int n = passed + failed + 1;
        if (cond) {
            passed++;
            System.out.println("ok " + n + " - " + what);
        } else {
            failed++;
            System.out.println("not ok " + n + " - " + what);
            if (detail != null) {
                System.out.println("#   " + detail);
            }
        }
        return cond;
    }

    private static boolean ok(boolean cond, String what) {
        return ok(cond, what, null);
    }

    private static boolean eq(Object got, Object want, String what) {
        return ok(Objects.equals(got, want), what, "got " + got + ", want " + want);
    }

    private static boolean increasing(List<Long> ids, String what) {
        for (int i = 1; i < ids.size(); i++) {
            if (ids.get(i - 1) >= ids.get(i)) {
                return ok(false, what, ids.get(i - 1) + " >= " + ids.get(i));
            }
        }
        return ok(true, what);
    }

    private interface Step {
        void run() throws Exception;
    }

    /** A step that throws counts as one failure, and the test goes on. */
    private static void step(String name, Step s) {
        try {
            s.run();
        } catch (Exception e) {
            failed++;
            System.out.println("not ok " + (passed + failed) + " - " + name + " threw " + e);
            e.printStackTrace(System.out);
        }
    }

    /** The first column of the one row of sql with the parameters args. */
    private static <T> T queryOne(Connection conn, Class<T> type, String sql, Object... args) throws Exception {
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getObject(1, type);
            }
        }
    }

    private static OffsetDateTime timestampOf(Connection conn, long id) throws Exception {
        return queryOne(conn, OffsetDateTime.class, "SELECT snowflake_timestamp(?)", id);
    }

    /** snowflake_decode(id) on the server: ms since 1970, node_id, worker_id, seq. */
    private static List<Long> serverDecode(Connection conn, long id) throws Exception {
        try (PreparedStatement ps = conn.prepareStatement("SELECT (extract(epoch FROM ts) * 1000)::bigint, "
                + "node_id, worker_id, seq FROM snowflake_decode(?)")) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return List.of(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4));
            }
        }
    }

    private static long clockMillis(Connection conn) throws Exception {
        return queryOne(conn, OffsetDateTime.class, "SELECT clock_timestamp()").toInstant().toEpochMilli();
    }

    /** The layout from snowflake_status(), and decoding with it here. */
    private static final class Layout {
        long epochMs;
        int nodeBits;
        int workerBits;
        int sequenceBits;
        int nodeId;
        int maxDriftMs;

        static Layout of(Connection conn) throws SQLException {
            Layout layout = new Layout();
            try (Statement st = conn.createStatement();
                    ResultSet rs = st.executeQuery("SELECT epoch, node_bits, worker_bits, sequence_bits, "
                            + "node_id, max_drift_ms FROM snowflake_status()")) {
                rs.next();
                layout.epochMs = rs.getObject(1, OffsetDateTime.class).toInstant().toEpochMilli();
                layout.nodeBits = rs.getInt(2);
                layout.workerBits = rs.getInt(3);
                layout.sequenceBits = rs.getInt(4);
                layout.nodeId = rs.getInt(5);
                layout.maxDriftMs = rs.getInt(6);
            }
            return layout;
        }

        /** ms since 1970, node_id, worker_id, seq. */
        List<Long> decode(long id) {
            long seq = id & ((1L << sequenceBits) - 1);
            long worker = (id >>> sequenceBits) & ((1L << workerBits) - 1);
            long node = (id >>> (sequenceBits + workerBits)) & ((1L << nodeBits) - 1);
            long ms = epochMs + (id >>> (sequenceBits + workerBits + nodeBits));
            return List.of(ms, node, worker, seq);
        }
    }

    private static String url(String database, String socket) {
        return "jdbc:postgresql://localhost/" + database + "?user=" + System.getenv("PGUSER")
                + "&socketFactory=UnixSocketFactory&socketFactoryArg=" + socket
                + "&sslmode=disable&gssEncMode=disable";
    }

    public static void main(String[] args) throws Exception {
        try (Connection conn = DriverManager.getConnection(url(System.getenv("PGDATABASE"), args[0]))) {
            run(conn);
        }
        step("the snowflake type", () -> snowflakeType(args[0]));
        step("worker-id leases", () -> {
            try (Connection db = DriverManager.getConnection(url("postgres", args[0]))) {
                leases(db);
            }
        });
        System.out.println("jdbc: " + passed + " passed, " + failed + " failed");
        System.exit(failed == 0 && passed > 0 ? 0 : 1);
    }

    /**
     * A key of type snowflake: stored and sent as a bigint, but its OID is one
     * the driver does not know.  Read with the default settings, with binary
     * transfer from the first execution (prepareThreshold=-1, the driver then
     * asks binary for every type it knows), and with binary forced for the
     * type's OID (binaryTransferEnable).
     */
    private static void snowflakeType(String socket) throws Exception {
        String idText;
        long oid;
        try (Connection conn = DriverManager.getConnection(url(System.getenv("PGDATABASE"), socket));
                Statement st = conn.createStatement()) {
            st.execute("CREATE TABLE tickets (id snowflake PRIMARY KEY DEFAULT snowflake_nextval(), "
                    + "item text NOT NULL)");
            try (ResultSet rs = st.executeQuery(
                    "INSERT INTO tickets (item) VALUES ('tea') RETURNING id::text, 'snowflake'::regtype::oid")) {
                rs.next();
                idText = rs.getString(1);
                oid = rs.getLong(2);
            }
        }
        long id = Long.parseLong(idText);
        ok(id > (1L << 53), "the snowflake key is above 2^53 (" + idText + ")");
        for (String mode : new String[] {"text", "prepareThreshold=-1"}) {
            String extra = mode.equals("text") ? "" : "&" + mode;
            try (Connection conn = DriverManager.getConnection(url(System.getenv("PGDATABASE"), socket) + extra)) {
                long got;
                String gotText;
                Object obj;
                // docs: jdbc-snowflake-read
                try (PreparedStatement select = conn.prepareStatement(
                        "SELECT id, item FROM tickets WHERE id = ?")) {
                    select.setLong(1, id);                  // a long parameter finds the row
                    try (ResultSet rs = select.executeQuery()) {
                        rs.next();
                        got = rs.getLong("id");             // exact
                        gotText = rs.getString("id");       // the decimal text
                        obj = rs.getObject("id");           // a PGobject of type snowflake
                    }
                }
                // end docs
                eq(List.of(got, gotText), List.of(id, idText),
                        "snowflake, " + mode + ": a long parameter finds the row, getLong() and getString()"
                        + " give the exact ID");
                ok(obj instanceof PGobject && ((PGobject) obj).getType().equals("snowflake")
                        && ((PGobject) obj).getValue().equals(idText),
                        "snowflake, " + mode + ": getObject() is a PGobject of type snowflake holding the"
                        + " decimal text", obj.getClass() + " " + obj);
                try (PreparedStatement json = conn.prepareStatement(
                        "SELECT to_json(t), row_to_json(t) FROM tickets t WHERE id = ?")) {
                    json.setLong(1, id);
                    try (ResultSet rs = json.executeQuery()) {
                        rs.next();
                        String want = "{\"id\":\"" + idText + "\",\"item\":\"tea\"}";
                        eq(List.of(rs.getString(1), rs.getString(2)), List.of(want, want),
                                "snowflake, " + mode + ": to_json() and row_to_json() write the ID as a"
                                + " JSON string");
                    }
                }
            }
        }
        // Binary forced for the type's OID: the driver has no binary reader for it.
        try (Connection conn = DriverManager.getConnection(url(System.getenv("PGDATABASE"), socket)
                + "&prepareThreshold=-1&binaryTransferEnable=" + oid);
                PreparedStatement select = conn.prepareStatement("SELECT id FROM tickets WHERE id = ?")) {
            select.setLong(1, id);
            try (ResultSet rs = select.executeQuery()) {
                rs.next();
                eq(rs.getString(1), null, "snowflake, binaryTransferEnable=<its oid>: getString() gives null");
                try {
                    rs.getLong(1);
                    ok(false, "snowflake, binaryTransferEnable=<its oid>: getLong() throws");
                } catch (PSQLException e) {
                    eq(e.getMessage(), "Cannot convert the column of type <unknown:" + oid
                            + "> to requested type long.",
                            "snowflake, binaryTransferEnable=<its oid>: getLong() throws");
                }
            }
        }
    }

    /** Renews a lease: the new not_after, or -1 if the lease is lost. */
    private static long renew(Connection db, long token, long lastId) throws SQLException {
        // docs: jdbc-renew
        try (PreparedStatement renew = db.prepareStatement(
                "SELECT (extract(epoch FROM not_after) * 1000)::bigint FROM snowflake_renew_lease(?, ?, ?)")) {
            renew.setLong(1, token);
            renew.setLong(2, lastId);                      // the last ID issued
            renew.setObject(3, OffsetDateTime.now());      // the client's clock
            try (ResultSet r = renew.executeQuery()) {
                r.next();
                return r.getLong(1);                       // the new not_after
            }
        } catch (SQLException e) {
            if ("55000".equals(e.getSQLState())) {
                return -1;                                 // lost: stop generating for good
            }
            throw e;
        }
        // end docs
    }

    private static void leases(Connection db) throws Exception {
        Layout layout = Layout.of(db);
        String host = "jdbc-test";
        // docs: jdbc-lease
        PreparedStatement lease = db.prepareStatement(
                "SELECT worker_id, node_id, token, (extract(epoch FROM not_before) * 1000)::bigint,"
                + " (extract(epoch FROM not_after) * 1000)::bigint"
                + " FROM snowflake_lease_worker(?, NULL, ?)");   // NULL ttl: held while db is open
        lease.setString(1, host + ":" + ProcessHandle.current().pid());
        lease.setObject(2, OffsetDateTime.now());                // the client's clock
        ResultSet r = lease.executeQuery();
        r.next();
        int workerId = r.getInt(1);
        int nodeId = r.getInt(2);
        long token = r.getLong(3);
        long notBefore = r.getLong(4);                           // issue IDs strictly after this ms
        long notAfter = r.getLong(5);                            // and strictly before this one
        // end docs
        ok(workerId >= 124 && workerId <= 127, "a worker id of the lease space (" + workerId + ")");
        long ms = System.currentTimeMillis();
        while (ms <= notBefore) {
            ms = System.currentTimeMillis();
        }
        ok(ms < notAfter, "the clock lies inside the lease's window");
        long lastId = ((ms - layout.epochMs) << (layout.nodeBits + layout.workerBits + layout.sequenceBits))
                | ((long) nodeId << (layout.workerBits + layout.sequenceBits))
                | ((long) workerId << layout.sequenceBits);
        eq(serverDecode(db, lastId), List.of(ms, (long) nodeId, (long) workerId, 0L),
                "snowflake_decode() gives the lease's node and worker id and the ID's millisecond");
        Thread.sleep(5);
        long renewed = renew(db, token, lastId);
        ok(renewed > notAfter, "a renewal moves not_after");
        // docs: jdbc-release
        try (PreparedStatement release = db.prepareStatement("SELECT snowflake_release_lease(?, ?)")) {
            release.setLong(1, token);
            release.setLong(2, lastId);                          // the last ID issued
            release.executeQuery();
        }
        // end docs
        eq(queryOne(db, Long.class, "SELECT (extract(epoch FROM last_timestamp) * 1000)::bigint"
                + " FROM snowflake_leases WHERE token = ? AND state = 'released'", token), ms,
                "the release records the last ID's millisecond");
        eq(renew(db, token, lastId), -1L, "a renewal of a released lease fails with 55000");
    }

    private static void run(Connection conn) throws Exception {
        ok(conn.getMetaData().getDriverMajorVersion() == 42,
                "PostgreSQL JDBC driver " + conn.getMetaData().getDriverVersion());
        Statement st = conn.createStatement();
        st.execute("CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), "
                + "item text NOT NULL)");
        Layout layout = Layout.of(conn);
        long since = clockMillis(conn);

        List<Long> ids = new ArrayList<>();
        for (String item : new String[] {"tea", "cake", "scone"}) {
            // docs: jdbc-insert
            try (PreparedStatement insert = conn.prepareStatement(
                    "INSERT INTO orders (item) VALUES (?)", new String[] {"id"})) {
                insert.setString(1, item);
                insert.executeUpdate();
                try (ResultSet keys = insert.getGeneratedKeys()) {
                    keys.next();
                    ids.add(keys.getLong("id"));    // a long holds every ID exactly
                }
            }
            // end docs
        }
        Thread.sleep(20);   // so that the time range below can split the rows
        // A JDBC batch returns its keys too.
        try (PreparedStatement insert = conn.prepareStatement(
                "INSERT INTO orders (item) VALUES (?)", new String[] {"id"})) {
            for (int i = 0; i < 20; i++) {
                insert.setString(1, "bulk " + i);
                insert.addBatch();
            }
            insert.executeBatch();
            try (ResultSet keys = insert.getGeneratedKeys()) {
                while (keys.next()) {
                    ids.add(keys.getLong(1));
                }
            }
        }
        long until = clockMillis(conn);
        long worker = queryOne(conn, Long.class,
                "SELECT worker_id::bigint FROM snowflake_workers WHERE pid = pg_backend_pid()");

        eq(ids.size(), 23, "getGeneratedKeys() gave 23 IDs");
        increasing(ids, "IDs strictly increase in insertion order (one session)");

        List<Long> readBack = new ArrayList<>();
        boolean exact = true;
        try (ResultSet rs = st.executeQuery("SELECT id, id::text AS id_text FROM orders ORDER BY id")) {
            while (rs.next()) {
                readBack.add(rs.getLong(1));
                exact &= rs.getLong(1) == Long.parseLong(rs.getString(2));
            }
        }
        eq(readBack, ids, "the IDs read back equal the generated keys");
        ok(exact, "each ID equals its id::text");

        List<List<Long>> server = new ArrayList<>();
        List<List<Long>> client = new ArrayList<>();
        for (long id : ids) {
            server.add(serverDecode(conn, id));
            client.add(layout.decode(id));
        }
        eq(server, client, "snowflake_decode() on the server equals the client's decoding");
        ok(server.stream().allMatch(d -> d.get(1) == layout.nodeId),
                "every node_id is this server's (" + layout.nodeId + ")");
        ok(server.stream().allMatch(d -> d.get(2) == worker),
                "every worker_id is the session's slot (" + worker + ")");
        ok(server.stream().allMatch(d -> d.get(0) >= since && d.get(0) <= until + layout.maxDriftMs),
                "every timestamp lies between the clock before the inserts and the clock after "
                + "them plus max_drift");

        step("batch: snowflake_nextval(n)", () -> {
            // docs: jdbc-batch
            List<Long> batch = new ArrayList<>();
            try (PreparedStatement next = conn.prepareStatement(
                    "SELECT id FROM snowflake_nextval(?) AS id")) {
                next.setInt(1, 100);
                try (ResultSet rs = next.executeQuery()) {
                    while (rs.next()) {
                        batch.add(rs.getLong(1));
                    }
                }
            }
            // end docs
            eq(batch.size(), 100, "the batch has 100 IDs");
            increasing(batch, "the batch strictly increases");
            ok(batch.get(0) > ids.get(ids.size() - 1), "the batch follows the session's earlier IDs");
            try (PreparedStatement insert = conn.prepareStatement(
                    "INSERT INTO orders (id, item) VALUES (?, ?)")) {
                for (long id : batch) {
                    insert.setLong(1, id);
                    insert.setString(2, "preassigned");
                    insert.addBatch();
                }
                insert.executeBatch();
            }
            eq(queryOne(conn, Long.class, "SELECT count(*) FROM orders WHERE id >= ?", batch.get(0)), 100L,
                    "the preassigned IDs were inserted");
        });

        step("time bounds", () -> {
            long probe = ids.get(ids.size() / 2);
            OffsetDateTime ts = timestampOf(conn, probe);
            long lo;
            long hi;
            try (PreparedStatement ps = conn.prepareStatement(
                    "SELECT snowflake_min_id(?), snowflake_max_id(?)")) {
                ps.setObject(1, ts);
                ps.setObject(2, ts);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    lo = rs.getLong(1);
                    hi = rs.getLong(2);
                }
            }
            ok(lo <= probe && probe <= hi, "snowflake_min_id(ts) <= id <= snowflake_max_id(ts)",
                    lo + " <= " + probe + " <= " + hi);
            OffsetDateTime start = timestampOf(conn, ids.get(0));
            OffsetDateTime end = timestampOf(conn, ids.get(2));
            List<Long> got = new ArrayList<>();
            // docs: jdbc-range
            try (PreparedStatement range = conn.prepareStatement("SELECT id FROM orders"
                    + " WHERE id >= snowflake_min_id(?) AND id <= snowflake_max_id(?) ORDER BY id")) {
                range.setObject(1, start);      // java.time.OffsetDateTime
                range.setObject(2, end);
                try (ResultSet rs = range.executeQuery()) {
                    while (rs.next()) {
                        got.add(rs.getLong(1));
                    }
                }
            }
            // end docs
            List<Long> want = new ArrayList<>();
            try (ResultSet rs = st.executeQuery("SELECT id FROM orders ORDER BY id")) {
                while (rs.next()) {
                    long ms = layout.decode(rs.getLong(1)).get(0);
                    if (ms >= start.toInstant().toEpochMilli() && ms <= end.toInstant().toEpochMilli()) {
                        want.add(rs.getLong(1));
                    }
                }
            }
            eq(got, want, "the range query returns exactly the rows whose timestamps lie in the range");
            eq(got, ids.subList(0, 3), "the range holds the three rows made before the pause");
        });
    }
}
