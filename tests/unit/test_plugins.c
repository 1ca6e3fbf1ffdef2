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
    size_t nsrc = 0;

    CHECK(zx_nplugins > 0);
    for (size_t i = 0; i < zx_nplugins; i++) {
        const zx_plugin *p = zx_plugins[i];
        CHECK(p && p->name && p->name[0]);
        if (!p || !p->name)
            continue;
        CHECKF(p->role == ZX_PLUGIN_SOURCE || p->role == ZX_PLUGIN_DESTINATION, "%s", p->name);
        CHECKF(p->doc && strlen(p->doc) > 10, "plug-in %s has no doc", p->name);
        CHECKF(zx_plugin_find(p->role, p->name) == p, "%s is not the one found", p->name);
        CHECKF(p->retire == NULL || p->role == ZX_PLUGIN_SOURCE, "%s", p->name);
        CHECKF(!p->noptions || p->options, "%s", p->name);
        for (size_t j = 0; j < p->noptions; j++)
            CHECKF(!(p->options[j].flags & ZX_CF_OWN) || p->opts_size,
                   "%s: row %s is ZX_CF_OWN but it has no own struct", p->name,
                   p->options[j].name);
        if (p->role == ZX_PLUGIN_SOURCE) {
            nsrc++;
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
        if (p->role == ZX_PLUGIN_SOURCE) {
            nsrc++;
            CHECKF(listed(src->allowed, p->name), "source %s", p->name);
            CHECKF(listed(conn->sources, p->name) == (count(p->conn_kinds) > 0),
                   "connection of source %s", p->name);
        }
        for (size_t k = 0; p->conn_kinds && p->conn_kinds[k]; k++) {
            CHECKF(listed(kind->allowed, p->conn_kinds[k]), "kind %s", p->conn_kinds[k]);
            CHECKF(zx_cf_conn_kind_ok(p->conn_kinds[k]), "kind %s", p->conn_kinds[k]);
            if (p->role == ZX_PLUGIN_DESTINATION) {
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
        CHECKF(zx_plugin_find(ZX_PLUGIN_SOURCE, src->allowed[i]), "%s", src->allowed[i]);
    for (size_t i = 0; kind->allowed[i]; i++)
        CHECKF(plugin_kind(kind->allowed[i]), "kind %s", kind->allowed[i]);
    for (size_t i = 0; ro->sources[i]; i++)
        CHECKF(zx_plugin_for_kind(ZX_PLUGIN_DESTINATION, ro->sources[i]), "%s",
               ro->sources[i]);
    CHECK(!zx_cf_conn_kind_ok("no_such_kind"));
    CHECK(!zx_plugin_for_kind(ZX_PLUGIN_DESTINATION, "kafka"));

    /* every name in a row's `sources`: a source plug-in (pipeline rows) or
     * a plug-in's connection kind (connection rows) */
    for (size_t i = 0; i < zx_cf_nrows(); i++) {
        const zx_cf_option *o = zx_cf_row(i);
        int target = zx_cf_target(o->section);
        for (size_t j = 0; o->sources && o->sources[j]; j++) {
            if (target == ZX_CF_CONNECTION)
                CHECKF(plugin_kind(o->sources[j]), "%s.%s: kind %s", o->section, o->name,
                       o->sources[j]);
            else
                CHECKF(zx_plugin_find(ZX_PLUGIN_SOURCE, o->sources[j]), "%s.%s: source %s",
                       o->section, o->name, o->sources[j]);
        }
        /* a plug-in's rows are in sections the loader knows */
        CHECKF(target >= 0, "%s.%s: no such section", o->section, o->name);
    }
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

int main(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/zx_test_plugins_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_registry();
    test_lists();
    test_metadata();
    test_formats();
    test_help();
    test_loader();
    test_own();
    rmdir(tmpdir);
    if (failures) {
        fprintf(stderr, "test_plugins: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_plugins: all checks passed\n");
    return 0;
}
