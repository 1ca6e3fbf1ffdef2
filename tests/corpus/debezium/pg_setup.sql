-- tests/corpus/debezium: the PostgreSQL table, made before Debezium starts
-- (its rows here are the snapshot: op "r").  Run in a fresh database.
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE all_types (
    id          integer PRIMARY KEY,
    c_smallint  smallint,
    c_integer   integer,
    c_bigint    bigint,
    c_numeric   numeric(12,3),
    c_numeric_v numeric,
    c_real      real,
    c_double    double precision,
    c_boolean   boolean,
    c_text      text,
    c_varchar   varchar(20),
    c_char      char(3),
    c_bytea     bytea,
    c_date      date,
    c_time      time,
    c_timetz    timetz,
    c_timestamp timestamp,
    c_timestamptz timestamptz,
    c_json      json,
    c_jsonb     jsonb,
    c_uuid      uuid,
    c_enum      mood,
    c_interval  interval,
    c_int_array integer[],
    c_big_text  text            -- TOASTed (big, incompressible) in row 3
);
-- default replica identity (the primary key): an update that leaves a
-- TOASTed column unchanged does not log it, Debezium then writes
-- "__debezium_unavailable_value" in its place
INSERT INTO all_types VALUES
 (1, 1, 100, 10000000000, 12345.678, 3.14159265358979323846, 1.5, 2.25, true,
  'hello', 'varchar', 'abc', '\x000102ff', '2024-02-29', '13:14:15.123456',
  '13:14:15.5+02', '2024-02-29 13:14:15.123456', '2024-02-29 13:14:15.123456+00',
  '{"a": 1, "b": [true, null]}', '{"b": [true, null], "a": 1}',
  'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'happy', '1 year 2 mons 3 days 04:05:06.789',
  '{1,2,3}', 'short'),
 (2, -32768, -2147483648, -9223372036854775808, -999999999.999, -0.000001,
  -3.4e38, -1.7976931348623157e308, false, 'ünïcødé ☃ "quoted" \ back', '',
  'x', '\x', '0001-01-01', '00:00:00', '00:00:00+00', '1970-01-01 00:00:00',
  '1970-01-01 00:00:00+00', '[]', 'null', '00000000-0000-0000-0000-000000000000',
  'sad', '-1 days', '{}', ''),
 (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 100) g));
