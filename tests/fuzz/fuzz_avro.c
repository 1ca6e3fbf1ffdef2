/*
 * fuzz_avro.c — fuzz target for the Avro decoder (common/avro_connect.h),
 * which reads message bytes from Kafka and schema text from a registry.
 *
 * Input: byte 0 picks the mode (its value mod 4):
 *   0  the rest is a datum of a Debezium-like envelope schema (every
 *      Debezium and Avro logical type, [T, null] unions, connect.default);
 *   1  the rest is a datum of a schema with arrays, maps, enums, fixed
 *      (of size 0 too), sized blocks and unions other than [null, T];
 *   2, 3  bytes 1-2 (little-endian) are a length L, the next L bytes a
 *      schema text, the rest a datum of it.
 * Beyond "no crash, no leak, no read outside the input" it checks:
 *   - a schema is refused with "avro schema: ...", never with "avro-c reads
 *     it differently" (its reading and avro-c's must agree);
 *   - a datum is refused with "avro: ...", or gives {"schema", "payload"}
 *     where the payload fits the schema (tests/fuzz/connect_shape.h), the
 *     schema is the parsed one's when it does not depend on the datum, and
 *     the result written as JSON text reads back equal (so every string is
 *     valid UTF-8 and every number is finite);
 *   - decoding the same datum twice gives equal results.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/avro/ (make them again with make_avro_seeds.py).  Must never be
 * linked into zx.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/avro_connect.h"
#include "tests/fuzz/connect_shape.h"
#include "tests/fuzz/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char debezium_schema[] =
    "{\"type\":\"record\",\"name\":\"Envelope\",\"namespace\":\"db.inv.t\",\"fields\":["
    "{\"name\":\"before\",\"type\":[\"null\",{\"type\":\"record\",\"name\":\"Value\",\"fields\":["
    "{\"name\":\"id\",\"type\":\"long\"},"
    "{\"name\":\"s\",\"type\":[\"null\",\"string\"]},"
    "{\"name\":\"i8\",\"type\":{\"type\":\"int\",\"connect.type\":\"int8\"}},"
    "{\"name\":\"i16\",\"type\":[\"null\",{\"type\":\"int\",\"connect.type\":\"int16\"}]},"
    "{\"name\":\"dec\",\"type\":[\"null\",{\"type\":\"bytes\",\"scale\":2,\"precision\":10,"
    "\"connect.version\":1,\"connect.parameters\":{\"scale\":\"2\",\"connect.decimal.precision\":"
    "\"10\"},\"connect.name\":\"org.apache.kafka.connect.data.Decimal\",\"logicalType\":"
    "\"decimal\"}]},"
    "{\"name\":\"vdec\",\"type\":[\"null\",{\"type\":\"record\",\"name\":\"VariableScaleDecimal\","
    "\"namespace\":\"io.debezium.data\",\"fields\":[{\"name\":\"scale\",\"type\":\"int\"},"
    "{\"name\":\"value\",\"type\":\"bytes\"}],\"connect.version\":1,\"connect.name\":"
    "\"io.debezium.data.VariableScaleDecimal\"}]},"
    "{\"name\":\"ts\",\"type\":[\"null\",{\"type\":\"long\",\"connect.version\":1,"
    "\"connect.name\":\"io.debezium.time.MicroTimestamp\"}]},"
    "{\"name\":\"zts\",\"type\":[\"null\",{\"type\":\"string\",\"connect.version\":1,"
    "\"connect.name\":\"io.debezium.time.ZonedTimestamp\"}]},"
    "{\"name\":\"js\",\"type\":[\"null\",{\"type\":\"string\",\"connect.name\":"
    "\"io.debezium.data.Json\"}]},"
    "{\"name\":\"en\",\"type\":[{\"type\":\"string\",\"connect.parameters\":{\"allowed\":"
    "\"a,b\"},\"connect.default\":\"a\",\"connect.name\":\"io.debezium.data.Enum\"},\"null\"]},"
    "{\"name\":\"f\",\"type\":[\"null\",\"float\"]},{\"name\":\"d\",\"type\":[\"null\",\"double\"]},"
    "{\"name\":\"b\",\"type\":[\"null\",\"boolean\"]},{\"name\":\"raw\",\"type\":\"bytes\"},"
    "{\"name\":\"date\",\"type\":{\"type\":\"int\",\"logicalType\":\"date\"}},"
    "{\"name\":\"tms\",\"type\":{\"type\":\"int\",\"logicalType\":\"time-millis\"}},"
    "{\"name\":\"tus\",\"type\":{\"type\":\"long\",\"logicalType\":\"time-micros\"}},"
    "{\"name\":\"tsms\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-millis\"}},"
    "{\"name\":\"tsus\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-micros\"}},"
    "{\"name\":\"u\",\"type\":{\"type\":\"string\",\"logicalType\":\"uuid\"}},"
    "{\"name\":\"fd\",\"type\":{\"type\":\"fixed\",\"name\":\"D8\",\"size\":8,\"logicalType\":"
    "\"decimal\",\"precision\":18,\"scale\":3}}"
    "],\"connect.name\":\"db.inv.t.Value\"}]},"
    "{\"name\":\"after\",\"type\":[\"null\",\"Value\"]},"
    "{\"name\":\"source\",\"type\":{\"type\":\"record\",\"name\":\"Source\",\"namespace\":"
    "\"io.debezium.connector.mysql\",\"fields\":[{\"name\":\"version\",\"type\":\"string\"},"
    "{\"name\":\"ts_ms\",\"type\":\"long\"},{\"name\":\"table\",\"type\":[\"null\",\"string\"]}]}},"
    "{\"name\":\"op\",\"type\":\"string\"},"
    "{\"name\":\"ts_ms\",\"type\":[\"null\",\"long\"]}"
    "],\"connect.version\":1,\"connect.name\":\"db.inv.t.Envelope\"}";

static const char mixed_schema[] =
    "{\"type\":\"record\",\"name\":\"M\",\"fields\":["
    "{\"name\":\"a\",\"type\":{\"type\":\"array\",\"items\":[\"null\",\"int\",\"string\"]}},"
    "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":{\"type\":\"array\",\"items\":"
    "\"long\"}}},"
    "{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"X\",\"Y\",\"Z\"]}},"
    "{\"name\":\"z\",\"type\":{\"type\":\"array\",\"items\":{\"type\":\"fixed\",\"name\":\"Z0\","
    "\"size\":0}}},"
    "{\"name\":\"u\",\"type\":[\"boolean\",\"double\",{\"type\":\"record\",\"name\":\"In\","
    "\"fields\":[{\"name\":\"v\",\"type\":\"float\"}]},\"E\"]},"
    "{\"name\":\"x\",\"type\":{\"type\":\"fixed\",\"name\":\"X3\",\"size\":3}}]}";

static zx_avro_schema *fixed_schemas[2];

static void check_schema_refusal(const char *err)
{
    fuzz_check(!strncmp(err, "avro schema: ", 13), "a schema refusal without its prefix");
    fuzz_check(strncmp(err, "avro schema: avro-c reads it differently", 40) != 0,
               "avro-c reads a schema differently");
}

static void check_datum(const zx_avro_schema *s, const uint8_t *d, size_t n)
{
    char err[512] = "";
    json_t *r = zx_avro_decode(s, d, n, err, sizeof(err));
    if (!r) {
        fuzz_check(!strncmp(err, "avro: ", 6) && err[6], "a datum refusal without a message");
        return;
    }
    json_t *sch = json_object_get(r, "schema"), *pay = json_object_get(r, "payload");
    fuzz_check(sch && pay && json_object_size(r) == 2, "a result that is not {schema, payload}");
    if (!zx_avro_schema_dynamic(s))
        fuzz_check(sch == zx_avro_schema_connect(s), "a static schema not shared");
    const char *why = connect_shape(sch, pay);
    if (why) {
        fprintf(stderr, "shape: %s\n", why);
        fuzz_check(0, "the payload does not fit its schema");
    }
    char *text = json_dumps(r, JSON_COMPACT);
    fuzz_check(text != NULL, "the result cannot be written as JSON");
    json_error_t je;
    json_t *back = json_loads(text, JSON_ALLOW_NUL, &je);
    fuzz_check(back && json_equal(back, r), "the result's JSON text does not read back equal");
    json_decref(back);
    free(text);
    char err2[512];
    json_t *again = zx_avro_decode(s, d, n, err2, sizeof(err2));
    fuzz_check(again && json_equal(again, r), "two decodings differ");
    json_decref(again);
    json_decref(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1 << 20))
        return 0;
    int mode = data[0] % 4;
    if (mode < 2) {
        if (!fixed_schemas[mode]) {
            const char *t = mode == 0 ? debezium_schema : mixed_schema;
            char err[512];
            fixed_schemas[mode] = zx_avro_schema_parse(t, strlen(t), err, sizeof(err));
            if (!fixed_schemas[mode])
                fprintf(stderr, "%s\n", err);
            fuzz_check(fixed_schemas[mode] != NULL, "a fixed schema does not parse");
        }
        check_datum(fixed_schemas[mode], data + 1, size - 1);
        return 0;
    }
    if (size < 3)
        return 0;
    size_t len = (size_t)data[1] | (size_t)data[2] << 8;
    if (len > size - 3)
        len = size - 3;
    char err[512] = "";
    zx_avro_schema *s = zx_avro_schema_parse((const char *)data + 3, len, err, sizeof(err));
    if (!s) {
        check_schema_refusal(err);
        return 0;
    }
    const json_t *cs = zx_avro_schema_connect(s);
    fuzz_check(json_is_object(cs), "a parsed schema without a Connect schema");
    check_datum(s, data + 3 + len, size - 3 - len);
    zx_avro_schema_free(s);
    return 0;
}
