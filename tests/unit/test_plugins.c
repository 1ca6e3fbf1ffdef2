/*
 * test_plugins.c — the plug-in registry (conf/plugin.h, workers/plugins.c)
 * is the one list: every source, destination, connection kind and file
 * format that conf/, the supervisor and zxctl know comes from it, and
 * every option row (core or a plug-in's) is documented.
 *
 * Covers: each plug-in is well formed and found by zx_plugin_find; the
 * workers' registries (zx_source_find, zx_source_tester, zx_dest_find)
 * answer from it; the values the loader takes for `source:` and `kind:`
 * are exactly the plug-ins' (every plug-in accepted by a real load, a name
 * that is none refused); the lists rows name (`sources`) hold only
 * plug-ins' names and kinds; the metadata columns, the table kinds and
 * the files formats are the plug-ins'; every row and section has help
 * text and every plug-in its paragraph.
 *
 * Temporary files go to a mkdtemp directory, removed at the end.  It must
 * never: depend on timing, or on a server.
 */
#define ZX_CONF_INTERNAL        /* the rows, the sections, the derived lists */
#include "conf/config.h"
#include "conf/plugin.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/files/files_formats.h"
#include "workers/sources/kafka/kafka_opts.h" /* kafka's own options */
#include "workers/sources/source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
static char tmpdir[64];

#define CHECK(c) do {                                                     \
        if (!(c)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,        \
                    __LINE__, #c);                                        \
            failures++;                                                   \
        }                                                                 \
    } while (0)

#define CHECKF(c, ...) do {                                               \
        if (!(c)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__,        \
                    __LINE__, #c);                                        \
            fprintf(stderr, __VA_ARGS__);                                 \
            fputc('\n', stderr);                                          \
            failures++;                                                   \
        }                                                                 \
    } while (0)

static int listed(const char *const *l, const char *name)
{
    for (size_t i = 0; l && l[i]; i++)
        if (!strcmp(l[i], name))
            return 1;
    return 0;
}

static size_t count(const char *const *l)
{
    size_t n = 0;

    while (l && l[n])
        n++;
    return n;
}

/* 1 when some plug-in takes connection kind k. */
static int plugin_kind(const char *k)
{
    for (size_t i = 0; i < zx_nplugins; i++)
        if (listed(zx_plugins[i]->conn_kinds, k))
            return 1;
    return 0;
}

static const zx_cf_option *row_named(const char *section, const char *name)
{
    size_t i = zx_cf_opt_index(section, name);

    return i == SIZE_MAX ? NULL : zx_cf_row(i);
}

/* Each plug-in: named, of a role, with its worker or destination of the
 * same name, documented, found; no two of one role share a name. */
static void test_registry(void)
{
    size_t nsrc = 0, nsync = 0;

    CHECK(zx_nplugins > 0);
    for (size_t i = 0; i < zx_nplugins; i++) {
        const zx_plugin *p = zx_plugins[i];
        CHECK(p && p->name && p->name[0]);
        if (!p || !p->name)
            continue;
        CHECKF(p->role == ZX_PLUGIN_SOURCE || p->role == ZX_PLUGIN_DESTINATION ||
               p->role == ZX_PLUGIN_SYNC, "%s", p->name);
        CHECKF(p->doc && strlen(p->doc) > 10, "plug-in %s has no doc", p->name);
        CHECKF(zx_plugin_find(p->role, p->name) == p, "%s is not the one found", p->name);
        CHECKF(p->retire == NULL || p->role == ZX_PLUGIN_SOURCE, "%s", p->name);
        CHECKF(!(p->caps & ZX_PLUGIN_VERIFY) || p->role == ZX_PLUGIN_SOURCE,
               "%s: only a source verifies", p->name);
        CHECKF(!p->noptions || p->options, "%s", p->name);
        for (size_t j = 0; j < p->noptions; j++)
            CHECKF(!(p->options[j].flags & ZX_CF_OWN) || p->opts_size,
                   "%s: row %s is ZX_CF_OWN but it has no own struct", p->name,
                   p->options[j].name);
        if (p->role == ZX_PLUGIN_SYNC) {
            nsync++;
            CHECKF(!strcmp(p->name, "sync"), "the sync plug-in is called %s", p->name);
            CHECKF(p->source && !strcmp(p->source->name, p->name), "%s", p->name);
            CHECKF(!p->dest && !p->conn_kinds && !p->metadata && !p->caps && !p->test,
                   "%s: the sync is no source", p->name);
            CHECKF(zx_plugin_of_pipeline(p->name) == p, "zx_plugin_of_pipeline(%s)", p->name);
            CHECKF(!zx_plugin_find(ZX_PLUGIN_SOURCE, p->name), "%s is a source", p->name);
            CHECKF(zx_source_find(p->name) == p->source, "zx_source_find(%s)", p->name);
        } else if (p->role == ZX_PLUGIN_SOURCE) {
            nsrc++;
            CHECKF(zx_plugin_of_pipeline(p->name) == p, "zx_plugin_of_pipeline(%s)", p->name);
            CHECKF(p->source && !strcmp(p->source->name, p->name), "%s", p->name);
            CHECKF(!p->dest, "%s", p->name);
            CHECKF(zx_source_find(p->name) == p->source, "zx_source_find(%s)", p->name);
            CHECKF(zx_source_tester(p->name) == p->test, "zx_source_tester(%s)", p->name);
        } else {
            CHECKF(p->dest && !strcmp(p->dest->name, p->name), "%s", p->name);
            CHECKF(!p->source && !p->metadata, "%s", p->name);
            CHECKF(zx_dest_find(p->name) == p->dest, "zx_dest_find(%s)", p->name);
        }
        for (size_t j = i + 1; j < zx_nplugins; j++)
            CHECKF(zx_plugins[j]->role != p->role || strcmp(zx_plugins[j]->name, p->name),
                   "two plug-ins called %s", p->name);
    }
    CHECK(nsrc > 0);
    CHECK(nsync == 1);   /* the plug-in of every direction: out pipeline */
    CHECK(zx_plugin_of_pipeline(NULL) == NULL);
    CHECK(zx_plugin_of_pipeline("no_such_source") == NULL);
    CHECK(zx_plugin_find(ZX_PLUGIN_SOURCE, "no_such_source") == NULL);
    CHECK(zx_plugin_find(ZX_PLUGIN_SOURCE, NULL) == NULL);
    CHECK(zx_source_find("no_such_source") == NULL);
    CHECK(zx_dest_find("no_such_destination") == NULL);
    CHECK(zx_source_tester("no_such_source") == NULL);
}

/* The lists the loader takes values from are the plug-ins': `source:`,
 * `kind:`, the sources taking `connection`, the kinds `read_only` applies
 * to; and every name a row's `sources` holds is a plug-in's name or kind. */
static void test_lists(void)
{
    const zx_cf_option *src = row_named("pipelines.<name>", "source");
    const zx_cf_option *kind = row_named("connections.<name>", "kind");
    const zx_cf_option *conn = row_named("pipelines.<name>", "connection");
    const zx_cf_option *ro = row_named("connections.<name>", "read_only");
    size_t nsrc = 0;
    char buf[200];

    zx_cf_derive();
    CHECK(src && kind && conn && ro);
    if (!src || !kind || !conn || !ro)
        return;
    for (size_t i = 0; i < zx_nplugins; i++) {
        const zx_plugin *p = zx_plugins[i];
        if (p->role == ZX_PLUGIN_SYNC) {
            /* `source: sync` is known (answered "write direction: out") */
            nsrc++;
            CHECKF(listed(src->allowed, p->name), "source %s", p->name);
            CHECKF(!listed(conn->sources, p->name), "connection of %s", p->name);
        }
        if (p->role == ZX_PLUGIN_SOURCE) {
            nsrc++;
            CHECKF(listed(src->allowed, p->name), "source %s", p->name);
            CHECKF(listed(conn->sources, p->name) == (count(p->conn_kinds) > 0),
                   "connection of source %s", p->name);
        }
        for (size_t k = 0; p->conn_kinds && p->conn_kinds[k]; k++) {
            CHECKF(listed(kind->allowed, p->conn_kinds[k]), "kind %s", p->conn_kinds[k]);
            CHECKF(zx_cf_conn_kind_ok(p->conn_kinds[k]), "kind %s", p->conn_kinds[k]);
            if (p->role == ZX_PLUGIN_DESTINATION && p->dest_where) {
                /* a sub-section's catalogs: not table destinations */
                CHECKF(!zx_plugin_for_kind(ZX_PLUGIN_DESTINATION, p->conn_kinds[k]),
                       "catalog kind %s taken as a table destination", p->conn_kinds[k]);
            } else if (p->role == ZX_PLUGIN_DESTINATION) {
                CHECKF(listed(ro->sources, p->conn_kinds[k]), "read_only %s",
                       p->conn_kinds[k]);
                CHECKF(zx_plugin_for_kind(ZX_PLUGIN_DESTINATION, p->conn_kinds[k]),
                       "%s", p->conn_kinds[k]);
                CHECKF(strstr(zx_plugin_kinds(ZX_PLUGIN_DESTINATION, buf, sizeof(buf)),
                              p->conn_kinds[k]), "%s", p->conn_kinds[k]);
            }
        }
    }
    CHECK(count(src->allowed) == nsrc);
    for (size_t i = 0; src->allowed[i]; i++)
        CHECKF(zx_plugin_of_pipeline(src->allowed[i]), "%s", src->allowed[i]);
    for (size_t i = 0; kind->allowed[i]; i++)
        CHECKF(plugin_kind(kind->allowed[i]), "kind %s", kind->allowed[i]);
    for (size_t i = 0; ro->sources[i]; i++)
        CHECKF(zx_plugin_for_kind(ZX_PLUGIN_DESTINATION, ro->sources[i]), "%s",
               ro->sources[i]);
    CHECK(!zx_cf_conn_kind_ok("no_such_kind"));
    CHECK(!zx_plugin_for_kind(ZX_PLUGIN_DESTINATION, "kafka"));

    /* every name in a row's `sources`: a source plug-in or the sync
     * (pipeline rows) or a plug-in's connection kind (connection rows) */
    for (size_t i = 0; i < zx_cf_nrows(); i++) {
        const zx_cf_option *o = zx_cf_row(i);
        int target = zx_cf_target(o->section);
        for (size_t j = 0; o->sources && o->sources[j]; j++) {
            if (target == ZX_CF_CONNECTION)
                CHECKF(plugin_kind(o->sources[j]), "%s.%s: kind %s", o->section, o->name,
                       o->sources[j]);
            else
                CHECKF(zx_plugin_of_pipeline(o->sources[j]), "%s.%s: source %s",
                       o->section, o->name, o->sources[j]);
        }
        /* a plug-in's rows are in sections the loader knows */
        CHECKF(target >= 0, "%s.%s: no such section", o->section, o->name);
    }
}

/* The names of the source plug-ins with cap, in registry order (kinds:
 * the connection kinds of the plug-ins of any role with cap, each once),
 * into out (n slots, NULL-ended); returns the count. */
static size_t with_cap(unsigned cap, int kinds, const char **out, size_t n)
{
    size_t m = 0;

    out[0] = NULL;
    for (size_t i = 0; i < zx_nplugins; i++) {
        const zx_plugin *p = zx_plugins[i];
        if (!(p->caps & cap))
            continue;
        if (!kinds && p->role == ZX_PLUGIN_SOURCE && m + 1 < n) {
            out[m++] = p->name;
            out[m] = NULL;
        }
        for (size_t k = 0; kinds && p->conn_kinds && p->conn_kinds[k]; k++)
            if (!listed(out, p->conn_kinds[k]) && m + 1 < n) {
                out[m++] = p->conn_kinds[k];
                out[m] = NULL;
            }
    }
    return m;
}

/* l holds exactly want's names, in its order. */
static int same_list(const char *const *l, const char *const *want)
{
    size_t i;

    for (i = 0; l && l[i] && want[i]; i++)
        if (strcmp(l[i], want[i]))
            return 0;
    return l && !l[i] && !want[i];
}

/* The core rows several plug-ins share take exactly the plug-ins of a
 * capability (zx_plugin.caps), their lists derived from the registry (the
 * same array, not a copy): the stream rows, history, max_parked_bytes,
 * and a connection's dsn. */
static void test_caps(void)
{
    static const struct { const char *section, *name; unsigned cap; int kinds;
                          const char *const *list; } rows[] = {
        {"pipelines.<name>", "table", ZX_PLUGIN_STREAM, 0, zx_cf_stream_sources},
        {"pipelines.<name>", "max_tables", ZX_PLUGIN_STREAM, 0, zx_cf_stream_sources},
        {"pipelines.<name>", "table_pattern", ZX_PLUGIN_STREAM, 0, zx_cf_stream_sources},
        {"pipelines.<name>", "format", ZX_PLUGIN_STREAM, 0, zx_cf_stream_sources},
        {"pipelines.<name>", "mode", ZX_PLUGIN_STREAM, 0, zx_cf_stream_sources},
        {"pipelines.<name>", "key_columns", ZX_PLUGIN_STREAM, 0, zx_cf_stream_sources},
        {"pipelines.<name>", "metadata", ZX_PLUGIN_STREAM, 0, zx_cf_stream_sources},
        {"pipelines.<name>", "max_columns", ZX_PLUGIN_STREAM, 0, zx_cf_stream_sources},
        {"pipelines.<name>", "history", ZX_PLUGIN_MIRROR, 0, zx_cf_mirror_sources},
        {"pipelines.<name>", "max_parked_bytes", ZX_PLUGIN_PARK, 0, zx_cf_park_sources},
        {"connections.<name>", "dsn", ZX_PLUGIN_DSN, 1, zx_cf_dsn_kinds},
    };
    const char *want[65];

    zx_cf_derive();
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        const zx_cf_option *o = row_named(rows[r].section, rows[r].name);
        CHECKF(o && o->sources == rows[r].list, "%s.%s: its sources are not the derived list",
               rows[r].section, rows[r].name);
        CHECKF(with_cap(rows[r].cap, rows[r].kinds, want, 65) > 0,
               "no plug-in has the capability of %s", rows[r].name);
        CHECKF(o && same_list(o->sources, want), "%s.%s: takers are not the plug-ins'",
               rows[r].section, rows[r].name);
    }
    /* the lists as the loader sees them: a source of the capability takes
     * the row, one without does not */
    for (size_t i = 0; i < zx_nplugins; i++) {
        const zx_plugin *p = zx_plugins[i];
        if (p->role != ZX_PLUGIN_SOURCE)
            continue;
        CHECKF(zx_cf_takes(row_named("pipelines.<name>", "format"), p->name) ==
               !!(p->caps & ZX_PLUGIN_STREAM), "format, %s", p->name);
        CHECKF(zx_cf_takes(row_named("pipelines.<name>", "history"), p->name) ==
               !!(p->caps & ZX_PLUGIN_MIRROR), "history, %s", p->name);
        CHECKF(zx_cf_takes(row_named("pipelines.<name>", "max_parked_bytes"), p->name) ==
               !!(p->caps & ZX_PLUGIN_PARK), "max_parked_bytes, %s", p->name);
    }
    /* kinds reached by a dsn: not sqlite (a path) nor kafka (brokers) */
    CHECK(listed(zx_cf_dsn_kinds, "postgres") && listed(zx_cf_dsn_kinds, "mysql"));
    CHECK(!listed(zx_cf_dsn_kinds, "sqlite") && !listed(zx_cf_dsn_kinds, "kafka"));
}

/* The distinct names ([a-z_]+) text holds between pre and post, in the
 * order met, into out (n slots, NULL-ended); returns the count. */
static size_t tokens(const char *text, const char *pre, const char *post, const char **out,
                     size_t n, char *store, size_t storelen)
{
    size_t m = 0, used = 0;

    out[0] = NULL;
    for (const char *t = text; t && (t = strstr(t, pre)); ) {
        t += strlen(pre);
        size_t len = strspn(t, "abcdefghijklmnopqrstuvwxyz_0123456789");
        if (!len || strncmp(t + len, post, strlen(post)) || used + len + 1 > storelen)
            continue;
        memcpy(store + used, t, len);
        store[used + len] = '\0';
        if (!listed(out, store + used) && m + 1 < n) {
            out[m++] = store + used;
            out[m] = NULL;
            used += len + 1;
        }
    }
    return m;
}

/* a and b hold the same names, in any order. */
static int same_set(const char *const *a, const char *const *b)
{
    for (size_t i = 0; a[i]; i++)
        if (!listed(b, a[i]))
            return 0;
    return count(a) == count(b);
}

/* "`a`, `b` or `c`" (q: the quote around each name) after pre, from l. */
static const char *spoken(char *buf, size_t len, const char *pre, const char *const *l,
                          const char *q)
{
    size_t off = (size_t)snprintf(buf, len, "%s", pre), n = count(l);

    for (size_t i = 0; i < n && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s%s%s",
                                !i ? "" : i + 1 == n ? " or " : ", ", q, l[i], q);
    return buf;
}

static const char *section_help(const char *path)
{
    for (size_t s = 0; s < zx_cf_nsections; s++)
        if (!strcmp(zx_cf_sections[s].path, path))
            return zx_cf_sections[s].help;
    return NULL;
}

static const zx_cf_option *plugin_row(zx_plugin_role role, const char *plugin,
                                      const char *name)
{
    const zx_plugin *p = zx_plugin_find(role, plugin);

    for (size_t i = 0; p && i < p->noptions; i++)
        if (!strcmp(p->options[i].name, name))
            return &p->options[i];
    return NULL;
}

/* The help texts that name sources, kinds or file formats name exactly the
 * registry's (they are static: this proves them true). */
static void test_help_names(void)
{
    const char *got[65], *want[65];
    char store[1024], buf[300];
    const char *h;

    zx_cf_derive();
    /* pipelines.<name>: every stream source (a reverse sync, the plug-in
     * of role ZX_PLUGIN_SYNC, is `direction: out` and writes no `source:`) */
    size_t n = 0;
    for (size_t i = 0; i < zx_nplugins; i++)
        if (zx_plugins[i]->role == ZX_PLUGIN_SOURCE)
            want[n++] = zx_plugins[i]->name;
    want[n] = NULL;
    h = section_help("pipelines.<name>");
    tokens(h, "`source: ", "`", got, 65, store, sizeof(store));
    CHECKF(h && same_set(got, want), "pipelines.<name> does not name every source: %s",
           h ? h : "");
    CHECK(h && strstr(h, "`direction: out`"));

    /* connections.<name>: every kind, and the sources that take one */
    h = section_help("connections.<name>");
    tokens(h, "`kind: ", "`", got, 65, store, sizeof(store));
    CHECKF(h && same_set(got, zx_cf_conn_kinds), "connections.<name>: kinds: %s", h ? h : "");
    tokens(h, "`source: ", "`", got, 65, store, sizeof(store));
    CHECKF(h && same_set(got, zx_cf_conn_sources), "connections.<name>: sources: %s",
           h ? h : "");

    /* kind: each kind described ("`kafka`: ...") */
    h = row_named("connections.<name>", "kind")->help;
    tokens(h, "`", "`:", got, 65, store, sizeof(store));
    CHECKF(same_set(got, zx_cf_conn_kinds), "kind: %s", h);

    /* connection: "`kafka` for `kafka`", the kinds of each source */
    h = row_named("pipelines.<name>", "connection")->help;
    n = 0;
    for (size_t i = 0; i < zx_nplugins; i++)
        for (size_t k = 0; zx_plugins[i]->role == ZX_PLUGIN_SOURCE &&
                           zx_plugins[i]->conn_kinds && zx_plugins[i]->conn_kinds[k]; k++) {
            snprintf(buf, sizeof(buf), "`%s` for `%s`", zx_plugins[i]->conn_kinds[k],
                     zx_plugins[i]->name);
            CHECKF(strstr(h, buf), "connection: no %s: %s", buf, h);
            n++;
        }
    size_t pairs = 0;
    for (const char *t = h; (t = strstr(t, "` for `")); t++)
        pairs++;
    CHECKF(pairs == n, "connection: %zu pairs, the plug-ins have %zu: %s", pairs, n, h);

    /* the table destinations' kinds */
    spoken(buf, sizeof(buf), "kind ", zx_cf_table_kinds, "`");   /* "kind `a`, ..." */
    h = section_help("pipelines.<name>.destination");
    CHECKF(h && strstr(h, buf), "pipelines.<name>.destination does not say %s: %s", buf,
           h ? h : "");
    const zx_cf_option *dc = plugin_row(ZX_PLUGIN_SYNC, "sync", "connection");
    CHECKF(dc && strstr(dc->help, buf), "destination.connection does not say %s", buf);

    /* the files formats: the plug-in's doc and its format row */
    const zx_plugin *f = zx_plugin_find(ZX_PLUGIN_DESTINATION, "files");
    spoken(buf, sizeof(buf), "", zx_file_format_names, "`");
    CHECKF(f && strstr(f->doc, buf), "files doc does not say %s", buf);
    const zx_cf_option *fr = plugin_row(ZX_PLUGIN_DESTINATION, "files", "format");
    tokens(fr ? fr->help : NULL, "`", "`", got, 65, store, sizeof(store));
    CHECKF(fr && same_set(got, zx_file_format_names), "files format: %s", fr ? fr->help : "");
    CHECK(!strcmp(zx_file_format_list(buf, sizeof(buf)), "csv, json or parquet") ||
          count(zx_file_format_names) != 3);
}

/* The metadata columns: each a source plug-in fills is one the loader
 * knows, and each it knows some source plug-in fills. */
static void test_metadata(void)
{
    const zx_cf_option *m = row_named("pipelines.<name>", "metadata");

    CHECK(m && m->allowed);
    if (!m || !m->allowed)
        return;
    for (size_t i = 0; i < zx_nplugins; i++)
        for (size_t j = 0; zx_plugins[i]->metadata && zx_plugins[i]->metadata[j]; j++)
            CHECKF(listed(m->allowed, zx_plugins[i]->metadata[j]), "%s: %s",
                   zx_plugins[i]->name, zx_plugins[i]->metadata[j]);
    for (size_t j = 0; m->allowed[j]; j++) {
        int filled = 0;
        for (size_t i = 0; i < zx_nplugins; i++)
            filled |= zx_plugins[i]->role == ZX_PLUGIN_SOURCE &&
                      listed(zx_plugins[i]->metadata, m->allowed[j]);
        CHECKF(filled, "metadata %s is no source's", m->allowed[j]);
        const char *one[2] = {m->allowed[j], NULL};
        CHECK(zx_cf_metadata_bits(one) == 1u << j);
    }
}

/* The files formats: the files plug-in's `format` row allows exactly the
 * table's names, and each extension maps back to its format. */
static void test_formats(void)
{
    const zx_plugin *f = zx_plugin_find(ZX_PLUGIN_DESTINATION, "files");
    const zx_cf_option *row = NULL;

    CHECK(f);
    for (size_t i = 0; f && i < f->noptions; i++)
        if (!strcmp(f->options[i].name, "format"))
            row = &f->options[i];
    CHECK(row && row->allowed == zx_file_format_names);
    size_t n = 0;
    for (; zx_file_formats[n].name; n++) {
        const zx_file_format *ff = &zx_file_formats[n];
        CHECK(zx_file_format_find(ff->name) == &zx_file_formats[n]);
        CHECK(listed(zx_file_format_names, ff->name));
        CHECK(ff->exts && ff->exts[0]);
        for (size_t e = 0; ff->exts && ff->exts[e]; e++) {
            char path[64];
            const zx_file_format *got = NULL;
            snprintf(path, sizeof(path), "/x/out%s", ff->exts[e]);
            CHECKF(zx_file_ext_of(path, &got) && got == &zx_file_formats[n], "%s", path);
        }
    }
    CHECK(n == count(zx_file_format_names));
    CHECK(zx_file_format_find("xlsx") == NULL);
    CHECK(zx_file_ext_of("/x/out.xlsx", NULL) == NULL);
}

/* Every row (core and each plug-in's) has help text, every section too. */
static void test_help(void)
{
    size_t n = zx_cf_nrows();

    CHECK(n > zx_cf_noptions);   /* the plug-ins' rows are rows */
    for (size_t i = 0; i < n; i++) {
        const zx_cf_option *o = zx_cf_row(i);
        const zx_plugin *p = zx_cf_row_owner(o);
        CHECKF(o->help && strlen(o->help) >= 10, "option %s.%s%s%s has no help text",
               o->section, o->name, p ? " of plug-in " : "", p ? p->name : "");
    }
    for (size_t s = 0; s < zx_cf_nsections; s++)
        CHECKF(zx_cf_sections[s].help && zx_cf_sections[s].help[0], "section %s",
               zx_cf_sections[s].path);
}

static const char *write_file(const char *name, const char *text)
{
    static char path[128];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    f = fopen(path, "w");
    if (!f)
        return NULL;
    fputs(text, f);
    fclose(f);
    return path;
}

/* 1 when an error of errs contains s. */
static int said(const zx_conf_errors *e, const char *s)
{
    for (size_t i = 0; i < e->n; i++)
        if (strstr(e->msgs[i], s))
            return 1;
    return 0;
}

/* The loader: a pipeline of each source plug-in and a connection of each
 * kind are taken (their values not refused: other errors, of options they
 * need, may come), and a name that is no plug-in's is refused. */
static void test_loader(void)
{
    char yaml[8192];
    size_t off = 0;
    zx_conf_errors errs = {0};

    off += (size_t)snprintf(yaml + off, sizeof(yaml) - off, "connections:\n");
    for (size_t i = 0; i < zx_nplugins; i++)
        for (size_t k = 0; zx_plugins[i]->conn_kinds && zx_plugins[i]->conn_kinds[k]; k++)
            off += (size_t)snprintf(yaml + off, sizeof(yaml) - off,
                                    "  c%zu_%zu:\n    kind: %s\n", i, k,
                                    zx_plugins[i]->conn_kinds[k]);
    off += (size_t)snprintf(yaml + off, sizeof(yaml) - off,
                            "  cbad:\n    kind: no_such_kind\npipelines:\n");
    for (size_t i = 0; i < zx_nplugins; i++)
        if (zx_plugins[i]->role == ZX_PLUGIN_SOURCE)
            off += (size_t)snprintf(yaml + off, sizeof(yaml) - off,
                                    "  p%zu:\n    direction: stream\n    source: %s\n", i,
                                    zx_plugins[i]->name);
    snprintf(yaml + off, sizeof(yaml) - off,
             "  pbad:\n    direction: stream\n    source: no_such_source\n");
    const char *path = write_file("plugins.yaml", yaml);
    CHECK(path);
    if (!path)
        return;
    zx_conf *c = zx_conf_load(path, 0, &errs);
    CHECK(c == NULL);
    zx_conf_free(c);
    CHECK(said(&errs, "invalid source 'no_such_source'"));
    CHECK(said(&errs, "invalid kind 'no_such_kind'"));
    for (size_t i = 0; i < zx_nplugins; i++) {
        char what[128];
        snprintf(what, sizeof(what), "invalid source '%s'", zx_plugins[i]->name);
        CHECKF(!said(&errs, what), "%s", what);
        for (size_t k = 0; zx_plugins[i]->conn_kinds && zx_plugins[i]->conn_kinds[k]; k++) {
            snprintf(what, sizeof(what), "invalid kind '%s'", zx_plugins[i]->conn_kinds[k]);
            CHECKF(!said(&errs, what), "%s", what);
        }
    }
    if (failures)
        for (size_t i = 0; i < errs.n; i++)
            fprintf(stderr, "    got: %s\n", errs.msgs[i]);
    zx_conf_errors_free(&errs);
    unlink(path);
}

static zx_conf *load_text(const char *name, const char *text)
{
    const char *path = write_file(name, text);
    zx_conf_errors errs = {0};
    zx_conf *c = path ? zx_conf_load(path, 0, &errs) : NULL;

    CHECKF(c != NULL, "%s", name);
    for (size_t i = 0; i < errs.n; i++)
        fprintf(stderr, "    got: %s\n", errs.msgs[i]);
    zx_conf_errors_free(&errs);
    if (path)
        unlink(path);
    return c;
}

#define KAFKA_HEAD "connections:\n  k:\n    kind: kafka\n    brokers: [\"h:9092\"]\n" \
    "pipelines:\n  a:\n    direction: stream\n    source: kafka\n    connection: k\n" \
    "    topic: t\n"

/* A pipeline's plug-in and its own options: kafka's `start` is set into
 * its own struct (ZX_CF_OWN), the plug-in resolved; a pipeline that
 * differs only there is not the same for a reload, one equal in all is. */
static void test_own(void)
{
    zx_conf *c1 = load_text("own1.yaml", KAFKA_HEAD
                            "  h:\n    direction: stream\n    source: http\n"
                            "    key: abcdefghijklmnop\n");
    zx_conf *c2 = load_text("own2.yaml", KAFKA_HEAD "    start: new\n");
    zx_conf *c3 = load_text("own3.yaml", KAFKA_HEAD "    start: oldest\n");
    zx_conf *c4 = load_text("own4.yaml", KAFKA_HEAD "    group: g\n");
    const zx_plugin *k = zx_plugin_find(ZX_PLUGIN_SOURCE, "kafka");

    if (c1 && c2 && c3) {
        const zx_conf_pipeline *a1 = zx_conf_find(c1, "a"), *h = zx_conf_find(c1, "h");
        const zx_conf_pipeline *a2 = zx_conf_find(c2, "a"), *a3 = zx_conf_find(c3, "a");
        CHECK(a1 && a2 && a3 && h);
        if (a1 && a2 && a3 && h) {
            CHECK(a1->plugin == k && a2->plugin == k && a3->plugin == k);
            CHECK(h->plugin == zx_plugin_find(ZX_PLUGIN_SOURCE, "http"));
            CHECK(a1->own && a2->own && a3->own);
            CHECK(h->own == NULL || h->plugin->opts_size);
            /* the default (oldest) and the value written (new); the
             * topic in the own struct too */
            const zx_kafka_opts *o1 = a1->own, *o2 = a2->own, *o3 = a3->own;
            CHECK(o1 && o2 && o3 && o1->start_new == 0 && o2->start_new == 1 &&
                  o3->start_new == 0);
            CHECK(o1 && o1->ntopics == 1 && o1->topics && !strcmp(o1->topics[0], "t"));
            CHECK(!zx_conf_pipeline_same(a1, a2));
            CHECK(zx_conf_pipeline_same(a1, a3));
            /* a string of the own struct is compared too */
            CHECK(c4 && !zx_conf_pipeline_same(a1, zx_conf_find(c4, "a")));
        }
    }
    zx_conf_free(c1);
    zx_conf_free(c2);
    zx_conf_free(c3);
    zx_conf_free(c4);
}

/* zx_conf_parked_bound follows ZX_PLUGIN_PARK: a mirror of a plug-in
 * that parks (kafka, mode latest) gets its max_parked_bytes, one of a
 * plug-in that does not (http, mode latest) 0. */
static void test_parked(void)
{
    zx_conf *c = load_text("parked.yaml", KAFKA_HEAD
                           "    mode: latest\n    key_columns: [id]\n"
                           "    max_parked_bytes: 1MiB\n"
                           "  h:\n    direction: stream\n    source: http\n"
                           "    key: abcdefghijklmnop\n    mode: latest\n"
                           "    key_columns: [id]\n");
    const zx_conf_pipeline *a = c ? zx_conf_find(c, "a") : NULL;
    const zx_conf_pipeline *h = c ? zx_conf_find(c, "h") : NULL;

    CHECK(a && h);
    if (a && h) {
        CHECK(a->plugin->caps & ZX_PLUGIN_PARK);
        CHECK(!(h->plugin->caps & ZX_PLUGIN_PARK));
        CHECK(zx_conf_parked_bound(a) == ZX_CF_MIB);
        CHECK(zx_conf_parked_bound(h) == 0);
    }
    CHECK(zx_conf_parked_bound(NULL) == 0);
    zx_conf_free(c);
}

static void count_secret(const char *s, void *arg)
{
    const char **seen = arg;

    for (size_t i = 0; i < 4; i++)
        if (!seen[i]) {
            seen[i] = s;
            return;
        }
}

/* http's options are its own struct's (ZX_CF_OWN), its secrets among them:
 * zx_conf_own_secrets gives exactly its key and webhook secret (what
 * supervisor/scrub.c erases or keeps), a kafka pipeline's own options
 * none; its body limit comes through the plug-in. */
static void test_http_own(void)
{
    zx_conf *c = load_text("httpown.yaml", KAFKA_HEAD
                           "  h:\n    direction: stream\n    source: http\n"
                           "    key: abcdefghijklmnop\n"
                           "    webhook_secret: \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n"
                           "    max_body_size: 2MiB\n");
    const zx_conf_pipeline *a = c ? zx_conf_find(c, "a") : NULL;
    const zx_conf_pipeline *h = c ? zx_conf_find(c, "h") : NULL;
    const zx_plugin *hp = zx_plugin_find(ZX_PLUGIN_SOURCE, "http");

    CHECK(a && h && hp);
    for (size_t i = 0; hp && i < hp->noptions; i++)
        CHECKF(hp->options[i].flags & ZX_CF_OWN, "http row %s", hp->options[i].name);
    if (a && h) {
        const char *seen[4] = {0};
        zx_conf_own_secrets(h, count_secret, seen);
        CHECK(seen[0] && !strcmp(seen[0], "abcdefghijklmnop"));
        CHECK(seen[1] && !strcmp(seen[1], "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
        CHECK(!seen[2]);
        const char *none[4] = {0};
        zx_conf_own_secrets(a, count_secret, none);
        CHECK(!none[0]);
        CHECK(h->body_limit == 2 * ZX_CF_MIB);
        CHECK(a->body_limit == c->http.max_body_size);
    }
    zx_conf_free(c);
}

int main(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/zx_test_plugins_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_registry();
    test_lists();
    test_caps();
    test_help_names();
    test_metadata();
    test_formats();
    test_help();
    test_loader();
    test_own();
    test_parked();
    test_http_own();
    rmdir(tmpdir);
    if (failures) {
        fprintf(stderr, "test_plugins: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_plugins: all checks passed\n");
    return 0;
}
