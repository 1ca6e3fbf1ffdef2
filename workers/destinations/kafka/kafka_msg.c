/*
 * kafka_msg.c — the Kafka destination's message keys and values
 * (kafka_msg.h), made with the NDJSON rules of formats/textrows.c.
 *
 * It must never: talk to a broker, or give one key two texts (keys and
 * deletes go through the same columns and rules).
 */
#include "workers/destinations/kafka/kafka_msg.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dcell.h"
#include "formats/textrows.h"

static size_t col_index(const zx_dcol *cols, size_t ncols, const char *name)
{
    for (size_t i = 0; i < ncols; i++)
        if (!strcmp(cols[i].name, name))
            return i;
    return SIZE_MAX;
}

int zx_kmsg_init(zx_kmsg *m, const zx_dcol *cols, size_t ncols, const char *const *key,
                 size_t nkey, const char *const *sync_key, size_t nsync_key, int deletes,
                 char *err, size_t errlen)
{
    memset(m, 0, sizeof(*m));
    m->cols = cols;
    m->ncols = ncols;
    if (!nkey) {
        key = sync_key;
        nkey = nsync_key;
    }
    if (!nkey && deletes) {
        snprintf(err, errlen, "no message key: give the sync a `key`");
        return -1;
    }
    m->nkey = nkey;
    m->nkcols = nsync_key;
    m->mcols = calloc(nkey ? nkey : 1, sizeof(*m->mcols));
    m->midx = calloc(nkey ? nkey : 1, sizeof(*m->midx));
    m->mdel = calloc(nkey ? nkey : 1, sizeof(*m->mdel));
    m->kv = calloc(nkey ? nkey : 1, sizeof(*m->kv));
    m->kcols = calloc(nsync_key ? nsync_key : 1, sizeof(*m->kcols));
    if (!m->mcols || !m->midx || !m->mdel || !m->kv || !m->kcols) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < nsync_key; i++) {
        size_t j = col_index(cols, ncols, sync_key[i]);
        if (j == SIZE_MAX) {
            snprintf(err, errlen, "key column %.64s is not a column of the result",
                     sync_key[i]);
            goto fail;
        }
        m->kcols[i] = cols[j];
    }
    for (size_t i = 0; i < nkey; i++) {
        size_t j = col_index(cols, ncols, key[i]);
        if (j == SIZE_MAX) {
            snprintf(err, errlen, "destination.kafka.key: column %.64s is not a column of "
                     "the result", key[i]);
            goto fail;
        }
        m->midx[i] = j;
        m->mcols[i] = cols[j];
        m->mdel[i] = col_index(m->kcols, nsync_key, key[i]);
        if (deletes && m->mdel[i] == SIZE_MAX) {
            snprintf(err, errlen, "destination.kafka.key: column %.64s is not in the "
                     "sync's key: a deleted key's message needs it", key[i]);
            goto fail;
        }
    }
    return 0;
fail:
    zx_kmsg_free(m);
    return -1;
}

void zx_kmsg_free(zx_kmsg *m)
{
    free(m->mcols);
    free(m->midx);
    free(m->mdel);
    free(m->kv);
    free(m->kcols);
    zx_buf_free(&m->scratch);
    memset(m, 0, sizeof(*m));
}

/* One JSON object of vals over cols appended to out (the NDJSON line
 * without its '\n'). */
static int object(zx_kmsg *m, const zx_dcol *cols, size_t n, const zx_value *vals, zx_buf *out)
{
    size_t misfit = SIZE_MAX;
    if (zx_ndjson_row(out, cols, n, vals, &m->scratch, &m->nulled, &misfit) < 0)
        return -1;
    if (misfit != SIZE_MAX && !m->misfit)
        m->misfit = cols[misfit].name;
    if (out->len && out->p[out->len - 1] == '\n')
        out->p[--out->len] = '\0';
    return 0;
}

const zx_value *zx_kmsg_key_vals(zx_kmsg *m, const zx_value *vals)
{
    for (size_t i = 0; i < m->nkey; i++)
        m->kv[i] = vals[m->midx[i]];
    return m->kv;
}

const zx_value *zx_kmsg_key_del_vals(zx_kmsg *m, const zx_value *kvals)
{
    for (size_t i = 0; i < m->nkey; i++)
        m->kv[i] = m->mdel[i] == SIZE_MAX ? (zx_value){.type = ZX_T_NULL} : kvals[m->mdel[i]];
    return m->kv;
}

int zx_kmsg_key(zx_kmsg *m, const zx_value *vals, zx_buf *out)
{
    if (!m->nkey)
        return 0;
    return object(m, m->mcols, m->nkey, zx_kmsg_key_vals(m, vals), out);
}

int zx_kmsg_key_del(zx_kmsg *m, const zx_value *kvals, zx_buf *out)
{
    return object(m, m->mcols, m->nkey, zx_kmsg_key_del_vals(m, kvals), out);
}

int zx_kmsg_row(zx_kmsg *m, const zx_value *vals, zx_buf *out)
{
    return object(m, m->cols, m->ncols, vals, out);
}

void zx_kmsg_seq(const zx_kmsg_src *s, char out[33])
{
    snprintf(out, 33, "%020" PRIu64 "%012" PRIu64, s->run_id, s->pos % 1000000000000u);
}

static int str(zx_buf *out, const char *s)
{
    return zx_dc_json_quote(out, s ? s : "", s ? strlen(s) : 0, 1, 0);
}

int zx_kmsg_debezium(zx_kmsg *m, const zx_kmsg_src *s, char op, const zx_value *vals,
                     const zx_value *kvals, zx_buf *out)
{
    char seq[33];
    zx_kmsg_seq(s, seq);
    if (zx_buf_put(out, "{\"before\":", 10) < 0)
        return -1;
    if (op == 'd' ? object(m, m->kcols, m->nkcols, kvals, out) < 0
                  : zx_buf_put(out, "null", 4) < 0)
        return -1;
    if (zx_buf_put(out, ",\"after\":", 9) < 0)
        return -1;
    if (op == 'd' ? zx_buf_put(out, "null", 4) < 0 : object(m, m->cols, m->ncols, vals, out) < 0)
        return -1;
    if (zx_buf_printf(out, ",\"source\":{\"version\":\"zx\",\"connector\":\"zx\",\"name\":") < 0 ||
        str(out, s->sync) < 0 ||
        zx_buf_printf(out, ",\"ts_ms\":%" PRId64 ",\"snapshot\":\"false\",\"db\":\"zx\","
                      "\"table\":", s->ts_ms) < 0 ||
        str(out, s->topic) < 0 ||
        zx_buf_printf(out, ",\"run\":%" PRIu64 ",\"seq\":\"%s\"},\"op\":\"%c\",\"ts_ms\":%"
                      PRId64 ",\"transaction\":null}", s->run_id, seq, op, s->ts_ms) < 0)
        return -1;
    return 0;
}
