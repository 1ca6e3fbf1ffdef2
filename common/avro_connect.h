/*
 * avro_connect.h — Avro writer schemas and binary datums, turned into the
 * JSON that Kafka Connect's JsonConverter writes with schemas.enable=true:
 *
 *     {"schema": S, "payload": P}
 *
 * so that Avro messages (Confluent's or Apicurio's wire format, see
 * schema_registry.h) go through the same Debezium decoder as JSON ones.
 *
 * Who reads what.  The schema text is parsed twice: by avro-c (Debian's
 * libavro, 1.11.1), which validates it as Avro, and by this module with
 * jansson, which keeps what avro-c drops: the properties Debezium's and
 * Confluent's AvroConverter write (connect.name, connect.version,
 * connect.doc, connect.parameters, connect.default, connect.type) and
 * logicalType.  The two readings are walked in parallel and must agree
 * (kinds, field names, symbols, fixed sizes, union branches), else the
 * schema is refused.  Datums are decoded by this module, not by avro-c:
 * avro-c 1.11.1 allocates a string or bytes length read from the datum
 * before checking it against the bytes left (a 5-byte message asks for
 * gigabytes), and loops over array counts likewise; here every length,
 * count and block size is checked against the bytes left first.
 *
 * Schema mapping (Avro -> Connect "type"):
 *   record -> struct ("fields" in order, each with "field"); int -> int32,
 *   or int8 / int16 when connect.type says so (values wrap to that width,
 *   as AvroConverter's byteValue()/shortValue() do); long -> int64;
 *   float -> float32; double -> float64; boolean; string; bytes and fixed
 *   -> bytes; enum -> string; array -> array ("items"); map -> map
 *   ("keys" string, "values").  A standalone null is refused (Connect has
 *   no null type), and so is a recursive type.
 *   Unions: [null, T] or [T, null] is T with "optional": true.  Any other
 *   union takes the type of the branch the datum holds (its schema S then
 *   depends on the datum); a null branch of such a union is the first
 *   non-null branch's type, optional.  An array or map whose items hold
 *   different branches of such a union in one datum is refused (Connect
 *   has one item type).  An empty array or map of such items, and S as
 *   zx_avro_schema_connect gives it, use the first non-null branch.
 *   (Confluent's AvroConverter makes such a union a struct named
 *   io.confluent.connect.avro.Union with one optional field per branch;
 *   Debezium never writes one, and the decoder wants plain values.)
 *   Names: a reference without a dot is looked up in the enclosing
 *   namespace only (as avro-c does: no fallback to the null namespace).
 * Keys after "optional", in JsonConverter's order:
 *   "name": connect.name; else the Connect name of the logicalType (below);
 *           else, for a record, its Avro full name.
 *   "version": connect.version (an integer).  "doc": connect.doc.
 *   "parameters": a map of strings: the decimal's scale and precision,
 *           an enum's "allowed" (its symbols joined by ","), then every
 *           string property whose name starts with "avro" (as
 *           AvroConverter does, e.g. avro.java.string), then
 *           connect.parameters (last wins).
 *   "default": connect.default when it is a value of the Connect type
 *           (number, boolean, string; bytes as Avro's ISO-8859-1 string),
 *           written as the payload would be.  Avro field defaults are not
 *           carried.
 * logicalType (its Connect name counts when there is no connect.name, as
 * from producers other than Debezium; a decimal's parameters always):
 *   decimal (bytes or fixed, precision >= 1, 0 <= scale <= precision)
 *     -> org.apache.kafka.connect.data.Decimal, parameters
 *        {"scale": "S", "connect.decimal.precision": "P"}
 *   date (int) -> org.apache.kafka.connect.data.Date
 *   time-millis (int) -> org.apache.kafka.connect.data.Time
 *   time-micros (long) -> io.debezium.time.MicroTime
 *   timestamp-millis (long) -> org.apache.kafka.connect.data.Timestamp
 *   timestamp-micros (long) -> io.debezium.time.MicroTimestamp
 *   uuid (string) -> io.debezium.data.Uuid
 *   Any other or ill-formed logicalType is ignored (as the Avro spec says).
 *
 * Payload P, as JsonConverter writes it: integers as JSON integers; float
 * and double as JSON reals (a float as the shortest decimal that reads back
 * as the same float, as Java's Float.toString, then as a double), NaN and
 * the infinities as the strings "NaN", "Infinity", "-Infinity" (Jackson's
 * default); strings as strings, where a byte sequence that is not UTF-8 is
 * replaced by U+FFFD, one per maximal ill-formed part (as Java's decoder
 * does); bytes and fixed as base64 (standard alphabet, padded); a Decimal
 * (the Connect name, whatever made it) as base64 of its unscaled value in
 * the fewest big-endian two's-complement bytes (Java's
 * BigInteger.toByteArray: redundant leading 0x00 / 0xFF dropped, empty as
 * zero); an enum as its symbol; a struct as an object with every field in
 * order; a map as an object (a repeated key: the last wins; a key with a
 * NUL byte is refused, so that every key is a C string); an optional null
 * as null.  String values may hold U+0000 (json_string_length has their
 * length).
 *
 * Limits on a datum: every string, bytes and fixed length, and every array
 * or map block count (times the least bytes an item takes) must fit in the
 * bytes left, checked before anything is allocated; a negative block count
 * (Avro's sized block) must be followed by a block size that fits and that
 * the items fill exactly; the datum must end exactly at its last byte.
 * Items that take no bytes at all (fixed of size 0) are limited by a
 * budget of values per datum (its length + 65536).  Varints: at most 10
 * bytes for a long, 5 for an int, and the value in range.  Nesting is
 * bounded by the schema (ZX_AVRO_MAX_DEPTH levels), and a schema whose
 * Connect schema would have more than ZX_AVRO_MAX_NODES objects (shared
 * named types are written out at each use) is refused.
 *
 * Errors are English phrases starting with "avro: " (a datum) or "avro
 * schema: " (a schema), with byte offsets into the datum, such as
 *     "avro: string length 4294967295 at byte 17 is beyond the 12 bytes left"
 *
 * Threads: a parsed schema is read-only; several threads may decode with it
 * at once (jansson's reference counts are atomic).  It must never: call
 * avro-c's datum reader, allocate from a length it has not checked, or
 * depend on the locale (the float text is written and read in the same
 * locale).
 */
#ifndef ZX_COMMON_AVRO_CONNECT_H
#define ZX_COMMON_AVRO_CONNECT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define ZX_AVRO_MAX_DEPTH      64          /* nesting levels of a schema */
#define ZX_AVRO_MAX_NODES      100000      /* objects in its Connect schema */
#define ZX_AVRO_SCHEMA_MAX     (4u << 20)  /* bytes of schema text */

typedef struct zx_avro_schema zx_avro_schema;

/* Parses the Avro writer schema in the len bytes at text (JSON, need not be
 * NUL-terminated).  Returns a new schema (free it with zx_avro_schema_free),
 * or NULL with a message in err (NUL-terminated, truncated to errlen; err
 * may be NULL) such as
 *     "avro schema: field \"after\" of dbserver1.inventory.customers.Envelope:
 *      unknown type \"Valu\""
 *     "avro schema: avro-c refuses it: Record type must have a \"name\""
 * Out of memory is NULL with "avro schema: out of memory". */
zx_avro_schema *zx_avro_schema_parse(const char *text, size_t len, char *err, size_t errlen);

/* Frees a schema; NULL is a no-op.  Results of zx_avro_decode stay valid
 * (they hold their own references). */
void zx_avro_schema_free(zx_avro_schema *s);

/* The Connect schema S of every datum of s (borrowed: valid until
 * zx_avro_schema_free; do not modify).  When s has a union other than
 * [null, T], S depends on the datum and this is the form with each such
 * union's first non-null branch. */
const json_t *zx_avro_schema_connect(const zx_avro_schema *s);

/* 1 when S depends on the datum (s has a union other than [null, T]). */
int zx_avro_schema_dynamic(const zx_avro_schema *s);

/* Decodes the Avro binary datum in the len bytes at datum with s.  Returns
 * a new reference to {"schema": S, "payload": P} (json_decref it), or NULL
 * with a message in err as above.  S may be shared with s and with other
 * results: treat the whole result as read-only (json_deep_copy to change
 * it). */
json_t *zx_avro_decode(const zx_avro_schema *s, const void *datum, size_t len, char *err,
                       size_t errlen);

#endif /* ZX_COMMON_AVRO_CONNECT_H */
