-- A UUID version 7 (RFC 9562) made in plain SQL, the way users of
-- PostgreSQL 15 (which has no uuidv7()) write it.  No extension needed.
--
--   bytes 0-5   Unix time in milliseconds, big-endian (48 bits)
--   byte  6     high nibble: version, 0111 = 7; low nibble: random
--   byte  7     random (with byte 6's low nibble: rand_a, 12 bits)
--   byte  8     top two bits: variant 10; rest random
--   bytes 9-15  random (with byte 8's rest: rand_b, 62 bits)
--
-- gen_random_uuid() (v4) already has random bits everywhere except the
-- version nibble (0100) and the variant (10), so it is the random source:
-- its first 6 bytes are replaced by the time, and bits 52 and 53 (set_bit
-- numbers bits from the least significant of each byte) turn version 0100
-- into 0111.  Order: by millisecond; within one millisecond, random.
CREATE FUNCTION bench_uuidv7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$
	SELECT encode(
		overlay(set_bit(set_bit(uuid_send(gen_random_uuid()), 52, 1), 53, 1)
			PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::int8) FROM 3)
			FROM 1 FOR 6),
		'hex')::uuid
$$;
