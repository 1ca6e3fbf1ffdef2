/*
 * kafka_check.c — the check of a kafka pipeline's configuration (its
 * plug-in's `check`, conf/plugin.h and conf/check.h), once its entry is
 * walked: topic or topics (one of them, not both), topics_regex derived,
 * and encoding against format and the schema registry.  Its options are
 * its own (kafka_opts.h); the shared stream options (format, mode,
 * key_columns, history, table_pattern, metadata) are checked by conf/.
 *
 * It must never: open anything, read other pipelines or the connection
 * (not resolved yet), or quote a secret (the registry's password).
 */
#include <string.h>

#include "conf/check.h"
#include "workers/sources/kafka/kafka_int.h"

/* encoding and the schema registry agree (format: debezium, url http(s),
 * username and password together).  The errors it reported. */
static int check_encoding(zx_cf_check *ck, const zx_conf_pipeline *p, const zx_kafka_opts *o)
{
    int avro = o->encoding == ZX_ENC_AVRO, n = 0;
    const char *url = o->registry_url;

    if (avro && p->format != ZX_FORMAT_DEBEZIUM) {
        zx_check_error(ck, "encoding", "pipelines.%s: encoding: avro applies only to "
                       "format: debezium", p->name);
        n++;
    }
    if (avro && !url) {
        zx_check_error(ck, "encoding", "pipelines.%s: encoding: avro needs "
                       "schema_registry.url", p->name);
        n++;
    }
    if (url && !avro) {
        zx_check_error(ck, NULL, "pipelines.%s: schema_registry applies only to "
                       "encoding: avro", p->name);
        n++;
    }
    if (url && strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
        zx_check_error(ck, NULL, "pipelines.%s: schema_registry.url must start with "
                       "http:// or https://, got \"%s\"", p->name, url);
        n++;
    }
    /* a password written as a reference is NULL under ZX_CONF_SKIP_SECRETS */
    if (!o->registry_username != !o->registry_password && url &&
        !(zx_check_flags(ck) & ZX_CONF_SKIP_SECRETS)) {
        zx_check_error(ck, NULL, "pipelines.%s: schema_registry needs both username "
                       "and password, or neither", p->name);
        n++;
    }
    return n;
}

int kafka_check(zx_cf_check *ck, zx_conf_pipeline *p)
{
    zx_kafka_opts *o = p->own;
    int topic = zx_check_written(ck, "topic"), topics = zx_check_written(ck, "topics");
    int bad = 1;

    if (!o)
        return 0;   /* not a kafka pipeline's struct: nothing of ours */
    if (!topic && !topics)
        zx_check_error(ck, NULL, "pipeline %s: missing required field 'topic' (or "
                       "'topics')", p->name);
    else if (topic && topics)
        zx_check_error(ck, "topics", "pipelines.%s: write topic or topics, not both",
                       p->name);
    else
        bad = 0;
    o->topics_regex = o->ntopics == 1 && o->topics[0] && o->topics[0][0] == '^';
    bad += check_encoding(ck, p, o);
    return bad ? -1 : 0;
}
