/*
 * entries.c — the checks of one pipeline or one connection once its
 * mapping is walked, that span several of its options: which options its
 * source (or kind) takes, metadata per source, the shared stream options;
 * then its plug-in's own check (conf/check.h); and, once the whole file is
 * walked, each pipeline's connection (connections may be written after the
 * pipelines using them).
 *
 * It must never: set an option from YAML (fields.c does), open anything,
 * or name a source or connection kind: what is one plug-in's is that
 * plug-in's check.
 */
#define ZX_CONF_INTERNAL
#include "conf/config.h"
#include "conf/plugin.h"
#include "conf/check_int.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Join the NULL-ended list l with sep into buf (truncated). */
void zx_cf_join(char *buf, size_t len, const char *const *l, const char *sep)
{
    size_t i, off = 0;

    buf[0] = '\0';
    for (i = 0; l && l[i] && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? sep : "",
                                l[i]);
}

/* 1 when plug-in pg takes connections of kind (not NULL), else 0. */
static int plugin_takes_kind(const zx_plugin *pg, const char *kind)
{
    for (size_t i = 0; kind && pg->conn_kinds && pg->conn_kinds[i]; i++)
        if (!strcmp(pg->conn_kinds[i], kind))
            return 1;
    return 0;
}

/* The metadata item nodes of a pipeline naming a column its source does not
 * fill (known to another source): an error each. */
static void check_metadata(zx_cf_ctx *x, const zx_conf_pipeline *pl,
                           const zx_plugin *src, const yaml_node_t *n)
{
    uint32_t ok = zx_cf_metadata_bits(src->metadata);
    yaml_node_item_t *it;
    char takes[200], others[100];

    if (!n || n->type != YAML_SEQUENCE_NODE)
        return;
    zx_cf_join(takes, sizeof(takes), src->metadata, ", ");
    for (it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        const yaml_node_t *in = zx_cf_node(x, *it);
        const char *v = zx_cf_scalar(in), *names[2] = {v, NULL};
        const char *srcs[8];
        size_t s, ns = 0;
        uint32_t bit = zx_cf_metadata_bits(names);
        if (!v || !bit || (bit & ok))
            continue;
        for (s = 0; s < zx_nplugins && ns < 7; s++)
            if (zx_plugins[s]->role == ZX_PLUGIN_SOURCE &&
                (zx_cf_metadata_bits(zx_plugins[s]->metadata) & bit))
                srcs[ns++] = zx_plugins[s]->name;
        srcs[ns] = NULL;
        zx_cf_join(others, sizeof(others), srcs, " or ");
        zx_cf_error_at(x, in, "pipelines.%s: metadata %s applies only to "
                       "source: %s (source: %s takes %s)", pl->name, v, others,
                       pl->source, takes);
    }
}

/* A stream (a source that takes `format`): format, mode, key_columns,
 * history, table and table_pattern agree (a plug-in's own options, such
 * as an encoding: its check). */
static void check_stream(zx_cf_ctx *x, zx_conf_pipeline *pl, const zx_cf_where *w)
{
    const char *entry = "pipelines.<name>";
    const yaml_node_t *n;
    int mirror = pl->format == ZX_FORMAT_DEBEZIUM || pl->stream_mode == ZX_STREAM_LATEST;
    if (pl->format == ZX_FORMAT_DEBEZIUM && pl->stream_mode == ZX_STREAM_LATEST)
        zx_cf_error_at(x, zx_cf_where_opt(w, entry, "mode"), "pipelines.%s: mode: latest is "
                       "for plain JSON; format: debezium keeps mirrors already (remove mode)",
                       pl->name);
    if (pl->stream_mode == ZX_STREAM_LATEST && !pl->nkey_columns)
        zx_cf_error_at(x, zx_cf_where_opt(w, entry, "mode"), "pipelines.%s: mode: latest "
                       "needs key_columns (the columns that identify a row)", pl->name);
    if ((n = zx_cf_where_opt(w, entry, "key_columns")) && !mirror)
        zx_cf_error_at(x, n, "pipelines.%s: key_columns applies only to mode: latest or "
                       "format: debezium", pl->name);
    if ((n = zx_cf_where_opt(w, entry, "history")) && pl->history && !mirror)
        zx_cf_error_at(x, n, "pipelines.%s: history applies only to mirrors (format: "
                       "debezium or mode: latest)", pl->name);
    if ((n = zx_cf_where_opt(w, entry, "metadata")) && pl->metadata && mirror)
        zx_cf_error_at(x, n, "pipelines.%s: metadata columns are for appended rows, not "
                       "mirrors (format: debezium, mode: latest)", pl->name);
    if (pl->table_pattern) {
        regex_t re;
        char why[160];
        int r = regcomp(&re, pl->table_pattern, REG_EXTENDED | REG_NOSUB);
        n = zx_cf_where_opt(w, entry, "table_pattern");
        if (r != 0) {
            regerror(r, &re, why, sizeof(why));
            zx_cf_error_at(x, n, "pipelines.%s: table_pattern is not a valid regular "
                           "expression (POSIX extended): %s", pl->name, why);
        } else {
            regfree(&re);
            if (!pl->table || !strchr(pl->table, '{'))
                zx_cf_error_at(x, n, "pipelines.%s: table_pattern applies only to a table "
                               "with placeholders (table: \"{source.table}\")", pl->name);
        }
    }
    if (pl->table && strchr(pl->table, '{') && pl->format != ZX_FORMAT_DEBEZIUM)
        zx_cf_error_at(x, zx_cf_where_opt(w, entry, "table"), "pipelines.%s: placeholders "
                       "in table (%s) need format: debezium", pl->name, pl->table);
    if (pl->table && !strchr(pl->table, '{') && pl->history && strlen(pl->table) > 54)
        zx_cf_error_at(x, zx_cf_where_opt(w, entry, "table"), "pipelines.%s: with history, "
                       "table is at most 54 characters (its __changes table must fit in 63)",
                       pl->name);
}

/* 1 when pipeline pl's source takes the option `name` of its entry. */
static int takes_option(const zx_conf_pipeline *pl, const char *name)
{
    size_t i = zx_cf_opt_index("pipelines.<name>", name);

    return i < zx_cf_nrows() && zx_cf_takes(zx_cf_row(i), pl->source);
}

/* A pipeline's default table: its name, '-' written '_', unless a table
 * was written (even a bad one, already reported), for the sources that
 * take one (or an unknown source: reported already). */
static void default_table(zx_cf_ctx *x, const yaml_node_t *kn, zx_conf_pipeline *pl,
                          const zx_cf_where *w, const zx_plugin *src)
{
    const char *entry = "pipelines.<name>";
    size_t i = zx_cf_opt_index(entry, "table");
    char *t;

    if (src && i < zx_cf_nrows() && !zx_cf_takes(zx_cf_row(i), pl->source))
        return;
    if (!pl->table && !zx_cf_where_opt(w, entry, "table") && zx_cf_name_ok(pl->name)) {
        pl->table = strdup(pl->name);
        if (!pl->table) {
            zx_cf_error_at(x, kn, "out of memory");
            return;
        }
        for (t = pl->table; *t; t++)
            if (*t == '-')
                *t = '_';
        if (!strncasecmp(pl->table, "sqlite_", 7))
            zx_cf_error_at(x, kn, "pipeline %s: its default table %s is reserved by SQLite "
                           "(names starting with sqlite_); set `table:`", pl->name, pl->table);
    }
}

/* The sub-sections of pipeline pl written with rows its source does not
 * take: another plug-in's own options (ZX_CF_OWN: not set into pl, so
 * that plug-in's check never sees them), or the sync's `destination` in a
 * stream.  An error each, once per sub-section of the pipeline, at that
 * sub-section, named by its first part ("destination" for
 * destination.files too): "<sub-section> applies only to source: <its
 * plug-ins>" or "... only to a reverse sync (direction: out)". */
static void check_own_sections(zx_cf_ctx *x, const zx_conf_pipeline *pl,
                               const zx_cf_where *w)
{
    const char *entry = "pipelines.<name>";
    size_t elen = strlen(entry), nrep = 0, r;
    char list[100], top[100], reported[8][100];

    for (size_t i = 0; i < w->n; i++) {
        const zx_cf_option *o = zx_cf_row(i);
        const yaml_node_t *sec;
        const char *sub = o->section + elen + 1, *dot;
        int tlen;
        if (strncmp(o->section, entry, elen) || o->section[elen] != '.' ||
            zx_cf_takes(o, pl->source))
            continue;
        /* a stream's forward: its destination's rows (conf/forward.c) */
        if (pl->forward && pl->dest_plugin && zx_cf_row_owner(o) == pl->dest_plugin)
            continue;
        dot = strchr(sub, '.');
        tlen = (int)(dot ? (size_t)(dot - sub) : strlen(sub));
        snprintf(top, sizeof(top), "%s.%.*s", entry, tlen, sub);
        sec = zx_cf_where_sec(w, top);
        if (!sec)
            sec = zx_cf_where_sec(w, o->section);
        for (r = 0; r < nrep && strcmp(reported[r], top); r++)
            ;
        if (!sec || r < nrep)
            continue;
        if (nrep < sizeof(reported) / sizeof(reported[0]))
            snprintf(reported[nrep++], sizeof(reported[0]), "%s", top);
        zx_cf_takers(o, list, sizeof(list), " or ");
        if (!strcmp(list, "sync"))
            zx_cf_error_at(x, sec, "pipelines.%s: %.*s applies only to a reverse sync "
                           "(direction: out)", pl->name, tlen, sub);
        else
            zx_cf_error_at(x, sec, "pipelines.%s: %.*s applies only to source: %s",
                           pl->name, tlen, sub, list);
    }
}

/* Checks of a pipeline once its mapping is walked: options its source does
 * not take (a plug-in's own sub-section too), required options of its
 * source, metadata, the default table; then its plug-in's check (e.g.
 * postgres: its mirrors, slot and publication). */
void zx_cf_check_pipeline(zx_cf_ctx *x, const yaml_node_t *kn,
                          zx_conf_pipeline *pl, const zx_cf_where *w)
{
    const char *entry = "pipelines.<name>";
    const zx_plugin *src = zx_plugin_of_pipeline(pl->source);
    size_t i;
    char list[100];

    for (i = 0; src && i < zx_cf_nrows(); i++) {
        const zx_cf_option *o = zx_cf_row(i);
        if (strcmp(o->section, entry) || !w->opt[i] || zx_cf_takes(o, pl->source))
            continue;
        zx_cf_takers(o, list, sizeof(list), " or ");
        if (!strcmp(list, "sync"))
            zx_cf_error_at(x, w->opt[i], "pipelines.%s: %s applies only to a "
                           "reverse sync (direction: out)", pl->name, o->name);
        else
            zx_cf_error_at(x, w->opt[i], "pipelines.%s: %s applies only to "
                           "source: %s", pl->name, o->name, list);
    }
    i = zx_cf_opt_index(entry, "metadata");
    if (src && i < zx_cf_nrows() && zx_cf_takes(zx_cf_row(i), pl->source))
        check_metadata(x, pl, src, zx_cf_where_opt(w, entry, "metadata"));
    if (src)
        check_own_sections(x, pl, w);
    /* the checks of a family of options, for the sources that take it
     * (their rows say which: no source is named here) */
    if (src && takes_option(pl, "format"))
        check_stream(x, pl, w);

    default_table(x, kn, pl, w, src);
    /* then its plug-in's own checks (conf/plugin.h), once its options and
     * the table are set; a source refused already has no plug-in */
    if (src && pl->plugin == src)
        zx_cf_run_check(x, kn, pl, w, src->check);
    /* and its destination plug-in's, when it wrote that one's sub-section
     * (a connection's table destination is known once connections are) */
    if (pl->dest_plugin && (zx_conf_is_sync(pl) || pl->forward))
        zx_cf_run_check(x, kn, pl, w, pl->dest_plugin->check);
}

/* The options and sub-sections (sasl, tls) of a connection that its kind
 * does not take: an error each (a sub-section once, at its node), and the
 * field cleared (a default such as `security: plaintext` belongs to its
 * kind only). */
static void check_kind_options(zx_cf_ctx *x, zx_conf_connection *cn,
                               const zx_cf_where *w)
{
    const char *entry = "connections.<name>", *reported = NULL;
    size_t i, elen = strlen(entry);
    char list[100];

    for (i = 0; i < w->n; i++) {
        const zx_cf_option *o = zx_cf_row(i);
        const yaml_node_t *sec;
        if (strncmp(o->section, entry, elen) || zx_cf_takes(o, cn->kind))
            continue;
        zx_cf_takers(o, list, sizeof(list), " or ");
        if (o->section[elen] == '.') {
            /* a sub-section written: once, at its node (its rows are
             * together in the table) */
            sec = zx_cf_where_sec(w, o->section);
            if (sec && (!reported || strcmp(reported, o->section)))
                zx_cf_error_at(x, sec, "connections.%s: %s applies only to "
                               "kind: %s", cn->name, o->section + elen + 1, list);
            reported = o->section;
        } else if (w->opt[i]) {
            zx_cf_error_at(x, w->opt[i], "connections.%s: %s applies only to "
                           "kind: %s", cn->name, o->name, list);
        }
        zx_cf_clear_field(o, cn);
    }
}

/* Checks of a connection once its mapping is walked: options of another
 * kind, then the check_connection of the plug-ins taking its kind
 * (conf/plugin.h). */
void zx_cf_check_connection(zx_cf_ctx *x, const yaml_node_t *kn,
                            zx_conf_connection *cn, const zx_cf_where *w)
{
    if (!cn->kind)   /* missing or refused, reported already */
        return;
    check_kind_options(x, cn, w);
    zx_cf_run_conn_checks(x, kn, cn, w);
}

/* Point each pipeline of a source with connections at its connection. */
void zx_cf_resolve_connections(zx_cf_ctx *x, zx_conf *c,
                               const yaml_node_t *const *conn_node)
{
    const char **names = calloc(c->nconnections + 1, sizeof(*names));
    size_t i, j;
    char known[512];

    if (!names) {
        zx_cf_error(x, 0, 0, "out of memory");
        return;
    }
    for (j = 0; j < c->nconnections; j++)
        names[j] = c->connections[j].name;
    zx_cf_join(known, sizeof(known), names, ", ");
    for (i = 0; i < c->npipelines; i++) {
        zx_conf_pipeline *p = &c->pipelines[i];
        const zx_plugin *src = zx_plugin_of_pipeline(p->source);
        const zx_conf_connection *cn;
        const yaml_node_t *n = conn_node ? conn_node[i] : NULL;
        const char *near;
        char kinds[100];
        if (!src || !src->conn_kinds || !src->conn_kinds[0] || !p->connection)
            continue;
        zx_cf_join(kinds, sizeof(kinds), src->conn_kinds, " or ");
        cn = zx_conf_find_connection(c, p->connection);
        if (!cn) {
            near = zx_cf_suggest(p->connection, names, c->nconnections);
            zx_cf_error(x, n ? zx_cf_line(n) : p->line, n ? zx_cf_col(n) : p->column,
                        "pipelines.%s: unknown connection '%.64s': %s%s%s%s%s",
                        p->name, p->connection,
                        c->nconnections ? "expected one of: " : "connections "
                        "defines none", known, near ? " (did you mean '" : "",
                        near ? near : "", near ? "'?)" : "");
        } else if (!plugin_takes_kind(src, cn->kind)) {
            zx_cf_error(x, n ? zx_cf_line(n) : p->line, n ? zx_cf_col(n) : p->column,
                        "pipelines.%s: connection %s is of kind: %s, but source: "
                        "%s needs kind: %s", p->name, cn->name,
                        cn->kind ? cn->kind : "(none)", p->source, kinds);
        } else {
            p->conn = cn;
        }
    }
    free(names);
}

/* What pipeline p holds upstream, on the database of its connection, that
 * no other pipeline may share: its plug-in's retire_subject (conf/plugin.h;
 * postgres: its replication slot), or NULL. */
static const char *held_subject(const zx_conf_pipeline *p)
{
    return p->plugin && p->plugin->retire_subject && p->conn ? p->plugin->retire_subject(p)
                                                             : NULL;
}

void zx_cf_check_slots(zx_cf_ctx *x, const zx_conf *c)
{
    size_t i, j;

    /* pairs: at most ZX_MAX_PIPELINES pipelines, a few hundred thousand
     * comparisons at worst.  The same database: the same connection, or
     * connections with the same dsn (as shown, so that a skipped secret
     * still compares). */
    for (i = 0; i < c->npipelines; i++) {
        const zx_conf_pipeline *p = &c->pipelines[i];
        const char *held = held_subject(p);
        if (!held)
            continue;
        for (j = 0; j < i; j++) {
            const zx_conf_pipeline *q = &c->pipelines[j];
            const char *qheld = held_subject(q);
            if (!qheld || q->plugin != p->plugin || strcmp(held, qheld) ||
                (p->conn != q->conn && (!p->conn->dsn_shown || !q->conn->dsn_shown ||
                                        strcmp(p->conn->dsn_shown, q->conn->dsn_shown))))
                continue;
            zx_cf_error(x, p->line, p->column, "pipeline %s: replication slot "
                        "%s is already the slot of pipeline %s (line %d) on "
                        "the same database; a slot serves one pipeline: set "
                        "`slot:` (and `publication:`) to another name",
                        p->name, held, q->name, q->line);
            break;
        }
    }
}
