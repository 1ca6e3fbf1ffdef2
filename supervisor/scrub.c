/*
 * scrub.c — in a child just forked: make it non-dumpable, and erase from
 * its memory every secret of the configuration its role has no use for
 * (issue 18, point 15).
 *
 * The supervisor keeps the whole configuration; a fork gives the child a
 * copy of all of it, and of what the loader freed and of the environment
 * (${env:} values).  Each role keeps only what it needs:
 *   - the writer: the workspace's dsn;
 *   - the gateway: the http pipelines' push keys and webhook secrets, and
 *     the API tokens;
 *   - a pipeline's worker: the secrets of its plug-ins' own options (rows
 *     flagged ZX_CF_SECRET: http's key and webhook secret, kafka's
 *     schema registry password; a sync's destination's), the secrets of its connection and of its
 *     destination connection (a stream's forward's too); a sync's also the
 *     workspace's dsn (it runs its query there), and a stream's that
 *     forwards (its journal is there);
 *   - a `zxctl verify` process: its pipeline's connection and the
 *     workspace's dsn.
 * Every other secret (a connection's dsn and the password in it, SASL and
 * TLS key passwords, secret librdkafka properties, keys, webhook secrets,
 * registry passwords, API tokens, the workspace's dsn) is zeroed wherever
 * a copy of it is (common/scrub.h), the configuration's own string
 * included, which then reads as "".  A secret that is also part of one the
 * role keeps (the same password twice) is kept.
 *
 * It must never: run in the supervisor (it destroys the configuration's
 * secrets), or log a secret.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/scrub.h"
#include "conf/plugin.h"
#include "supervisor/sup.h"
#include "workers/sources/source.h"

typedef struct strs {
    const char **v;
    size_t n, cap;
    char **owned;        /* passwords cut out of dsns: freed at the end */
    size_t nowned, capowned;
} strs;

static void add(strs *l, const char *s)
{
    if (!s || !*s)
        return;
    if (zx_grow_to(&l->v, l->n + 1, &l->cap, sizeof(*l->v), 32) < 0)
        return;
    l->v[l->n++] = s;
}

/* The password of dsn: what dsn_shown (its redaction) replaced by "***",
 * when it replaced one piece; added to l as a string l owns. */
static void add_dsn(strs *l, const char *dsn, const char *shown)
{
    add(l, dsn);
    if (!dsn || !shown)
        return;
    size_t dl = strlen(dsn), sl = strlen(shown), a = 0, b = 0;
    while (a < dl && a < sl && dsn[a] == shown[a])
        a++;
    while (b < dl - a && b < sl - a && dsn[dl - 1 - b] == shown[sl - 1 - b])
        b++;
    if (sl - a - b != 3 || memcmp(shown + a, "***", 3) != 0 || dl - a - b == 0)
        return;
    char *pw = strndup(dsn + a, dl - a - b);
    if (!pw)
        return;
    if (zx_grow_to(&l->owned, l->nowned + 1, &l->capowned, sizeof(*l->owned), 16) < 0) {
        free(pw);
        return;
    }
    l->owned[l->nowned++] = pw;
    add(l, pw);
}

static int prop_secret(const char *k)
{
    return k && (strcasestr(k, "password") || strcasestr(k, "secret") ||
                 strcasestr(k, "sasl.oauthbearer"));
}

static void add_cb(const char *s, void *l)
{
    add(l, s);
}

/* c's secrets: its dsn's password, its secret rows (by the rows: a new
 * secret option needs no line here), its secret-looking properties. */
static void add_conn(strs *l, const zx_conf_connection *c)
{
    if (!c)
        return;
    add_dsn(l, c->dsn, c->dsn_shown);
    zx_conf_connection_secrets(c, add_cb, l);
    for (size_t i = 0; i < c->nprops; i++)
        if (prop_secret(c->prop_keys[i]))
            add(l, c->prop_values[i]);
}

/* The secrets of p: the strings of its plug-in's own rows flagged
 * ZX_CF_SECRET (http's key and webhook_secret, kafka's schema registry
 * password: conf/plugin.h), through zx_conf_own_secrets. */
static void add_pipe(strs *l, const zx_conf_pipeline *p)
{
    zx_conf_own_secrets(p, add_cb, l);
}

/* Every secret of c into all; those role (own: its pipeline) needs into keep. */
static void collect(const zx_conf *c, zx_role role, const zx_conf_pipeline *own, strs *all,
                    strs *keep)
{
    add_dsn(all, c->pg_dsn, c->pg_dsn_shown);
    for (size_t i = 0; i < c->nconnections; i++)
        add_conn(all, &c->connections[i]);
    for (size_t i = 0; i < c->npipelines; i++)
        add_pipe(all, &c->pipelines[i]);
    for (size_t i = 0; i < c->napitokens; i++)
        add(all, c->apitokens[i].token);

    if (role == ROLE_WRITER) {
        add_dsn(keep, c->pg_dsn, c->pg_dsn_shown);
    } else if (role == ROLE_GATEWAY) {
        /* the own secrets of the pipelines it feeds (http: push keys,
         * webhook secrets) */
        for (size_t i = 0; i < c->npipelines; i++) {
            const zx_source *src = zx_source_find(c->pipelines[i].source);
            if (src && (src->flags & ZX_SOURCE_GATEWAY))
                zx_conf_own_secrets(&c->pipelines[i], add_cb, keep);
        }
        for (size_t i = 0; i < c->napitokens; i++)
            add(keep, c->apitokens[i].token);
    } else if (role == ROLE_VERIFY) {
        if (own)
            add_conn(keep, own->conn);
        add_dsn(keep, c->pg_dsn, c->pg_dsn_shown);
    } else if (own) {
        add_pipe(keep, own);
        add_conn(keep, own->conn);
        add_conn(keep, own->dest_conn);
        add_conn(keep, own->dest_catalog);
        /* a sync runs its query there; a stream that forwards reads and
         * trims its forward journal there */
        if (zx_conf_is_sync(own) || zx_conf_forwards(own))
            add_dsn(keep, c->pg_dsn, c->pg_dsn_shown);
    }
}

static int kept(const strs *keep, const char *s)
{
    for (size_t i = 0; i < keep->n; i++)
        if (strstr(keep->v[i], s))
            return 1;
    return 0;
}

void sup_child_harden(const zx_conf *c, zx_role role, const zx_conf_pipeline *own)
{
    /* no core file, no reading of its memory by other processes of the
     * user: unless the operator asked for cores */
    if (prctl(PR_SET_DUMPABLE, c->core_dumps ? 1 : 0, 0, 0, 0) < 0)
        zx_warn("event=dumpable_failed error=\"%s\"", strerror(errno));

    strs all = {0}, keep = {0}, drop = {0};
    collect(c, role, own, &all, &keep);
    for (size_t i = 0; i < all.n; i++)
        if (!kept(&keep, all.v[i]))
            add(&drop, all.v[i]);
    /* the short ones are not searched for: zero them where they are */
    char **shortv = calloc(drop.n + 1, sizeof(*shortv));
    size_t nshort = 0;
    for (size_t i = 0; shortv && i < drop.n; i++)
        if (strlen(drop.v[i]) < ZX_SCRUB_MIN)
            shortv[nshort++] = (char *)drop.v[i];
    long n = drop.n ? zx_scrub_copies(drop.v, drop.n) : 0;
    for (size_t i = 0; i < nshort; i++)
        explicit_bzero(shortv[i], strlen(shortv[i]));
    if (n < 0)
        zx_warn("event=scrub_failed error=\"%s\" secrets=%zu", strerror(errno), drop.n);
    else
        zx_debug("event=scrub secrets=%zu copies=%ld", drop.n, n);
    free(shortv);
    for (size_t i = 0; i < all.nowned; i++)
        free(all.owned[i]);
    for (size_t i = 0; i < keep.nowned; i++)
        free(keep.owned[i]);
    free(all.owned);
    free(keep.owned);
    free(all.v);
    free(keep.v);
    free(drop.v);
}
