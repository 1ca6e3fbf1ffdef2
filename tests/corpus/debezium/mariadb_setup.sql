-- tests/corpus/debezium: the MariaDB table, made before Debezium starts (its
-- rows here are the snapshot: op "r").  Run in a fresh database (dbzmy).
CREATE TABLE all_types (
    id            int PRIMARY KEY,
    c_tinyint     tinyint,
    c_smallint    smallint,
    c_mediumint   mediumint,
    c_int         int,
    c_bigint      bigint,
    c_bigint_u    bigint unsigned,
    c_decimal     decimal(12,3),
    c_float       float,
    c_double      double,
    c_bit         bit(1),
    c_boolean     boolean,
    c_char        char(3),
    c_varchar     varchar(20),
    c_text        text,
    c_blob        blob,
    c_varbinary   varbinary(16),
    c_date        date,
    c_time        time,
    c_datetime    datetime(6),
    c_timestamp   timestamp(6) NULL DEFAULT NULL,
    c_year        year,
    c_json        json,
    c_enum        enum('sad', 'ok', 'happy'),
    c_set         set('a', 'b', 'c')
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
SET time_zone = '+00:00';
INSERT INTO all_types VALUES
 (1, 1, 100, 1000, 100000, 10000000000, 10000000000, 12345.678, 1.5, 2.25,
  b'1', true, 'abc', 'varchar', 'hello', x'000102ff', x'cafe', '2024-02-29',
  '13:14:15', '2024-02-29 13:14:15.123456', '2024-02-29 13:14:15.123456',
  2024, '{"a": 1, "b": [true, null]}', 'happy', 'a,c'),
 (2, -128, -32768, -8388608, -2147483648, -9223372036854775808, 0,
  -999999999.999, -3.4e38, -1.7976931348623157e308, b'0', false, 'x', '',
  'ünïcødé ☃ "quoted" \\ back', x'', x'', '1000-01-01', '-838:59:59',
  '1000-01-01 00:00:00', '1970-01-01 00:00:01', 1901, '[]', 'sad', ''),
 (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
