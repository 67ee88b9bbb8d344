// A key of type snowflake read by pgx v4 (Debian's), in the database that
// PGDATABASE names: stored and sent as a bigint, but its OID is one pgx does
// not know.  pgx asks the server for text for a type it does not know and
// for binary for one it knows; QueryResultFormats forces binary and
// QuerySimpleProtocol forces text.  Then the adapter of docs/clients.md: an
// AfterConnect that registers int8's pgtype.Int8 for the type's OID.  Part
// of the "go" client of test/clients/run.sh, built with lease_test_main.go.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/jackc/pgtype"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

func snowflakeType() error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, "")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `CREATE TABLE tickets (id snowflake PRIMARY KEY DEFAULT snowflake_nextval(), item text NOT NULL)`)
	if err != nil {
		return err
	}
	var idText string
	var oid uint32
	err = conn.QueryRow(ctx, `INSERT INTO tickets (item) VALUES ('tea') RETURNING id::text, 'snowflake'::regtype::oid`).Scan(&idText, &oid)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(idText, 10, 64)
	check(err == nil && id > 1<<53, "the snowflake key is above 2^53 ("+idText+")", err)
	binaryResults := pgx.QueryResultFormats{pgx.BinaryFormatCode}

	// No adapter: an int64 cannot be scanned from it, in either format.
	var n int64
	err = conn.QueryRow(ctx, `SELECT id FROM tickets`).Scan(&n)
	check(err != nil && err.Error() == fmt.Sprintf("can't scan into dest[0]: unknown oid %d cannot be scanned into *int64", oid),
		"snowflake, text (pgx's default), no adapter: Scan(&int64) fails with unknown oid", err)
	err = conn.QueryRow(ctx, `SELECT id FROM tickets`, binaryResults).Scan(&n)
	check(err != nil && err.Error() == fmt.Sprintf("can't scan into dest[0]: unknown oid %d cannot be scanned into *int64", oid),
		"snowflake, binary, no adapter: Scan(&int64) fails with unknown oid", err)
	// A string in text, the raw bytes in binary.
	var s string
	err = conn.QueryRow(ctx, `SELECT id FROM tickets WHERE id = $1`, id).Scan(&s)
	check(err == nil && s == idText, "snowflake, text, no adapter: an int64 parameter finds the row; Scan(&string) gives the decimal ID", err, " ", s)
	var v []interface{}
	var format int16
	v, format, err = values(ctx, conn, `SELECT id FROM tickets`)
	check(err == nil && format == pgx.TextFormatCode && len(v) == 1 && v[0] == idText,
		"snowflake, no adapter: pgx asks for text by default; Values() gives a string, the decimal ID", err, fmt.Sprintf(" format %d %#v", format, v))
	want := make([]byte, 8)
	binary.BigEndian.PutUint64(want, uint64(id))
	v, _, err = values(ctx, conn, `SELECT id FROM tickets`, binaryResults)
	raw, isBytes := interface{}(nil), false
	if len(v) == 1 {
		raw = v[0]
		_, isBytes = raw.([]byte)
	}
	check(err == nil && isBytes && bytes.Equal(raw.([]byte), want),
		"snowflake, binary, no adapter: Values() gives []byte, the 8 big-endian bytes of int8", err, fmt.Sprintf(" %#v", v))

	// JSON made by the server: the ID is a JSON string.
	var doc, row map[string]interface{}
	err = conn.QueryRow(ctx, `SELECT to_json(t), row_to_json(t) FROM tickets t`).Scan(&doc, &row)
	check(err == nil && doc["id"] == idText && row["id"] == idText && doc["item"] == "tea",
		"snowflake: to_json() and row_to_json() scan into maps whose id is the exact string", err, fmt.Sprintf(" %#v %#v", doc, row))

	// The adapter: int8's type for the snowflake OID, on every connection of a pool.
	config, err := pgxpool.ParseConfig("")
	if err != nil {
		return err
	}
	// docs: go-snowflake-type
	config.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		var oid uint32
		err := conn.QueryRow(ctx, "SELECT 'snowflake'::regtype::oid").Scan(&oid)
		conn.ConnInfo().RegisterDataType(pgtype.DataType{Value: &pgtype.Int8{}, Name: "snowflake", OID: oid})
		return err
	}
	// end docs
	pool, err := pgxpool.ConnectConfig(ctx, config)
	if err != nil {
		return err
	}
	defer pool.Close()
	c, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	_, format, err = values(ctx, c.Conn(), `SELECT id FROM tickets`)
	c.Release()
	check(err == nil && format == pgx.BinaryFormatCode, "snowflake, int8's type: pgx asks for binary by default", err, " format ", format)
	for _, mode := range []struct {
		name string
		opts []interface{}
	}{{"binary (the default)", nil}, {"text (QuerySimpleProtocol)", []interface{}{pgx.QuerySimpleProtocol(true)}}} {
		var got int64
		var item string
		err = pool.QueryRow(ctx, `SELECT id, item FROM tickets WHERE id = $1`, append(mode.opts, id)...).Scan(&got, &item)
		check(err == nil && got == id && item == "tea",
			"snowflake, "+mode.name+", int8's type: an int64 parameter finds the row; Scan(&int64) gives the exact ID", err, " ", got)
		var ret interface{}
		var retText string
		err = pool.QueryRow(ctx, `INSERT INTO tickets (item) VALUES ('cake') RETURNING id, id::text`, mode.opts...).Scan(&ret, &retText)
		check(err == nil && fmt.Sprintf("%T", ret) == "int64" && strconv.FormatInt(ret.(int64), 10) == retText,
			"snowflake, "+mode.name+", int8's type: RETURNING id scans into interface{} as the exact int64", err, fmt.Sprintf(" %#v %s", ret, retText))
		if _, err = pool.Exec(ctx, `DELETE FROM tickets WHERE item = 'cake'`); err != nil {
			return err
		}
	}
	return nil
}

// values runs a query of one row and returns rows.Values() of it and the
// format of its first column.
func values(ctx context.Context, conn *pgx.Conn, sql string, args ...interface{}) ([]interface{}, int16, error) {
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, 0, fmt.Errorf("no row: %v", rows.Err())
	}
	v, err := rows.Values()
	return v, rows.FieldDescriptions()[0].Format, err
}
