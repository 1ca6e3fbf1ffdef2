/*
 * test_pg_cdc_check.c — unit tests of the decisions of `zxctl test` for
 * Postgres change data capture (workers/sources/postgres/pg_cdc_check.h): each
 * setting or catalog value and the message it gives, without a server
 * (wal_level = replica cannot be had from the test server, which runs
 * with logical); and zx_pg_cdc_check's refusals that need no server.
 *
 * It must never: connect anywhere (the one connection attempt goes to a
 * closed port of 127.0.0.1 and must fail at once), or depend on timing.
 */
#include "workers/sources/postgres/pg_cdc_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

static int failures;

#define CHECK(c) do {                                                     \
        if (!(c)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,        \
                    __LINE__, #c);                                        \
            failures++;                                                   \
        }                                                                 \
    } while (0)

/* out is exactly want */
#define CHECK_MSG(out, want) do {                                         \
        if (strcmp((out), (want))) {                                      \
            fprintf(stderr, "%s:%d: message\n    got:  %s\n    want: %s\n",\
                    __FILE__, __LINE__, (out), (want));                   \
            failures++;                                                   \
        }                                                                 \
    } while (0)

/* out contains sub */
#define CHECK_HAS(out, sub) do {                                          \
        if (!strstr((out), (sub))) {                                      \
            fprintf(stderr, "%s:%d: message lacks \"%s\"\n    got: %s\n", \
                    __FILE__, __LINE__, (sub), (out));                    \
            failures++;                                                   \
        }                                                                 \
    } while (0)

static void test_wal_level(void)
{
    char out[512] = "untouched";

    CHECK(zx_pg_cdc_wal_level_msg("logical", out, sizeof(out)) == 0);
    CHECK_MSG(out, "untouched");
    CHECK(zx_pg_cdc_wal_level_msg("replica", out, sizeof(out)) == -1);
    CHECK_MSG(out, "Postgres says wal_level is replica; set wal_level = logical "
              "(ALTER SYSTEM SET wal_level = logical) and restart the server");
    CHECK(zx_pg_cdc_wal_level_msg("minimal", out, sizeof(out)) == -1);
    CHECK_MSG(out, "Postgres says wal_level is minimal; set wal_level = logical "
              "(ALTER SYSTEM SET wal_level = logical) and restart the server");
    CHECK(zx_pg_cdc_wal_level_msg("", out, sizeof(out)) == -1);
    CHECK_HAS(out, "wal_level is unknown;");
    CHECK(zx_pg_cdc_wal_level_msg(NULL, out, sizeof(out)) == -1);
    /* a short buffer is cut, still a string */
    char small[16];
    CHECK(zx_pg_cdc_wal_level_msg("replica", small, sizeof(small)) == -1);
    CHECK(strlen(small) == sizeof(small) - 1);
}

static void test_role(void)
{
    char out[512] = "untouched";

    CHECK(zx_pg_cdc_role_msg("zx", 1, 0, out, sizeof(out)) == 0);
    CHECK(zx_pg_cdc_role_msg("zx", 0, 1, out, sizeof(out)) == 0);
    CHECK(zx_pg_cdc_role_msg("zx", 1, 1, out, sizeof(out)) == 0);
    CHECK_MSG(out, "untouched");
    CHECK(zx_pg_cdc_role_msg("zx_nocreate", 0, 0, out, sizeof(out)) == -1);
    CHECK_MSG(out, "role zx_nocreate has no REPLICATION attribute (and is not a superuser): "
              "logical replication needs it; as a superuser: ALTER ROLE zx_nocreate "
              "REPLICATION");
    /* a name the server quoted goes in as it is */
    CHECK(zx_pg_cdc_role_msg("\"Zx Reader\"", 0, 0, out, sizeof(out)) == -1);
    CHECK_HAS(out, "ALTER ROLE \"Zx Reader\" REPLICATION");
}

static void test_slots(void)
{
    char out[512] = "untouched";

    CHECK(zx_pg_cdc_slots_msg(10, 0, 0, out, sizeof(out)) == 0);
    CHECK(zx_pg_cdc_slots_msg(10, 9, 0, out, sizeof(out)) == 0);
    /* none left, but the pipeline's own slot exists: fine */
    CHECK(zx_pg_cdc_slots_msg(10, 10, 1, out, sizeof(out)) == 0);
    CHECK_MSG(out, "untouched");
    CHECK(zx_pg_cdc_slots_msg(10, 10, 0, out, sizeof(out)) == -1);
    CHECK_MSG(out, "no replication slot left: max_replication_slots is 10 and 10 slots "
              "exist; drop a slot no longer used (see SELECT slot_name, active FROM "
              "pg_replication_slots; then SELECT pg_drop_replication_slot('name')) or raise "
              "the limit (ALTER SYSTEM SET max_replication_slots = 11) and restart the "
              "server");
    /* more slots than the limit (the limit lowered after they were made) */
    CHECK(zx_pg_cdc_slots_msg(4, 6, 0, out, sizeof(out)) == -1);
    CHECK_HAS(out, "max_replication_slots is 4 and 6 slots exist");
    CHECK(zx_pg_cdc_slots_msg(0, 0, 0, out, sizeof(out)) == -1);
    CHECK_MSG(out, "Postgres has max_replication_slots = 0: a pipeline needs a replication "
              "slot; set max_replication_slots (ALTER SYSTEM SET max_replication_slots = 10) "
              "and restart the server");
}

static void test_senders(void)
{
    char out[512] = "untouched";

    CHECK(zx_pg_cdc_senders_msg(10, 0, out, sizeof(out)) == 0);
    CHECK(zx_pg_cdc_senders_msg(10, 9, out, sizeof(out)) == 0);
    CHECK_MSG(out, "untouched");
    CHECK(zx_pg_cdc_senders_msg(10, 10, out, sizeof(out)) == -1);
    CHECK_MSG(out, "no WAL sender left: max_wal_senders is 10 and 10 are running; raise the "
              "limit (ALTER SYSTEM SET max_wal_senders = 11) and restart the server, or stop "
              "a replication client");
    CHECK(zx_pg_cdc_senders_msg(0, 0, out, sizeof(out)) == -1);
    CHECK_HAS(out, "max_wal_senders = 0");
    CHECK_HAS(out, "ALTER SYSTEM SET max_wal_senders = 10");
}

static void test_tables(void)
{
    char out[1024] = "untouched";
    zx_pg_cdc_table ok = {.table = "public.orders", .schema = "public", .exists = 1,
                          .relkind = 'r', .schema_usage = 1, .select = 1, .ident = 1};
    zx_pg_cdc_table t;

    CHECK(zx_pg_cdc_table_msg(&ok, "zx", "shop", out, sizeof(out)) == 0);
    t = ok;
    t.relkind = 'p';          /* a partitioned table is published too */
    CHECK(zx_pg_cdc_table_msg(&t, "zx", "shop", out, sizeof(out)) == 0);
    CHECK_MSG(out, "untouched");

    t = ok;
    t.table = "public.\"Orders\"";
    t.exists = 0;
    t.relkind = 0;
    CHECK(zx_pg_cdc_table_msg(&t, "zx", "shop", out, sizeof(out)) == -1);
    CHECK_MSG(out, "table public.\"Orders\" does not exist in database shop");
    t.near = "public.orders";
    CHECK(zx_pg_cdc_table_msg(&t, "zx", "shop", out, sizeof(out)) == -1);
    CHECK_MSG(out, "table public.\"Orders\" does not exist in database shop "
              "(public.orders exists: the names in `tables` are exact)");

    t = ok;
    t.table = "public.v";
    t.relkind = 'v';
    CHECK(zx_pg_cdc_table_msg(&t, "zx", "shop", out, sizeof(out)) == -1);
    CHECK_MSG(out, "public.v is a view, not a table: logical replication publishes tables "
              "only");
    t.relkind = 'm';
    CHECK(zx_pg_cdc_table_msg(&t, "zx", "shop", out, sizeof(out)) == -1);
    CHECK_HAS(out, "is a materialized view, not a table");

    t = ok;
    t.table = "sales.customers";
    t.schema = "sales";
    t.schema_usage = 0;
    t.select = 0;
    CHECK(zx_pg_cdc_table_msg(&t, "reader", "shop", out, sizeof(out)) == -1);
    CHECK_MSG(out, "role reader may not use schema sales (of sales.customers): GRANT USAGE ON "
              "SCHEMA sales TO reader");
    t.schema_usage = 1;
    CHECK(zx_pg_cdc_table_msg(&t, "reader", "shop", out, sizeof(out)) == -1);
    CHECK_MSG(out, "role reader may not read sales.customers: GRANT SELECT ON "
              "sales.customers TO reader");

    t = ok;
    t.ident = 0;
    CHECK(zx_pg_cdc_table_msg(&t, "zx", "shop", out, sizeof(out)) == -1);
    CHECK_HAS(out, "public.orders has no primary key (and no other replica identity)");
    CHECK_HAS(out, "ALTER TABLE public.orders ADD PRIMARY KEY");
    CHECK_HAS(out, "ALTER TABLE public.orders REPLICA IDENTITY USING INDEX");

    t.ident = 2;
    CHECK(zx_pg_cdc_table_msg(&t, "zx", "shop", out, sizeof(out)) == -1);
    CHECK_HAS(out, "public.orders has REPLICA IDENTITY FULL but no primary key");
    CHECK_HAS(out, "ALTER TABLE public.orders ADD PRIMARY KEY");
}

/* zx_pg_cdc_check refuses what is not a usable postgres connection before
 * connecting, and names only the dsn as shown when it cannot connect. */
static void test_check_refusals(void)
{
    char out[1024];
    char dsn[128], shown[128];
    zx_conf_connection k = {.name = "main_kafka", .kind = "kafka"};
    zx_conf_connection pg = {.name = "shop", .kind = "postgres", .dsn = NULL,
                             .dsn_shown = "postgresql://zx:***@127.0.0.1/shop"};

    CHECK(zx_pg_cdc_check(NULL, NULL, 1000, out, sizeof(out)) == -1);
    CHECK_MSG(out, "not a postgres connection");
    CHECK(zx_pg_cdc_check(&k, NULL, 1000, out, sizeof(out)) == -1);
    CHECK_MSG(out, "not a postgres connection");
    CHECK(zx_pg_cdc_check(&pg, NULL, 1000, out, sizeof(out)) == -1);
    CHECK_HAS(out, "connection shop: its dsn could not be read");
    CHECK(zx_pg_cdc_test(NULL, NULL, &k, 1000, out, sizeof(out)) == -1);

    /* a port nobody listens on: bound, then closed */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
          getsockname(fd, (struct sockaddr *)&a, &al) == 0);
    close(fd);
    snprintf(dsn, sizeof(dsn), "postgresql://zx:SECRETPW@127.0.0.1:%d/shop",
             ntohs(a.sin_port));
    snprintf(shown, sizeof(shown), "postgresql://zx:***@127.0.0.1:%d/shop", ntohs(a.sin_port));
    pg.dsn = dsn;
    pg.dsn_shown = shown;
    CHECK(zx_pg_cdc_check(&pg, NULL, 4000, out, sizeof(out)) == -1);
    CHECK(strncmp(out, "cannot connect to Postgres ", 27) == 0);
    CHECK_HAS(out, shown);
    CHECK(strstr(out, "SECRETPW") == NULL);
}

/* Which failed connections are the server's answer to the settings
 * (libpq's messages of PostgreSQL 15). */
static void test_conn_refused(void)
{
    CHECK(zx_pg_conn_refused("connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  "
                             "password authentication failed for user \"zx\""));
    CHECK(zx_pg_conn_refused("connection to server at \"h\", port 5432 failed: FATAL:  no "
                             "pg_hba.conf entry for replication connection from host "
                             "\"127.0.0.1\", user \"zx\", no encryption"));
    CHECK(zx_pg_conn_refused("connection to server at \"h\", port 5432 failed: FATAL:  "
                             "database \"shop\" does not exist"));
    CHECK(zx_pg_conn_refused("connection to server at \"h\", port 5432 failed: FATAL:  role "
                             "\"zy\" does not exist"));
    CHECK(zx_pg_conn_refused("connection to server at \"h\", port 5432 failed: FATAL:  "
                             "permission denied for database \"shop\""));
    CHECK(!zx_pg_conn_refused("connection to server at \"127.0.0.1\", port 5432 failed: "
                              "Connection refused\tIs the server running on that host and "
                              "accepting TCP/IP connections?"));
    CHECK(!zx_pg_conn_refused("connection to server at \"h\", port 5432 failed: FATAL:  the "
                              "database system is starting up"));
    CHECK(!zx_pg_conn_refused("connection to server at \"h\", port 5432 failed: FATAL:  the "
                              "database system is shutting down"));
    CHECK(!zx_pg_conn_refused("connection to server at \"h\", port 5432 failed: FATAL:  "
                              "sorry, too many clients already"));
    CHECK(!zx_pg_conn_refused("connection to server at \"h\", port 5432 failed: timeout "
                              "expired"));
    CHECK(!zx_pg_conn_refused(NULL));
}

int main(void)
{
    test_wal_level();
    test_role();
    test_slots();
    test_senders();
    test_tables();
    test_check_refusals();
    test_conn_refused();
    if (failures)
        fprintf(stderr, "test_pg_cdc_check: %d check(s) failed\n", failures);
    else
        printf("test_pg_cdc_check: all checks passed\n");
    return failures ? 1 : 0;
}
