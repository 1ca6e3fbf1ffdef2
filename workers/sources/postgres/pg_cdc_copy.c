/*
 * pg_cdc_copy.c — the initial copy of `source: postgres` (pg_cdc.c's
 * "copy:"): per table, from the slot's exported snapshot (pg_snapcopy.h),
 * a changes frame that empties the mirror (and makes it, with the
 * source's types and key; "cp" start: the writer may leave the key's
 * index out meanwhile), rows frames of its rows, then an empty changes
 * frame carrying the position "copy:<table>" ("cp" end: the index is
 * built); the stream starts once the last table is copied.  State in pg_cdc_state.h.
 *
 * It must never: start the stream before every copy is published, or
 * leave a table's "copy:" position out of its last frame.
 */
#include "workers/sources/postgres/pg_cdc_state.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "workers/sources/postgres/pg_values.h"

static int copy_types(cdc *c, pgcdc_table *t)
{
    uint32_t n = zx_pgc_ncols(c->copy);
    zx_frame_coltype *st = calloc(n + 1u, sizeof(*st));
    if (!st)
        return -1;
    uint32_t k = 0;
    for (; k < n; k++) {
        st[k].column = strdup(zx_pgc_colname(c->copy, k));
        st[k].type = strdup(zx_pgc_coldecl(c->copy, k));
        if (!st[k].column || !st[k].type) {
            free((char *)st[k].column);
            free((char *)st[k].type);
            break;
        }
    }
    if (k < n) {
        for (uint32_t i = 0; i < k; i++) {
            free((char *)st[i].column);
            free((char *)st[i].type);
        }
        free(st);
        return -1;
    }
    pgcdc_types_free(t);
    t->st = st;
    t->nst = n;
    return 0;
}

/* One step of the copy.  ZX_SRC_BUSY, _BLOCKED or _FATAL. */
int pgcdc_copy_step(cdc *c)
{
    if (!pgcdc_retry_kept(c))
        return ZX_SRC_BLOCKED;
    while (c->ci < c->nt && !c->t[c->ci].need_copy)
        c->ci++;
    if (c->ci >= c->nt) {
        zx_pgc_close(c->copy);
        c->copy = NULL;
        zx_info("event=copy_done pipeline=%s tables=%" PRIu64 " rows=%" PRIu64
                    " seconds=%.1f", c->p->name, c->copy_tables, c->copied,
                    (double)(zx_mono_ms() - c->copy_t0_ms) / 1000.0);
        return pgcdc_start_stream(c) < 0 ? ZX_SRC_FATAL : ZX_SRC_BUSY;
    }
    pgcdc_table *t = &c->t[c->ci];
    char err[600];
    zx_frame_meta m;
    if (c->cstage == 0) {
        /* the table's columns; a changes frame that makes or empties the mirror */
        if (zx_pgc_table(c->copy, t->schema, t->name, err, sizeof(err)) < 0) {
            snprintf(c->err, sizeof(c->err), "pipeline %s: initial copy of %s: %s", c->p->name,
                     t->qname, err);
            return ZX_SRC_FATAL;
        }
        if (copy_types(c, t) < 0)
            goto nomem;
        zx_rowset_reset(&c->crs);
        for (uint32_t i = 0; i < zx_pgc_ncols(c->copy); i++) {
            const char *n = zx_pgc_colname(c->copy, i);
            if (zx_rowset_column(&c->crs, n, strlen(n), zx_pgv_type(zx_pgc_coltype(c->copy, i))) < 0)
                goto nomem;
        }
        int64_t op = zx_rowset_column(&c->crs, ZX_CH_OP, strlen(ZX_CH_OP), ZX_T_TEXT);
        zx_value v = { .type = ZX_T_TEXT, .len = 8, .s = "truncate" };
        if (op < 0 || zx_rowset_begin_row(&c->crs) < 0 ||
            zx_rowset_add(&c->crs, (uint32_t)op, &v) < 0)
            goto nomem;
        zx_rowset_end_row(&c->crs);
        pgcdc_changes_meta(c, t, &m);
        m.history = 0;
        /* the key is the source's primary key or replica identity index
         * (pg_cdc_setup.c): unique and not null in the snapshot, so the
         * writer may build its index once the rows are in */
        m.copy = ZX_FRAME_COPY_START;
        if (pgcdc_publish(c, &m, &c->crs, 0, 0, NULL) < 0)
            return ZX_SRC_FATAL;
        zx_rowset_reset(&c->crs);
        c->cstage = 1;
        zx_info("event=copy_table pipeline=%s table=%s mirror=%s estimate=%" PRId64
                " format=%s", c->p->name, t->qname, t->mirror, t->estimate,
                zx_pgc_binary(c->copy) ? "binary" : "text");
        return ZX_SRC_BUSY;
    }
    if (c->cstage == 1 && c->gap_from && c->p->history && !t->gap_said) {
        /* the history's gap, once the mirror is made or emptied: one
         * change "gap" whose position is A..B */
        char a[PGO_LSN_LEN], b[PGO_LSN_LEN], ab[2 * PGO_LSN_LEN + 4];
        pgo_lsn_format(c->gap_from, a, sizeof(a));
        pgo_lsn_format(c->gap_to, b, sizeof(b));
        snprintf(ab, sizeof(ab), "%s..%s", a, b);
        zx_rowset_reset(&c->crs);
        int64_t op = zx_rowset_column(&c->crs, ZX_CH_OP, strlen(ZX_CH_OP), ZX_T_TEXT);
        int64_t lc = zx_rowset_column(&c->crs, ZX_CH_LSN, strlen(ZX_CH_LSN), ZX_T_TEXT);
        zx_value gv = { .type = ZX_T_TEXT, .len = 3, .s = "gap" };
        zx_value lv = { .type = ZX_T_TEXT, .len = strlen(ab), .s = ab };
        if (op < 0 || lc < 0 || zx_rowset_begin_row(&c->crs) < 0 ||
            zx_rowset_add(&c->crs, (uint32_t)op, &gv) < 0 ||
            zx_rowset_add(&c->crs, (uint32_t)lc, &lv) < 0)
            goto nomem;
        zx_rowset_end_row(&c->crs);
        pgcdc_changes_meta(c, t, &m);
        if (pgcdc_publish(c, &m, &c->crs, 0, 0, NULL) < 0)
            return ZX_SRC_FATAL;
        zx_rowset_reset(&c->crs);
        t->gap_said = 1;
        zx_warn("event=history_gap pipeline=%s table=%s mirror=%s from=%s to=%s", c->p->name,
                t->qname, t->mirror, a, b);
        return ZX_SRC_BUSY;
    }
    if (c->cstage == 1) {
        /* rows, as a rows frame of about a quarter of the ring */
        zx_rowset_reset(&c->crs);
        int done = 0;
        while (zx_frame_estimate(&c->crs) < c->batch_max) {
            int64_t n = zx_pgc_read(c->copy, &c->crs, 2000, err, sizeof(err));
            if (n < 0) {
                snprintf(c->err, sizeof(c->err), "pipeline %s: initial copy of %s: %s",
                         c->p->name, t->qname, err);
                return ZX_SRC_FATAL;
            }
            if (n == 0) {
                done = 1;
                break;
            }
        }
        if (c->crs.nrows) {
            memset(&m, 0, sizeof(m));
            m.kind = ZX_FRAME_ROWS;
            m.table = t->mirror;
            m.ingested_at_us = zx_now_us();
            m.accepted = c->crs.nrows;
            /* a mirror's rows: keyed where they are forwarded */
            m.key_cols = (const char *const *)t->keys;
            m.nkey_cols = t->nkeys;
            if (pgcdc_publish(c, &m, &c->crs, 0, 0, NULL) < 0)
                return ZX_SRC_FATAL;
            c->copied += c->crs.nrows;
            zx_rowset_reset(&c->crs);
        }
        if (done)
            c->cstage = 2;
        pgcdc_status(c, 0);
        return ZX_SRC_BUSY;
    }
    /* the end: an empty changes frame carrying "copy:<table>" */
    char part[400];
    snprintf(part, sizeof(part), "%s%s", PGCDC_PART_COPY, t->qname);
    zx_rowset_reset(&c->crs);
    pgcdc_changes_meta(c, t, &m);
    m.history = 0;
    m.copy = ZX_FRAME_COPY_END;
    if (pgcdc_publish(c, &m, &c->crs, 0, 0, part) < 0)
        return ZX_SRC_FATAL;
    t->need_copy = 0;
    c->ci++;
    c->cstage = 0;
    return ZX_SRC_BUSY;
nomem:
    snprintf(c->err, sizeof(c->err), "pipeline %s: out of memory copying %s", c->p->name,
             t->qname);
    return ZX_SRC_FATAL;
}
