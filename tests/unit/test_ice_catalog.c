/*
 * test_ice_catalog.c — the pure pieces of the Iceberg catalogs
 * (workers/destinations/iceberg/ice_catalog_int.h): percent-encoding, the
 * REST paths, what a REST commit's status means, the error texts of REST
 * and AWS answers, metadata file names, s3:// URLs; and open's refusals
 * (unknown kind, missing settings, a catalog nobody answers at: the
 * message names it without the secret).
 */
#include "workers/destinations/iceberg/ice_catalog_int.h"
#include "tests/unit/check.h"

#include <stdlib.h>
#include <string.h>

static void test_pct(void)
{
    char o[64];
    CHECK(ice_pct("sales", o, sizeof(o)) == 0 && !strcmp(o, "sales"));
    CHECK(ice_pct("a b/c:d%", o, sizeof(o)) == 0 && !strcmp(o, "a%20b%2Fc%3Ad%25"));
    CHECK(ice_pct("é", o, sizeof(o)) == 0 && !strcmp(o, "%C3%A9"));
    CHECK(ice_pct("x~_.-", o, sizeof(o)) == 0 && !strcmp(o, "x~_.-"));
    CHECK(ice_pct("abcd", o, 4) == -1);
    CHECK(ice_pct("abc", o, 4) == 0);
    CHECK(ice_pct("a/", o, 4) == -1);
    CHECK(ice_pct_keep("my wh/x", 1, o, sizeof(o)) == 0 && !strcmp(o, "my%20wh/x"));
}

static void test_paths(void)
{
    char o[256];
    CHECK(ice_rest_path("", NULL, NULL, 0, o, sizeof(o)) == 0 && !strcmp(o, "/namespaces"));
    CHECK(ice_rest_path("/wh", "sales", NULL, 0, o, sizeof(o)) == 0 &&
          !strcmp(o, "/wh/namespaces/sales"));
    CHECK(ice_rest_path("/wh", "sales", NULL, 1, o, sizeof(o)) == 0 &&
          !strcmp(o, "/wh/namespaces/sales/tables"));
    CHECK(ice_rest_path("", "s a", "or/ders", 0, o, sizeof(o)) == 0 &&
          !strcmp(o, "/namespaces/s%20a/tables/or%2Fders"));
    CHECK(ice_rest_path("", "sales", "orders", 0, o, 10) == -1);
}

static void test_commit_status(void)
{
    CHECK(ice_rest_commit_status(200) == 0);
    CHECK(ice_rest_commit_status(204) == 0);
    CHECK(ice_rest_commit_status(409) == ZX_ICECAT_CONFLICT);
    CHECK(ice_rest_commit_status(500) == ZX_ICECAT_UNKNOWN);
    CHECK(ice_rest_commit_status(502) == ZX_ICECAT_UNKNOWN);
    CHECK(ice_rest_commit_status(503) == ZX_ICECAT_UNKNOWN);
    CHECK(ice_rest_commit_status(504) == ZX_ICECAT_UNKNOWN);
    CHECK(ice_rest_commit_status(0) == ZX_ICECAT_UNKNOWN);
    CHECK(ice_rest_commit_status(400) == -1);
    CHECK(ice_rest_commit_status(401) == -1);
    CHECK(ice_rest_commit_status(403) == -1);
    CHECK(ice_rest_commit_status(404) == -1);
    CHECK(ice_rest_commit_status(501) == -1);
}

static void test_error_texts(void)
{
    char o[256];
    ice_rest_error_text("{\"error\":{\"message\":\"Table does not exist: a.b\","
                        "\"type\":\"NoSuchTableException\",\"code\":404}}", o, sizeof(o));
    CHECK(!strcmp(o, "NoSuchTableException: Table does not exist: a.b"));
    ice_rest_error_text("<html>bad\ngateway</html>", o, sizeof(o));
    CHECK(!strcmp(o, "<html>bad gateway</html>"));
    ice_rest_error_text(NULL, o, sizeof(o));
    CHECK(!strcmp(o, ""));

    ice_aws_error_type("{\"__type\":\"com.amazonaws.glue#EntityNotFoundException\","
                       "\"Message\":\"Table t not found\"}", o, sizeof(o));
    CHECK(!strcmp(o, "EntityNotFoundException"));
    ice_aws_error_type("{\"__type\":\"ConflictException:http://internal/\"}", o, sizeof(o));
    CHECK(!strcmp(o, "ConflictException"));
    ice_aws_error_type("{\"code\":\"AlreadyExistsException\"}", o, sizeof(o));
    CHECK(!strcmp(o, "AlreadyExistsException"));
    ice_aws_error_type("not json", o, sizeof(o));
    CHECK(!strcmp(o, ""));
    ice_aws_error_message("{\"Message\":\"Table t not found\"}", o, sizeof(o));
    CHECK(!strcmp(o, "Table t not found"));
    ice_aws_error_message("{\"message\":\"x\"}", o, sizeof(o));
    CHECK(!strcmp(o, "x"));
}

static void test_metadata_path(void)
{
    char o[256];
    const char *u = "0b7a3c2e-1111-4222-8333-444455556666";
    CHECK(ice_metadata_path("s3://b/wh/sales.db/orders", NULL, u, o, sizeof(o)) == 0);
    CHECK(!strcmp(o, "s3://b/wh/sales.db/orders/metadata/00000-"
                     "0b7a3c2e-1111-4222-8333-444455556666.metadata.json"));
    CHECK(ice_metadata_path("s3://b/t/", "s3://b/t/metadata/00007-abc.metadata.json", "u", o,
                            sizeof(o)) == 0);
    CHECK(!strcmp(o, "s3://b/t/metadata/00008-u.metadata.json"));
    CHECK(ice_metadata_path("s3://b/t", "s3://b/t/metadata/v3.metadata.json", "u", o,
                            sizeof(o)) == 0);
    CHECK(!strcmp(o, "s3://b/t/metadata/00001-u.metadata.json"));
    CHECK(ice_metadata_path("s3://b/t", "s3://b/t/metadata/123456-x.metadata.json", "u", o,
                            sizeof(o)) == 0);
    CHECK(!strcmp(o, "s3://b/t/metadata/123457-u.metadata.json"));
    CHECK(ice_metadata_path("s3://b/t", NULL, "u", o, 20) == -1);

    char a[37], b[37];
    ice_uuid(a);
    ice_uuid(b);
    CHECK(strlen(a) == 36 && a[14] == '4' && strchr("89ab", a[19]) && strcmp(a, b));
}

static void test_s3_split(void)
{
    char b[64], k[256];
    CHECK(ice_s3_split("s3://bkt/a/b.json", b, sizeof(b), k, sizeof(k)) == 0 &&
          !strcmp(b, "bkt") && !strcmp(k, "a/b.json"));
    CHECK(ice_s3_split("s3a://bkt/x", b, sizeof(b), k, sizeof(k)) == 0 && !strcmp(k, "x"));
    CHECK(ice_s3_split("s3://bkt", b, sizeof(b), k, sizeof(k)) == -1);
    CHECK(ice_s3_split("s3://bkt/", b, sizeof(b), k, sizeof(k)) == -1);
    CHECK(ice_s3_split("gs://bkt/x", b, sizeof(b), k, sizeof(k)) == -1);
    CHECK(ice_s3_split("s3:///x", b, sizeof(b), k, sizeof(k)) == -1);
}

static void test_open_refusals(void)
{
    char err[512];
    zx_icecat_args a = {.name = "cat", .kind = "hive"};
    CHECK(zx_icecat_open(&a, err, sizeof(err)) == NULL && strstr(err, "kind hive"));
    a.kind = "glue";
    CHECK(zx_icecat_open(&a, err, sizeof(err)) == NULL && strstr(err, "region"));
    a.kind = "iceberg_rest";
    a.uri = "ftp://x";
    CHECK(zx_icecat_open(&a, err, sizeof(err)) == NULL && strstr(err, "uri"));
    /* nobody answers there: the message says where, never the secret */
    a.uri = "http://127.0.0.1:9/api/catalog";
    a.credential = "zxid:zx-very-secret";
    a.deadline_ms = 500;
    CHECK(zx_icecat_open(&a, err, sizeof(err)) == NULL);
    CHECK(strstr(err, "cat") && !strstr(err, "zx-very-secret"));
    a.credential = NULL;
    a.token = "zx-bearer-secret";
    CHECK(zx_icecat_open(&a, err, sizeof(err)) == NULL);
    CHECK(strstr(err, "127.0.0.1:9") && !strstr(err, "zx-bearer-secret"));
    zx_icecat_free(NULL);
    zx_icecat_table_free(NULL);
}

int main(void)
{
    test_pct();
    test_paths();
    test_commit_status();
    test_error_texts();
    test_metadata_path();
    test_s3_split();
    test_open_refusals();
    if (failures)
        printf("test_ice_catalog: %d check(s) failed\n", failures);
    else
        printf("test_ice_catalog: all checks passed\n");
    return failures != 0;
}
