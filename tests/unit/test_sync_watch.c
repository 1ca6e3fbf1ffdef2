/*
 * test_sync_watch.c — which tables an `on: change` sync watches
 * (workers/syncs/sync_watch.h): the query's names of a table, outside
 * strings and comments, bare without case, quoted exactly, on the last
 * part of a dotted name.
 */
#include "tests/unit/check.h"
#include "workers/syncs/sync_watch.h"

int main(void)
{
    CHECK(zx_sync_query_names("SELECT id FROM orders", "orders"));
    CHECK(zx_sync_query_names("select * from ORDERS o", "orders"));
    CHECK(zx_sync_query_names("SELECT * FROM public.orders", "orders"));
    CHECK(zx_sync_query_names("SELECT * FROM public.orders", "public.orders"));
    CHECK(zx_sync_query_names("SELECT * FROM \"orders\"", "orders"));
    CHECK(!zx_sync_query_names("SELECT * FROM \"Orders\"", "orders"));
    CHECK(zx_sync_query_names("SELECT * FROM [orders]", "orders"));
    CHECK(zx_sync_query_names("SELECT * FROM `orders`", "orders"));
    CHECK(zx_sync_query_names("SELECT a.x FROM a JOIN orders b ON a.id = b.id", "orders"));
    CHECK(zx_sync_query_names("SELECT (SELECT max(id) FROM orders) AS m", "orders"));
    /* not names of it */
    CHECK(!zx_sync_query_names("SELECT * FROM orders_old", "orders"));
    CHECK(!zx_sync_query_names("SELECT * FROM my_orders", "orders"));
    CHECK(!zx_sync_query_names("SELECT 'orders' AS t FROM x", "orders"));
    CHECK(!zx_sync_query_names("SELECT 'it''s orders' AS t FROM x", "orders"));
    CHECK(!zx_sync_query_names("SELECT 1 -- orders\nFROM x", "orders"));
    CHECK(!zx_sync_query_names("SELECT 1 /* orders */ FROM x", "orders"));
    CHECK(!zx_sync_query_names("SELECT 1 FROM x /* orders", "orders"));
    CHECK(!zx_sync_query_names("SELECT 1e5orders FROM x", "orders"));
    CHECK(!zx_sync_query_names("", "orders"));
    CHECK(!zx_sync_query_names("SELECT 1 FROM orders", ""));
    CHECK(!zx_sync_query_names(NULL, "orders"));
    CHECK(zx_sync_query_names("SELECT 'a' || x FROM orders", "orders"));
    CHECK(zx_sync_query_names("SELECT \"unclosed FROM orders", "unclosed FROM orders") == 1);
    return failures != 0;
}
