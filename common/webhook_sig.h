/*
 * webhook_sig.h — Standard Webhooks signatures (standardwebhooks.com), the
 * way Debezium Server's http sink (authentication.type=standard-webhooks),
 * Svix and others prove a push without sending a secret: headers
 *     webhook-id: msg_2KWPBgLlAfxdpx2AI54pPJ85f4W
 *     webhook-timestamp: 1674087231                  (Unix seconds)
 *     webhook-signature: v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=
 * where each space-separated "v1,<base64>" is HMAC-SHA256 under the
 * secret's bytes of "<webhook-id>.<webhook-timestamp>.<body>".
 *
 * Pure (OpenSSL's HMAC, no I/O), unit-tested and fuzzed.
 */
#ifndef ZX_COMMON_WEBHOOK_SIG_H
#define ZX_COMMON_WEBHOOK_SIG_H

#include <stddef.h>
#include <stdint.h>

#define ZX_WEBHOOK_KEY_MIN     24     /* bytes of a secret, as the standard says */
#define ZX_WEBHOOK_KEY_MAX     64
#define ZX_WEBHOOK_ID_MAX      255    /* bytes of webhook-id (an Idempotency-Key too) */
#define ZX_WEBHOOK_SIG_MAX     2048   /* bytes of webhook-signature */
#define ZX_WEBHOOK_TOLERANCE_S 300    /* |now - webhook-timestamp| allowed */

/* The key of a secret "whsec_<base64>" (the prefix may be left out), into
 * key (room for ZX_WEBHOOK_KEY_MAX bytes).  Returns its length, from
 * ZX_WEBHOOK_KEY_MIN to ZX_WEBHOOK_KEY_MAX, or -1 (not base64, or a length
 * out of that range) with a reason in why that never shows the secret. */
int zx_webhook_key(const char *secret, uint8_t *key, char *why, size_t whylen);

/* Checks the three headers before the body arrives (any may be NULL):
 * id 1..ZX_WEBHOOK_ID_MAX printable ASCII bytes without spaces, timestamp
 * decimal seconds within ZX_WEBHOOK_TOLERANCE_S of now_s (a replay of an
 * old push, or a clock far off), signature at most ZX_WEBHOOK_SIG_MAX bytes.
 * Returns 0, or -1 with the reason in why, e.g.
 *     "webhook-timestamp 1674087231 is 1325 s behind zx's clock (at most
 *      300 s either way: a replayed push, or a clock to set right)" */
int zx_webhook_check_head(const char *id, const char *timestamp, const char *signature,
                          int64_t now_s, char *why, size_t whylen);

/* Whether one "v1,<base64>" of signature is the HMAC-SHA256 under key of
 * "<id>.<timestamp>.<body>" (compared in constant time; entries of other
 * versions are passed over).  Returns 1 when one is, 0 when none is, -1
 * when out of memory. */
int zx_webhook_verify(const uint8_t *key, size_t keylen, const char *id, const char *timestamp,
                      const void *body, size_t len, const char *signature);

/* The signature header value "v1,<base64>" for the same input, into out
 * (room for 4 + ZX_BASE64_LEN(32) bytes and a NUL); for tests and zx's own
 * senders.  0, or -1 when out of memory. */
int zx_webhook_sign(const uint8_t *key, size_t keylen, const char *id, const char *timestamp,
                    const void *body, size_t len, char *out, size_t outlen);

#endif /* ZX_COMMON_WEBHOOK_SIG_H */
