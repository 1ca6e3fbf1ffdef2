/*
 * kafka_test.c — `zxctl test NAME` for Kafka pipelines and connections:
 * connect with the connection's settings and authenticate, then list the
 * pipeline's topics (or those its regex matches) with their partitions,
 * and check that the consumer group may be used; or say precisely what
 * failed (kafka_errors.c): unreachable (which broker), TLS (which check),
 * authentication (with the SCRAM hint for an old librdkafka), unknown
 * topic, not authorized (topic, group); with encoding: avro, whether the
 * schema registry answers with the pipeline's credentials.
 *
 * Runs in a short-lived process of its own (supervisor/probe.c) within
 * timeout_ms.  It must never: commit, join the group (no subscribe), or
 * print a secret.
 */
#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/schema_registry.h"
#include "common/util.h"
#include "workers/sources/kafka/kafka_int.h"
#include "workers/sources/source.h"

/* What the error callback saw: the most telling error so far. */
typedef struct tctx {
    kc_seen tls;            /* first: the client's opaque (kafka_conf.c) */
    const zx_conf_connection *c;
    const char *group;
    int have;
    ke_kind kind;
    char msg[ZX_SEG_SOURCE_ERROR_MAX];
    int64_t first_unreachable_ms;
} tctx;

/* Higher: more precise, keeps its place against a later vaguer error. */
static int rank(ke_kind k)
{
    switch (k) {
    case KE_AUTH:
    case KE_TLS:
    case KE_PROTOCOL:
        return 3;
    case KE_UNREACHABLE:
        return 2;
    case KE_TRANSIENT:
        return 0;
    default:
        return 1;
    }
}

static void test_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    tctx *t = opaque;
    ke_ctx ctx;
    kc_err_ctx(t->c, t->group, &t->tls, &ctx);
    char msg[ZX_SEG_SOURCE_ERROR_MAX];
    ke_kind k = ke_describe(&ctx, (rd_kafka_resp_err_t)err, reason, NULL, msg, sizeof(msg));
    if (k == KE_UNREACHABLE && !t->first_unreachable_ms)
        t->first_unreachable_ms = zx_mono_ms();
    if (k == KE_TRANSIENT || (t->have && rank(k) < rank(t->kind)))
        return;
    /* "all brokers are down" adds nothing to a precise reason */
    if (t->have && err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
        return;
    t->have = 1;
    t->kind = k;
    snprintf(t->msg, sizeof(t->msg), "%s", msg);
}

static int left_ms(int64_t deadline)
{
    int64_t l = deadline - zx_mono_ms();
    return l > 0 ? (int)l : 0;
}

/* Describe error e (from a metadata or offsets call) into out. */
static void fail_with(tctx *t, rd_kafka_resp_err_t e, const char *topic, char *out, size_t n)
{
    ke_ctx ctx;
    kc_err_ctx(t->c, t->group, &t->tls, &ctx);
    ke_describe(&ctx, e, NULL, topic, out, n);
}

/* The client of the test, its errors reported to t (which must outlive
 * it).  NULL with out set when it cannot be made. */
static rd_kafka_t *test_client(tctx *t, const zx_conf_connection *c, char *out, size_t outlen)
{
    char err[512];
    rd_kafka_conf_t *kc = kc_build(c, &t->tls, err, sizeof(err));
    if (!kc) {
        snprintf(out, outlen, "%s", err);
        return NULL;
    }
    if (t->group && (kc_set(kc, c, 0, "group.id", t->group, err, sizeof(err)) < 0 ||
                     kc_set(kc, c, 0, "enable.auto.commit", "false", err, sizeof(err)) < 0)) {
        rd_kafka_conf_destroy(kc);
        snprintf(out, outlen, "%s", err);
        return NULL;
    }
    rd_kafka_conf_set_error_cb(kc, test_error_cb);
    rd_kafka_conf_set_opaque(kc, t);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, kc, err, sizeof(err));
    if (!rk) {
        rd_kafka_conf_destroy(kc);
        snprintf(out, outlen, "cannot create the Kafka client: %s", err);
        return NULL;
    }
    rd_kafka_set_log_queue(rk, NULL); /* served by rd_kafka_poll below */
    return rk;
}

/* 1. connect and authenticate: a metadata request needs both.  0 (out
 * says where to, *nbrokers how many brokers), or -1 (out says why). */
static int test_connect(tctx *t, rd_kafka_t *rk, int64_t deadline, int timeout_ms,
                        int *nbrokers, char *out, size_t outlen)
{
    const zx_conf_connection *c = t->c;
    const struct rd_kafka_metadata *md = NULL;
    char how[160];
    kc_describe(c, how, sizeof(how));
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR__TIMED_OUT;
    while (left_ms(deadline) > 0) {
        int slice = left_ms(deadline) < 500 ? left_ms(deadline) : 500;
        e = rd_kafka_metadata(rk, 0, NULL, &md, slice);
        rd_kafka_poll(rk, 0);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
            break;
        md = NULL;
        /* a precise failure will not mend; an unreachable broker gets a
         * few seconds (it may be starting) */
        if (t->have && (rank(t->kind) == 3 ||
                        (t->kind == KE_UNREACHABLE &&
                         zx_mono_ms() - t->first_unreachable_ms > 3000)))
            break;
    }
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rd_kafka_poll(rk, 0);
        if (t->have)
            snprintf(out, outlen, "%s", t->msg);
        else
            snprintf(out, outlen, "no answer from the brokers %s within %d ms (%s)",
                     c->brokers_csv, timeout_ms, rd_kafka_err2str(e));
        return -1;
    }
    const char *via = c->brokers_csv;
    char viab[300];
    for (int i = 0; i < md->broker_cnt; i++)
        if (md->brokers[i].id == md->orig_broker_id) {
            snprintf(viab, sizeof(viab), "%s:%d", md->brokers[i].host, md->brokers[i].port);
            via = viab;
        }
    snprintf(out, outlen, "connected to %s (%s)", via, how);
    *nbrokers = md->broker_cnt;
    rd_kafka_metadata_destroy(md);
    return 0;
}

/* 2. without a pipeline (a connection): how many topics it sees.  0 or
 * -1 (out says why). */
static int test_listing(tctx *t, rd_kafka_t *rk, int64_t deadline, int nbrokers, char *out,
                        size_t outlen)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, NULL, &md, left_ms(deadline));
    if (e) {
        char m[400];
        fail_with(t, e, NULL, m, sizeof(m));
        zx_addf(out, outlen, "; listing topics failed: %s", m);
        if (md)
            rd_kafka_metadata_destroy(md);
        return -1;
    }
    int visible = 0;
    for (int i = 0; i < md->topic_cnt; i++)
        visible += md->topics[i].topic[0] != '_' || md->topics[i].topic[1] != '_';
    zx_addf(out, outlen, "; %d broker%s, %d topic%s visible", nbrokers, nbrokers == 1 ? "" : "s",
        visible, visible == 1 ? "" : "s");
    rd_kafka_metadata_destroy(md);
    return 0;
}

/* 2. the topics the pipeline's regex matches, their partitions added to
 * parts.  0 or -1 (out says why). */
static int test_regex(tctx *t, rd_kafka_t *rk, const zx_kafka_opts *o, int64_t deadline,
                      rd_kafka_topic_partition_list_t *parts, char *out, size_t outlen)
{
    regex_t re;
    if (regcomp(&re, o->topics[0], REG_EXTENDED | REG_NOSUB) != 0) {
        zx_addf(out, outlen, "; topics: the regular expression does not compile");
        return -1;
    }
    int rc = -1;
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, NULL, &md, left_ms(deadline));
    if (e) {
        char m[400];
        fail_with(t, e, NULL, m, sizeof(m));
        zx_addf(out, outlen, "; listing topics failed: %s", m);
        goto out;
    }
    int matched = 0;
    for (int i = 0; i < md->topic_cnt; i++) {
        const rd_kafka_metadata_topic_t *mt = &md->topics[i];
        if (regexec(&re, mt->topic, 0, NULL, 0) != 0)
            continue;
        if (matched++ < 20)
            zx_addf(out, outlen, "; topic %s: %d partition%s", mt->topic, mt->partition_cnt,
                mt->partition_cnt == 1 ? "" : "s");
        for (int k = 0; !mt->err && k < mt->partition_cnt; k++)
            rd_kafka_topic_partition_list_add(parts, mt->topic, k);
    }
    if (matched > 20)
        zx_addf(out, outlen, "; and %d more topics", matched - 20);
    if (!matched)
        zx_addf(out, outlen, "; no topic matches %s yet (topics this user may not describe are "
            "not listed)", o->topics[0]);
    rc = 0;
out:
    if (md)
        rd_kafka_metadata_destroy(md);
    regfree(&re);
    return rc;
}

/* 2. the pipeline's named topics, their partitions added to parts.  0
 * or -1 (out says why). */
static int test_named(tctx *t, rd_kafka_t *rk, const zx_kafka_opts *o, int64_t deadline,
                      rd_kafka_topic_partition_list_t *parts, char *out, size_t outlen)
{
    for (size_t i = 0; i < o->ntopics; i++) {
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, o->topics[i], NULL);
        if (!rkt) {
            zx_addf(out, outlen, "; cannot look topic %s up", o->topics[i]);
            return -1;
        }
        rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, left_ms(deadline));
        rd_kafka_topic_destroy(rkt);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt > 0)
            e = md->topics[0].err;
        if (e) {
            char m[400];
            fail_with(t, e, o->topics[i], m, sizeof(m));
            zx_addf(out, outlen, "; %s", m);
            if (md)
                rd_kafka_metadata_destroy(md);
            return -1;
        }
        int n = md->topic_cnt > 0 ? md->topics[0].partition_cnt : 0;
        zx_addf(out, outlen, "; topic %s: %d partition%s", o->topics[i], n, n == 1 ? "" : "s");
        for (int k = 0; k < n; k++)
            rd_kafka_topic_partition_list_add(parts, o->topics[i], k);
        rd_kafka_metadata_destroy(md);
    }
    return 0;
}

/* 3. the group: reading its committed offsets needs its ACL.  0 or -1
 * (out says why). */
static int test_group(tctx *t, rd_kafka_t *rk, int64_t deadline,
                      rd_kafka_topic_partition_list_t *parts, char *out, size_t outlen)
{
    if (t->group && parts->cnt) {
        rd_kafka_resp_err_t e = rd_kafka_committed(rk, parts, left_ms(deadline));
        int committed = 0;
        for (int i = 0; e == RD_KAFKA_RESP_ERR_NO_ERROR && i < parts->cnt; i++) {
            if (parts->elems[i].err)
                e = parts->elems[i].err;
            else if (parts->elems[i].offset >= 0)
                committed++;
        }
        if (e) {
            char m[400];
            fail_with(t, e, NULL, m, sizeof(m));
            zx_addf(out, outlen, "; group %s: %s", t->group, m);
            return -1;
        }
        zx_addf(out, outlen, "; group %s: committed offsets on %d of %d partitions", t->group,
            committed, parts->cnt);
    } else if (t->group) {
        zx_addf(out, outlen, "; group %s", t->group);
    }
    return 0;
}

/* 4. encoding: avro: the schema registry answers these credentials.  0
 * or -1 (out says why). */
static int test_registry(const zx_kafka_opts *o, int64_t deadline, char *out, size_t outlen)
{
    if (o->encoding == ZX_ENC_AVRO && o->registry_url) {
        long ms = left_ms(deadline) > 5000 ? 5000 : left_ms(deadline) > 1000 ? left_ms(deadline)
                                                                              : 1000;
        zx_registry *reg = zx_registry_new(o->registry_url, o->registry_username,
                                           o->registry_password, ms);
        char m[700];
        int bad = reg ? zx_registry_check(reg, m, sizeof(m)) != 0
                      : (snprintf(m, sizeof(m), "schema registry: cannot make its client"), 1);
        zx_registry_free(reg);
        zx_addf(out, outlen, "; %s", m);
        if (bad)
            return -1;
    }
    return 0;
}

int kafka_test(const zx_conf *conf, const zx_conf_pipeline *p, const zx_conf_connection *c,
               int timeout_ms, char *out, size_t outlen)
{
    /* p's own options: a kafka pipeline's (never another source's struct) */
    const zx_kafka_opts *o = p && p->source && !strcmp(p->source, "kafka") ? p->own : NULL;
    (void)conf;
    out[0] = '\0';
    if (!c && p)
        c = p->conn;
    if (!c) {
        snprintf(out, outlen, "no Kafka connection to test");
        return -1;
    }
    tctx t;
    memset(&t, 0, sizeof(t));
    t.c = c;
    t.group = o ? o->group : NULL;
    int64_t deadline = zx_mono_ms() + (timeout_ms > 2000 ? timeout_ms - 1000 : timeout_ms);
    rd_kafka_t *rk = test_client(&t, c, out, outlen);
    if (!rk)
        return -1;
    int rc = -1, nbrokers = 0;
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (test_connect(&t, rk, deadline, timeout_ms, &nbrokers, out, outlen) < 0)
        goto out;
    if (!o) {
        rc = test_listing(&t, rk, deadline, nbrokers, out, outlen);
        goto out;
    }
    parts = rd_kafka_topic_partition_list_new(16);
    if ((o->topics_regex ? test_regex(&t, rk, o, deadline, parts, out, outlen)
                         : test_named(&t, rk, o, deadline, parts, out, outlen)) < 0 ||
        test_group(&t, rk, deadline, parts, out, outlen) < 0 ||
        test_registry(o, deadline, out, outlen) < 0)
        goto out;
    rc = 0;
out:
    if (parts)
        rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    return rc;
}
