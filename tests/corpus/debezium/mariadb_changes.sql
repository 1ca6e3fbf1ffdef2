-- tests/corpus/debezium: the MariaDB changes, run once Debezium streams
-- (autocommit: each statement its own transaction)
SET time_zone = '+00:00';
-- c: inserts
INSERT INTO all_types VALUES
 (10, 127, 32767, 8388607, 2147483647, 9223372036854775807,
  18446744073709551615, 999999999.999, 3.4e38, 1.7976931348623157e308, b'1',
  true, 'ab', 'twenty chars exactly', 'line1\nline2\ttab', x'deadbeef',
  x'ffffffffffffffffffffffffffffffff', '9999-12-31', '838:59:59',
  '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07.999999', 2155,
  '{"nested": {"x": [1.5, "y"]}}', 'ok', 'a,b,c');
INSERT INTO all_types (id, c_bigint_u, c_text) VALUES (11, 9223372036854775808, NULL);
-- u: an ordinary update
UPDATE all_types SET c_text = 'changed', c_int = c_int + 1, c_decimal = 0.5 WHERE id = 1;
-- a primary key change: Debezium emits d (old key) + tombstone + c (new key)
UPDATE all_types SET id = 20 WHERE id = 10;
-- d: a delete (a tombstone follows in Kafka)
DELETE FROM all_types WHERE id = 2;
-- t: truncate
TRUNCATE TABLE all_types;
-- and one insert after it
INSERT INTO all_types (id, c_text) VALUES (30, 'after truncate');
