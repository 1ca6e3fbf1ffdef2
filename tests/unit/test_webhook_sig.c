/*
 * test_webhook_sig.c — Standard Webhooks signatures (common/webhook_sig.h)
 * against the standard's published example, and base64 (common/base64.h).
 * Must not depend on timing.
 */
#include <stdio.h>
#include <string.h>

#include "common/base64.h"
#include "common/webhook_sig.h"

#include "tests/unit/check.h"

/* The example of the Standard Webhooks specification and its libraries'
 * test suites. */
#define SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define ID     "msg_p5jXN8AQM9LWM0D4loKWxJek"
#define TS     "1614265330"
#define BODY   "{\"test\": 2432232314}"
#define SIG    "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

static void test_base64(void)
{
    static const struct {
        const char *raw, *b64;
    } v[] = {{"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"},
             {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        char enc[16];
        uint8_t dec[16];
        size_t n = strlen(v[i].raw);
        CHECK(zx_base64_encode((const uint8_t *)v[i].raw, n, enc) == strlen(v[i].b64));
        CHECK(strcmp(enc, v[i].b64) == 0);
        CHECK(zx_base64_decode(v[i].b64, strlen(v[i].b64), dec) == (long)n);
        CHECK(memcmp(dec, v[i].raw, n) == 0);
    }
    uint8_t d[8];
    CHECK(zx_base64_decode("Zm9v!", 5, d) == -1);
    CHECK(zx_base64_decode("Z", 1, d) == -1);
    CHECK(zx_base64_decode("-_8", 3, d) == 2 && d[0] == 0xfb && d[1] == 0xff); /* URL-safe */
}

static void test_key(void)
{
    uint8_t key[ZX_WEBHOOK_KEY_MAX];
    char why[300];
    CHECK(zx_webhook_key(SECRET, key, why, sizeof(why)) == 24);
    CHECK(zx_webhook_key(SECRET + 6, key, why, sizeof(why)) == 24);   /* without whsec_ */
    CHECK(zx_webhook_key("whsec_c2hvcnQ=", key, why, sizeof(why)) == -1);
    CHECK(strstr(why, "decodes to 5 bytes, not 24 to 64") && !strstr(why, "c2hvcnQ"));
    CHECK(zx_webhook_key("whsec_not base64!", key, why, sizeof(why)) == -1);
    CHECK(strstr(why, "not base64") != NULL);
    char big[200] = "whsec_";
    memset(big + 6, 'A', 120);
    CHECK(zx_webhook_key(big, key, why, sizeof(why)) == -1 && strstr(why, "more than 64"));
    CHECK(zx_webhook_key(NULL, key, why, sizeof(why)) == -1);
}

static void test_head(void)
{
    char why[400];
    int64_t now = 1614265330;
    CHECK(zx_webhook_check_head(ID, TS, SIG, now, why, sizeof(why)) == 0);
    CHECK(zx_webhook_check_head(ID, TS, SIG, now + 300, why, sizeof(why)) == 0);
    CHECK(zx_webhook_check_head(ID, TS, SIG, now - 300, why, sizeof(why)) == 0);
    CHECK(zx_webhook_check_head(ID, TS, SIG, now + 301, why, sizeof(why)) == -1);
    CHECK(strstr(why, "is 301 s behind zx's clock") != NULL);
    CHECK(zx_webhook_check_head(ID, TS, SIG, now - 1000, why, sizeof(why)) == -1);
    CHECK(strstr(why, "is 1000 s ahead of zx's clock") != NULL);
    CHECK(zx_webhook_check_head(NULL, TS, SIG, now, why, sizeof(why)) == -1);
    CHECK(strstr(why, "missing: webhook-id") != NULL);
    CHECK(zx_webhook_check_head(ID, NULL, NULL, now, why, sizeof(why)) == -1);
    CHECK(strstr(why, "webhook-timestamp webhook-signature") != NULL);
    CHECK(zx_webhook_check_head("", TS, SIG, now, why, sizeof(why)) == -1);
    CHECK(zx_webhook_check_head("a b", TS, SIG, now, why, sizeof(why)) == -1);
    CHECK(zx_webhook_check_head(ID, "-5", SIG, now, why, sizeof(why)) == -1);
    CHECK(zx_webhook_check_head(ID, "1614265330.5", SIG, now, why, sizeof(why)) == -1);
    CHECK(zx_webhook_check_head(ID, "9999999999999999999999", SIG, now, why, sizeof(why)) == -1);
    CHECK(strstr(why, "Unix seconds") != NULL);
    char id[300];
    memset(id, 'a', 256);
    id[256] = '\0';
    CHECK(zx_webhook_check_head(id, TS, SIG, now, why, sizeof(why)) == -1);
    id[255] = '\0';
    CHECK(zx_webhook_check_head(id, TS, SIG, now, why, sizeof(why)) == 0);
    static char sig[3000];
    memset(sig, 'v', sizeof(sig) - 1);
    CHECK(zx_webhook_check_head(ID, TS, sig, now, why, sizeof(why)) == -1);
}

static void test_verify(void)
{
    uint8_t key[ZX_WEBHOOK_KEY_MAX];
    char why[300], out[64];
    int k = zx_webhook_key(SECRET, key, why, sizeof(why));
    size_t n = strlen(BODY);
    CHECK(zx_webhook_verify(key, (size_t)k, ID, TS, BODY, n, SIG) == 1);
    CHECK(zx_webhook_sign(key, (size_t)k, ID, TS, BODY, n, out, sizeof(out)) == 0);
    CHECK(strcmp(out, SIG) == 0);
    /* among others, in any place; other versions passed over */
    CHECK(zx_webhook_verify(key, (size_t)k, ID, TS, BODY, n,
                            "v1a,xxx v2,abc v1,AAAA " SIG " v1,Zm9v") == 1);
    CHECK(zx_webhook_verify(key, (size_t)k, ID, TS, BODY, n, "  " SIG "  ") == 1);
    /* anything changed: no */
    CHECK(zx_webhook_verify(key, (size_t)k, ID, TS, "{\"test\": 2432232315}", n, SIG) == 0);
    CHECK(zx_webhook_verify(key, (size_t)k, "msg_p5jXN8AQM9LWM0D4loKWxJeK", TS, BODY, n, SIG) == 0);
    CHECK(zx_webhook_verify(key, (size_t)k, ID, "1614265331", BODY, n, SIG) == 0);
    CHECK(zx_webhook_verify(key, (size_t)k - 1, ID, TS, BODY, n, SIG) == 0);
    CHECK(zx_webhook_verify(key, (size_t)k, ID, TS, BODY, n, "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=") == 0);
    CHECK(zx_webhook_verify(key, (size_t)k, ID, TS, BODY, n, "v1,g0hM9SsE") == 0);
    CHECK(zx_webhook_verify(key, (size_t)k, ID, TS, BODY, n, "") == 0);
    CHECK(zx_webhook_verify(key, (size_t)k, ID, TS, BODY, n, "v1,") == 0);
    /* an empty body is signed too */
    CHECK(zx_webhook_sign(key, (size_t)k, ID, TS, "", 0, out, sizeof(out)) == 0);
    CHECK(zx_webhook_verify(key, (size_t)k, ID, TS, "", 0, out) == 1);
    CHECK(zx_webhook_sign(key, (size_t)k, ID, TS, BODY, n, out, 10) == -1);
}

int main(void)
{
    test_base64();
    test_key();
    test_head();
    test_verify();
    if (failures)
        printf("%d check(s) failed\n", failures);
    else
        printf("test_webhook_sig: all checks passed\n");
    return failures != 0;
}
