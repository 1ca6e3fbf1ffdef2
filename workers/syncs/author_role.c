/*
 * author_role.c — an author's PostgreSQL role name and password
 * (author_role.h).
 */
#include "workers/syncs/author_role.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <stdio.h>
#include <string.h>

#define READABLE_MAX 32
#define DIGEST_HEX 20

int zx_author_role_name(const unsigned char key[32], const char *name,
                        char out[ZX_AUTHOR_ROLE_MAX])
{
    /* "zx role" NUL name: the name whole, byte for byte */
    size_t nlen = strlen(name);
    unsigned char mac[32];
    EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *c = m ? EVP_MAC_CTX_new(m) : NULL;
    OSSL_PARAM p[] = {OSSL_PARAM_construct_utf8_string("digest", (char *)"SHA256", 0),
                      OSSL_PARAM_construct_end()};
    size_t got = 0;
    int ok = c && EVP_MAC_init(c, key, 32, p) &&
             EVP_MAC_update(c, (const unsigned char *)"zx role", 8) &&
             EVP_MAC_update(c, (const unsigned char *)name, nlen) &&
             EVP_MAC_final(c, mac, &got, sizeof(mac)) && got == sizeof(mac);
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(m);
    if (!ok) {
        out[0] = '\0';
        return -1;
    }
    size_t o = (size_t)snprintf(out, ZX_AUTHOR_ROLE_MAX, "zx_author_");
    for (size_t i = 0; i < nlen && i < READABLE_MAX; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (ch >= 'A' && ch <= 'Z')
            ch = (unsigned char)(ch - 'A' + 'a');
        else if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
            ch = '_';
        out[o++] = (char)ch;
    }
    out[o++] = '_';
    for (unsigned i = 0; i < DIGEST_HEX / 2; i++)
        o += (size_t)snprintf(out + o, ZX_AUTHOR_ROLE_MAX - o, "%02x", mac[i]);
    return 0;
}

void zx_author_role_password(const unsigned char key[32], const char *role, char out[65])
{
    unsigned char mac[32];
    unsigned int len = 0;
    HMAC(EVP_sha256(), key, 32, (const unsigned char *)role, strlen(role), mac, &len);
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", mac[i]);
}

void zx_author_role_legacy_name(const unsigned char key[32], const char *name,
                                char out[ZX_AUTHOR_ROLE_MAX])
{
    unsigned char mac[32];
    unsigned int len = 0;
    HMAC(EVP_sha256(), key, 32, (const unsigned char *)"zx role", 7, mac, &len);
    snprintf(out, ZX_AUTHOR_ROLE_MAX, "zx_author_%.40s_%02x%02x%02x", name, mac[0], mac[1],
             mac[2]);
    for (char *t = out; *t; t++)
        if (*t == '-')
            *t = '_';
}

void zx_author_role_mark(const char *name, char *out, size_t outlen)
{
    snprintf(out, outlen, "zx author: %s", name);
}
