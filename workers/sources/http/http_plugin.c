/*
 * http_plugin.c — the plug-in http: source: http, clients push JSON
 * through the gateway (http_push.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.def.
 * Its option rows are here: the loader parses, checks, compares and frees
 * them, and conf/OPTIONS.md documents them, from this table.
 */
#include <openssl/crypto.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/webhook_sig.h"
#include "conf/lineage.h"
#include "conf/plugin.h"
#include "workers/sources/http/http_opts.h"
#include "workers/sources/source.h"

extern const zx_source zx_source_http;   /* http_push.c */
extern const zx_plugin zx_plugin_http;   /* below */

static const char *const metadata[] = {"_ingested_at", "_request_id", NULL};

#define OWN(f) offsetof(zx_http_opts, f)

static const char *const acks[] = {"accepted", "commit", NULL};

static const zx_cf_option options[] = {
    {.section = "pipelines.<name>", .name = "key", .type = ZX_CF_STRING,
     .def_doc = "none; **required** unless `webhook_secret` is set",
     .offset = OWN(key), .flags = ZX_CF_OWN | ZX_CF_SECRET | ZX_CF_TOKEN,
     .help = "Key clients must present to push (`Authorization: Bearer "
     "<key>`). Printable ASCII without spaces. Prefer `${env:NAME}` or "
     "`${file:PATH}` to keep it out of the file."},
    {.section = "pipelines.<name>", .name = "webhook_secret",
     .type = ZX_CF_STRING, .def_doc = "none",
     .offset = OWN(webhook_secret), .flags = ZX_CF_OWN | ZX_CF_SECRET | ZX_CF_TOKEN,
     .help = "Also accept pushes signed the Standard Webhooks way "
     "(standardwebhooks.com; Debezium Server's http sink with "
     "`authentication.type=standard-webhooks`, Svix...): `whsec_` and the "
     "base64 of 24 to 64 random bytes, the secret the sender signs with. A "
     "push then needs no key: its `webhook-signature` must be the "
     "HMAC-SHA256 of `webhook-id`, `webhook-timestamp` and the body (after "
     "any `Content-Encoding` is undone), and its timestamp within 5 minutes "
     "of zx's clock. Its `webhook-id` is its `Idempotency-Key` (a header of "
     "that name is not signed, so it is ignored): retries and replays are "
     "written once. Unproven bodies hold at most a quarter of "
     "`http.max_held_bytes`."},
    {.section = "pipelines.<name>", .name = "ack", .type = ZX_CF_ENUM_INT,
     .def = "accepted", .offset = OWN(ack_commit), .flags = ZX_CF_OWN, .allowed = acks,
     .help = "When a push is answered 202: `accepted` once its rows are in "
     "the ring, `commit` once the writer committed them (as with "
     "`?wait=commit`)."},
    {.section = "pipelines.<name>", .name = "max_body_size", .type = ZX_CF_SIZE,
     .def_doc = "`server.http.max_body_size`", .offset = OWN(max_body_size), .flags = ZX_CF_OWN,
     .min = ZX_CF_KIB, .max = ZX_CF_GIB,
     .help = "Largest push body for this stream."},
};

/* A key or a webhook secret is written (written is what counts: a
 * reference is NULL under ZX_CONF_SKIP_SECRETS), and the webhook secret
 * decodes to a key of the right size (the secret is never quoted; NULL:
 * nothing to check). */
static int http_check(zx_cf_check *ck, zx_conf_pipeline *p)
{
    const zx_http_opts *o = p->own;
    uint8_t key[ZX_WEBHOOK_KEY_MAX];
    char why[300];
    int r = 0;

    if (!zx_check_written(ck, "key") && !zx_check_written(ck, "webhook_secret")) {
        zx_check_error(ck, NULL, "pipeline %s: missing required field 'key' (or "
                       "'webhook_secret', for pushes signed the Standard Webhooks way)",
                       p->name);
        r = -1;
    }
    if (o && o->webhook_secret && zx_webhook_key(o->webhook_secret, key, why, sizeof(why)) < 0) {
        zx_check_error(ck, "webhook_secret", "pipelines.%s: webhook_secret: %s", p->name, why);
        r = -1;
    }
    OPENSSL_cleanse(key, sizeof(key));
    return r;
}

/* The stream's own body limit; 0: the server's. */
static uint64_t http_body_limit(const zx_conf_pipeline *p)
{
    const zx_http_opts *o = p->own;

    return o ? o->max_body_size : 0;
}

const zx_http_opts *zx_http_opts_of(const zx_conf_pipeline *p)
{
    return p && p->plugin == &zx_plugin_http ? p->own : NULL;
}

/* Lineage: the gateway's push endpoint of the stream. */
static void http_lineage(const zx_conf *c, const zx_conf_pipeline *p, zx_lineage_out *out)
{
    (void)c;
    char path[160];
    snprintf(path, sizeof(path), "/api/streams/%s/push", p->name);
    zx_lineage_ext(out, "http.push", NULL, path);
}

const zx_plugin zx_plugin_http = {
    .name = "http",
    .role = ZX_PLUGIN_SOURCE,
    .lineage = http_lineage,
    .caps = ZX_PLUGIN_STREAM | ZX_PLUGIN_MIRROR,  /* no PARK: a push acked at commit is in its table */
    .metadata = metadata,
    .source = &zx_source_http,
    .check = http_check,
    .options = options,
    .noptions = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(zx_http_opts),
    .body_limit = http_body_limit,
    .doc = "clients push JSON (object, array or newline-delimited) to "
     "`POST /api/streams/<name>/push`.",
};
