-- tests/corpus/debezium: the PostgreSQL changes, run once Debezium streams
-- (each statement its own transaction)
-- c: inserts
INSERT INTO all_types VALUES
 (10, 32767, 2147483647, 9223372036854775807, 999999999.999, 1e-20, 3.4e38,
  1.7976931348623157e308, true, 'line1
line2	tab', 'twenty chars exactly', 'ab', '\xdeadbeef', '9999-12-31',
  '23:59:59.999999', '23:59:59.999999-11:30', '2038-01-19 03:14:08',
  '2262-04-11 23:47:16.854775+05:30', '{"nested": {"x": [1.5, "y"]}}',
  '{"k": "v"}', 'ffffffff-ffff-ffff-ffff-ffffffffffff', 'ok', '00:00:00.000001',
  '{-1,NULL,2147483647}', 'ten');
INSERT INTO all_types (id, c_numeric_v, c_real, c_double, c_text) VALUES
 (11, 'NaN', 'NaN', '-Infinity', NULL);
-- u: an ordinary update
UPDATE all_types SET c_text = 'changed', c_integer = c_integer + 1, c_numeric = 0.5
 WHERE id = 1;
-- u with a TOASTed column left alone: c_big_text of row 3 is not logged
UPDATE all_types SET c_smallint = 42 WHERE id = 3;
-- a primary key change: Debezium emits d (old key) + tombstone + c (new key)
UPDATE all_types SET id = 20 WHERE id = 10;
-- d: a delete (a tombstone follows in Kafka)
DELETE FROM all_types WHERE id = 2;
-- t: truncate
TRUNCATE all_types;
-- and one insert after it
INSERT INTO all_types (id, c_text) VALUES (30, 'after truncate');
