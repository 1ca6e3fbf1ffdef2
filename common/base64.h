/*
 * base64.h — base64 (RFC 4648) for the decoders and checks that meet it:
 * Debezium's bytes and decimals, Avro bytes as Kafka Connect writes them,
 * Standard Webhooks secrets and signatures.
 */
#ifndef ZX_COMMON_BASE64_H
#define ZX_COMMON_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Bytes zx_base64_encode writes for n bytes (padding included, no NUL). */
#define ZX_BASE64_LEN(n) (((n) + 2) / 3 * 4)

/* Writes the base64 of p[0..n) (standard alphabet, padded) to out, which
 * has room for ZX_BASE64_LEN(n) + 1 bytes; NUL-terminates it.  Returns
 * the length written (without the NUL). */
size_t zx_base64_encode(const uint8_t *p, size_t n, char *out);

/* Decodes s[0..n) (standard or URL-safe alphabet, padding optional) into
 * out, which has room for n / 4 * 3 + 3 bytes.  Returns the number of
 * bytes, or -1 when s is not base64 (another byte, or a length no
 * encoding makes). */
long zx_base64_decode(const char *s, size_t n, uint8_t *out);

#endif /* ZX_COMMON_BASE64_H */
