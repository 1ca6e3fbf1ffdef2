/*
 * test_secret_store.c — the encrypted secrets store (common/
 * secret_store.h): set and get, a wrong key, a value moved under another
 * name, rekey, save and load, the key file's mode, and the parser's
 * refusals.
 */
#include "common/secret_store.h"
#include "tests/unit/check.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void)
{
    char dir[] = "/tmp/zx_test_ss_XXXXXX", kp[200], sp[200], e[400];
    if (!mkdtemp(dir))
        return 1;
    snprintf(kp, sizeof(kp), "%s/secret.key", dir);
    snprintf(sp, sizeof(sp), "%s/secrets.zx", dir);
    unsigned char k1[ZX_SS_KEY_LEN], k2[ZX_SS_KEY_LEN], kr[ZX_SS_KEY_LEN];
    CHECK(zx_ss_write_key(kp, k1, 0, e, sizeof(e)) == 0);
    CHECK(zx_ss_write_key(kp, k2, 0, e, sizeof(e)) < 0);   /* exists */
    struct stat st;
    CHECK(stat(kp, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK(zx_ss_read_key(kp, kr, e, sizeof(e)) == 0 && !memcmp(kr, k1, sizeof(k1)));
    chmod(kp, 0640);
    CHECK(zx_ss_read_key(kp, kr, e, sizeof(e)) < 0 && strstr(e, "chmod 600"));
    chmod(kp, 0600);

    zx_secret_store *s = NULL;
    CHECK(zx_ss_load(sp, &s, e, sizeof(e)) == 0 && s && zx_ss_count(s) == 0);
    CHECK(zx_ss_set(s, k1, "b_token", "secret-b", 8, e, sizeof(e)) == 0);
    CHECK(zx_ss_set(s, k1, "a_token", "secret-a", 8, e, sizeof(e)) == 0);
    CHECK(zx_ss_set(s, k1, "bad/name", "x", 1, e, sizeof(e)) < 0);
    CHECK(zx_ss_set(s, k1, "empty", "", 0, e, sizeof(e)) < 0);
    const char *at;
    CHECK(zx_ss_count(s) == 2 && !strcmp(zx_ss_name(s, 0, &at), "a_token") && at[0]);
    char *v = NULL;
    size_t len = 0;
    CHECK(zx_ss_get(s, k1, "b_token", &v, &len, e, sizeof(e)) == 0 && len == 8 &&
          !strcmp(v, "secret-b"));
    free(v);
    CHECK(zx_ss_get(s, k1, "c", &v, &len, e, sizeof(e)) < 0 && strstr(e, "no secret c"));
    memset(kr, 7, sizeof(kr));
    CHECK(!zx_ss_key_matches(s, kr));
    CHECK(zx_ss_get(s, kr, "a_token", &v, &len, e, sizeof(e)) < 0 && strstr(e, "another key"));
    CHECK(zx_ss_set(s, kr, "c", "x", 1, e, sizeof(e)) < 0);
    CHECK(zx_ss_save(s, sp, e, sizeof(e)) == 0);
    CHECK(stat(sp, &st) == 0 && (st.st_mode & 0777) == 0600);
    zx_ss_free(s);

    /* read back; then a value moved under another name fails its check */
    s = NULL;
    CHECK(zx_ss_load(sp, &s, e, sizeof(e)) == 0 && zx_ss_count(s) == 2);
    CHECK(zx_ss_get(s, k1, "a_token", &v, &len, e, sizeof(e)) == 0 && !strcmp(v, "secret-a"));
    free(v);
    FILE *f = fopen(sp, "r");
    char text[4096];
    size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = '\0';
    char *pa = strstr(text, "\"a_token\""), *pb = strstr(text, "\"b_token\"");
    CHECK(pa && pb);
    if (pa && pb)
        memcpy(pb + 1, "a", 1), memcpy(pa + 1, "b", 1);   /* swap the names */
    zx_secret_store *t = NULL;
    CHECK(zx_ss_parse(text, n, &t, e, sizeof(e)) == 0);
    CHECK(t && zx_ss_get(t, k1, "a_token", &v, &len, e, sizeof(e)) < 0 &&
          strstr(e, "fails its check"));
    zx_ss_free(t);

    /* rekey: every value under the new key, none under the old */
    CHECK(zx_ss_rekey(s, k1, k2, e, sizeof(e)) == 0);
    CHECK(zx_ss_key_matches(s, k2) && !zx_ss_key_matches(s, k1));
    CHECK(zx_ss_get(s, k2, "b_token", &v, &len, e, sizeof(e)) == 0 && !strcmp(v, "secret-b"));
    free(v);
    CHECK(zx_ss_delete(s, "b_token") == 1 && zx_ss_delete(s, "b_token") == 0);
    zx_ss_free(s);

    /* the parser's refusals */
    static const char *const bad[] = {
        "", "[]", "{}", "{\"format\":\"zx_secret_store\",\"version\":2,\"secrets\":{}}",
        "{\"format\":\"zx_secret_store\",\"version\":1,\"secrets\":{\"a\":{}}}",
        "{\"format\":\"zx_secret_store\",\"version\":1,\"key_id\":\"zz\",\"secrets\":{}}",
        "{\"format\":\"zx_secret_store\",\"version\":1,\"key_id\":\"0011223344556677\","
        "\"secrets\":{\"a b\":{\"nonce\":\"000000000000000000000000\",\"data\":\"AAAA\"}}}",
        "{\"format\":\"zx_secret_store\",\"version\":1,\"key_id\":\"0011223344556677\","
        "\"secrets\":{\"a\":{\"nonce\":\"00\",\"data\":\"AAAAAAAAAAAAAAAAAAAAAAAA\"}}}",
        NULL};
    for (int i = 0; bad[i]; i++) {
        t = NULL;
        e[0] = 0;
        CHECK(zx_ss_parse(bad[i], strlen(bad[i]), &t, e, sizeof(e)) < 0 && !t && e[0]);
    }
    unlink(kp);
    unlink(sp);
    rmdir(dir);
    return failures != 0;
}
