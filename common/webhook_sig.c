/*
 * webhook_sig.c — see webhook_sig.h.
 */
#include "common/webhook_sig.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdio.h>
#include <string.h>

#include "common/base64.h"

#define MAC_LEN 32

int zx_webhook_key(const char *secret, uint8_t *key, char *why, size_t whylen)
{
    if (!secret) {
        snprintf(why, whylen, "no secret");
        return -1;
    }
    if (!strncmp(secret, "whsec_", 6))
        secret += 6;
    size_t n = strlen(secret);
    /* longer text than the largest key could be: refused before decoding */
    if (n > ZX_BASE64_LEN(ZX_WEBHOOK_KEY_MAX)) {
        snprintf(why, whylen, "the secret decodes to more than %d bytes (a Standard Webhooks "
                 "secret is whsec_ and the base64 of %d to %d random bytes)",
                 ZX_WEBHOOK_KEY_MAX, ZX_WEBHOOK_KEY_MIN, ZX_WEBHOOK_KEY_MAX);
        return -1;
    }
    uint8_t buf[ZX_WEBHOOK_KEY_MAX + 3];
    long k = zx_base64_decode(secret, n, buf);
    if (k < 0) {
        snprintf(why, whylen, "the secret is not base64 after its whsec_ prefix");
        return -1;
    }
    if (k < ZX_WEBHOOK_KEY_MIN || k > ZX_WEBHOOK_KEY_MAX) {
        snprintf(why, whylen, "the secret decodes to %ld bytes, not %d to %d (make one with: "
                 "echo whsec_$(head -c 32 /dev/urandom | base64))",
                 k, ZX_WEBHOOK_KEY_MIN, ZX_WEBHOOK_KEY_MAX);
        OPENSSL_cleanse(buf, sizeof(buf));
        return -1;
    }
    memcpy(key, buf, (size_t)k);
    OPENSSL_cleanse(buf, sizeof(buf));
    return (int)k;
}

int zx_webhook_check_head(const char *id, const char *timestamp, const char *signature,
                          int64_t now_s, char *why, size_t whylen)
{
    if (!id || !timestamp || !signature) {
        snprintf(why, whylen, "a signed push needs the webhook-id, webhook-timestamp and "
                 "webhook-signature headers (missing: %s%s%s)", id ? "" : "webhook-id ",
                 timestamp ? "" : "webhook-timestamp ", signature ? "" : "webhook-signature");
        return -1;
    }
    size_t n = strlen(id);
    int ok = n >= 1 && n <= ZX_WEBHOOK_ID_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = id[i] > 0x20 && id[i] < 0x7f;
    if (!ok) {
        snprintf(why, whylen, "webhook-id must be 1 to %d printable characters without spaces",
                 ZX_WEBHOOK_ID_MAX);
        return -1;
    }
    /* at most 12 digits: seconds until the year 33658, no overflow below */
    n = strlen(timestamp);
    ok = n >= 1 && n <= 12;
    int64_t ts = 0;
    for (size_t i = 0; ok && i < n; i++) {
        ok = timestamp[i] >= '0' && timestamp[i] <= '9';
        ts = ts * 10 + (timestamp[i] - '0');
    }
    if (!ok) {
        snprintf(why, whylen, "webhook-timestamp must be Unix seconds (1 to 12 digits)");
        return -1;
    }
    int64_t d = now_s - ts;
    if (d > ZX_WEBHOOK_TOLERANCE_S || d < -ZX_WEBHOOK_TOLERANCE_S) {
        snprintf(why, whylen, "webhook-timestamp %s is %lld s %s zx's clock (at most %d s "
                 "either way: a replayed push, or a clock to set right)", timestamp,
                 (long long)(d > 0 ? d : -d), d > 0 ? "behind" : "ahead of",
                 ZX_WEBHOOK_TOLERANCE_S);
        return -1;
    }
    if (strlen(signature) > ZX_WEBHOOK_SIG_MAX) {
        snprintf(why, whylen, "webhook-signature is longer than %d bytes", ZX_WEBHOOK_SIG_MAX);
        return -1;
    }
    return 0;
}

/* HMAC-SHA256 of "<id>.<timestamp>.<body>" into mac.  0, or -1. */
static int mac_of(const uint8_t *key, size_t keylen, const char *id, const char *timestamp,
                  const void *body, size_t len, uint8_t mac[MAC_LEN])
{
    int rc = -1;
    /* the parts are fed in turn (HMAC() would need them in one buffer) */
    EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *c = m ? EVP_MAC_CTX_new(m) : NULL;
    if (c) {
        char digest[] = "SHA256";
        OSSL_PARAM params[] = {
            OSSL_PARAM_construct_utf8_string("digest", digest, 0),
            OSSL_PARAM_construct_end(),
        };
        size_t out = 0;
        if (EVP_MAC_init(c, key, keylen, params) == 1 &&
            EVP_MAC_update(c, (const unsigned char *)id, strlen(id)) == 1 &&
            EVP_MAC_update(c, (const unsigned char *)".", 1) == 1 &&
            EVP_MAC_update(c, (const unsigned char *)timestamp, strlen(timestamp)) == 1 &&
            EVP_MAC_update(c, (const unsigned char *)".", 1) == 1 &&
            (len == 0 || EVP_MAC_update(c, body, len) == 1) &&
            EVP_MAC_final(c, mac, &out, MAC_LEN) == 1 && out == MAC_LEN)
            rc = 0;
    }
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(m);
    return rc;
}

int zx_webhook_verify(const uint8_t *key, size_t keylen, const char *id, const char *timestamp,
                      const void *body, size_t len, const char *signature)
{
    uint8_t mac[MAC_LEN];
    if (mac_of(key, keylen, id, timestamp, body, len, mac) < 0)
        return -1;
    int found = 0;
    const char *p = signature;
    while (*p) {
        p += strspn(p, " ");
        size_t n = strcspn(p, " ");
        if (n > 3 && !strncmp(p, "v1,", 3) && n - 3 <= ZX_BASE64_LEN(MAC_LEN)) {
            uint8_t got[MAC_LEN + 3];
            long k = zx_base64_decode(p + 3, n - 3, got);
            /* every entry is compared: the time taken says nothing of which */
            if (k == MAC_LEN && CRYPTO_memcmp(got, mac, MAC_LEN) == 0)
                found = 1;
        }
        p += n;
    }
    OPENSSL_cleanse(mac, sizeof(mac));
    return found;
}

int zx_webhook_sign(const uint8_t *key, size_t keylen, const char *id, const char *timestamp,
                    const void *body, size_t len, char *out, size_t outlen)
{
    uint8_t mac[MAC_LEN];
    if (outlen < 4 + ZX_BASE64_LEN(MAC_LEN) || mac_of(key, keylen, id, timestamp, body, len,
                                                      mac) < 0)
        return -1;
    memcpy(out, "v1,", 3);
    zx_base64_encode(mac, MAC_LEN, out + 3);
    return 0;
}
