/*
 * test_author_role.c — the PostgreSQL role names of authors
 * (workers/syncs/author_role.h): distinct names, distinct roles, whatever
 * the names differ in (punctuation, case, bytes past the readable part,
 * UTF-8, lengths beyond 63 bytes); at most 63 bytes of a-z, 0-9 and _;
 * the same name and key, the same role; another key, another role; the
 * name zx gave before (one for alike names).
 */
#include <stdlib.h>
#include <string.h>

#include "tests/unit/check.h"
#include "workers/syncs/author_role.h"

static const unsigned char KEY[32] = "0123456789abcdef0123456789abcde";

static int plain(const char *r)
{
    for (const char *p = r; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return 0;
    return 1;
}

int main(void)
{
    char long_a[200], long_b[200], l60a[61], l60b[61];
    memset(long_a, 'x', sizeof(long_a) - 1);
    long_a[sizeof(long_a) - 1] = '\0';
    memcpy(long_b, long_a, sizeof(long_b));
    long_b[150] = 'y';                     /* differs far past 63 bytes */
    memset(l60a, 'b', 60);
    l60a[60] = '\0';
    memcpy(l60b, l60a, sizeof(l60b));
    l60a[45] = '-';
    l60b[45] = '_';
    const char *names[] = {
        "bob-x", "bob_x", "bob.x", "bob x", "Bob_x", "BOB_X", "bob_x ", "bobx",
        "b\xc3\xb6" "b", "b\xc3\xb8" "b", "b__b", "\xe2\x9c\x93", "\xe2\x9c\x94",
        "a", "", long_a, long_b, l60a, l60b,
    };
    size_t n = sizeof(names) / sizeof(names[0]);
    char (*roles)[ZX_AUTHOR_ROLE_MAX] = calloc(n, ZX_AUTHOR_ROLE_MAX);
    CHECK(roles != NULL);
    if (!roles)
        return 1;
    for (size_t i = 0; i < n; i++) {
        CHECK(zx_author_role_name(KEY, names[i], roles[i]) == 0);
        CHECK(strlen(roles[i]) <= 63);
        CHECK(strncmp(roles[i], "zx_author_", 10) == 0);
        CHECK(plain(roles[i]));
        for (size_t j = 0; j < i; j++) {
            if (!strcmp(roles[i], roles[j]))
                printf("same role %s for names %zu and %zu\n", roles[i], i, j);
            CHECK(strcmp(roles[i], roles[j]) != 0);
        }
    }
    /* readable: the name's first bytes */
    CHECK(strncmp(roles[0], "zx_author_bob_x_", 16) == 0);
    /* the same name and key, the same role; another key, another role */
    char again[ZX_AUTHOR_ROLE_MAX], other[ZX_AUTHOR_ROLE_MAX];
    unsigned char key2[32];
    memcpy(key2, KEY, 32);
    key2[31] ^= 1;
    CHECK(zx_author_role_name(KEY, "bob-x", again) == 0 && !strcmp(again, roles[0]));
    CHECK(zx_author_role_name(key2, "bob-x", other) == 0 && strcmp(other, roles[0]) != 0);
    /* passwords: per role, 64 hex digits */
    char pa[65], pb[65];
    zx_author_role_password(KEY, roles[0], pa);
    zx_author_role_password(KEY, roles[1], pb);
    CHECK(strlen(pa) == 64 && strcmp(pa, pb) != 0);
    /* the name zx gave before: one for alike names, kept to take it away */
    char la[ZX_AUTHOR_ROLE_MAX], lb[ZX_AUTHOR_ROLE_MAX];
    zx_author_role_legacy_name(KEY, "bob-x", la);
    zx_author_role_legacy_name(KEY, "bob_x", lb);
    CHECK(!strcmp(la, lb) && strncmp(la, "zx_author_bob_x_", 16) == 0 && strlen(la) == 22);
    CHECK(strcmp(la, roles[0]) != 0);
    char mark[64];
    zx_author_role_mark("bob-x", mark, sizeof(mark));
    CHECK(!strcmp(mark, "zx author: bob-x"));
    free(roles);
    return failures != 0;
}
