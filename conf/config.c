/*
 * config.c — zx_conf_load: walk the YAML document against the options
 * table, then the checks that span several options (paths, ring size,
 * tables shared by two pipelines), and the small accessors.
 *
 * The walk never stops at the first error: each mapping is walked to its
 * end so that an operator fixes every mistake in one round.  The result is
 * all or nothing: any error frees the half-built config.
 *
 * Named maps (`pipelines`, `connections`) are walked entry by entry, each
 * entry with its own record of where its options were written (a
 * zx_cf_where), then checked by entries.c; a pipeline's `connection:` is
 * resolved at the end, since connections may be written after the
 * pipelines using them.  The tables the pipelines write are checked by
 * tables.c; the loaded configuration's lookups, comparison and freeing are
 * model.c's.
 *
 * It must never: list option names (options.c owns them; the cross-option
 * checks here look rows up by name), touch the file system beyond realpath
 * of the config and ${file:} secrets, or create anything.
 */
#define ZX_CONF_INTERNAL
#include "conf/config.h"
#include "conf/plugin.h"

#include "common/dsn.h"
#include "common/segment.h"
#include "workers/sources/source.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>
#include <unistd.h>

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

/* What the walk keeps for cf_finish. */
typedef struct cf_load {
    zx_conf *c;
    const yaml_node_t **conn_node;  /* per pipeline: its `connection:` value
                                       (connections may come after it) */
    const yaml_node_t **tables_node;/* per pipeline: its `tables:` value (the
                                       mirrors' errors point at its items) */
    const char *cur_src;            /* the pipeline being walked: its source
                                       as written ("sync" for direction:
                                       out), to tell apart two options of
                                       one name (`key`), or NULL */
} cf_load;

/* Row of option `name` in `section` for source src: the row whose sources
 * take src when several share the name, else the first; SIZE_MAX. */
static size_t opt_index_src(const char *section, const char *name, const char *src)
{
    size_t first = SIZE_MAX;
    for (size_t i = 0; i < zx_cf_nrows(); i++)
        if (!strcmp(zx_cf_row(i)->section, section) &&
            !strcmp(zx_cf_row(i)->name, name)) {
            if (first == SIZE_MAX)
                first = i;
            if (src && (zx_cf_row(i)->sources || zx_cf_row_owner(zx_cf_row(i))) &&
                zx_cf_takes(zx_cf_row(i), src))
                return i;
        }
    return first;
}

/* The source a pipeline's mapping n says it has, before it is walked:
 * "sync" for `direction: out`, else the text of `source:`, or NULL. */
static const char *peek_source(zx_cf_ctx *x, const yaml_node_t *n)
{
    const char *src = NULL;
    if (!n || n->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        const char *k = zx_cf_scalar(zx_cf_node(x, p->key));
        const char *v = zx_cf_scalar(zx_cf_node(x, p->value));
        if (k && v && !strcmp(k, "direction") && !strcmp(v, "out"))
            return "sync";
        if (k && v && !strcmp(k, "source"))
            src = v;
    }
    return src;
}

/* The section at path and its index (zx_cf_sec), or NULL. */
static const zx_cf_section *find_section(const char *path, size_t *idx)
{
    for (size_t i = 0; i < zx_cf_nsecs(); i++)
        if (!strcmp(zx_cf_sec(i)->path, path)) {
            *idx = i;
            return zx_cf_sec(i);
        }
    return NULL;
}

size_t zx_cf_opt_index(const char *section, const char *name)
{
    size_t i;

    for (i = 0; i < zx_cf_nrows(); i++)
        if (!strcmp(zx_cf_row(i)->section, section) &&
            !strcmp(zx_cf_row(i)->name, name))
            return i;
    return SIZE_MAX;
}

const yaml_node_t *zx_cf_where_opt(const zx_cf_where *w, const char *sec,
                                   const char *name)
{
    /* an option named alike for two kinds of pipelines (a sync's and a
     * stream's `mode`) has two rows: the one its pipeline walked is set */
    for (size_t i = 0; i < w->n; i++)
        if (w->opt[i] && !strcmp(zx_cf_row(i)->section, sec) &&
            !strcmp(zx_cf_row(i)->name, name))
            return w->opt[i];
    return NULL;
}

const yaml_node_t *zx_cf_where_sec(const zx_cf_where *w, const char *path)
{
    size_t i;

    return find_section(path, &i) ? w->sec[i] : NULL;
}

/* Section path of child `k` of `path` ("" is the top level). */
static void child_path(char *buf, size_t len, const char *path, const char *k)
{
    snprintf(buf, len, "%s%s%s", path, *path ? "." : "", k);
}

/* Direct children of `path`: options, then sub-sections.  Fills names. */
static size_t allowed_keys(const char *path, const char **names, size_t max)
{
    size_t i, n = 0, plen = strlen(path);

    for (i = 0; i < zx_cf_nrows() && n < max; i++)
        if (!strcmp(zx_cf_row(i)->section, path))
            names[n++] = zx_cf_row(i)->name;
    for (i = 0; i < zx_cf_nsecs() && n < max; i++) {
        const char *sp = zx_cf_sec(i)->path, *rest;
        if (plen && (strncmp(sp, path, plen) || sp[plen] != '.'))
            continue;
        rest = plen ? sp + plen + 1 : sp;
        if (!strchr(rest, '.') && !strchr(rest, '<'))
            names[n++] = rest;
    }
    return n;
}

static void unknown_key(zx_cf_ctx *x, const yaml_node_t *kn, const char *path,
                        const char *disp, const char *k)
{
    size_t max = zx_cf_nrows() + ZX_CF_MAX_SECTIONS;
    const char **names = malloc(max * sizeof(*names)), *near;
    char list[1024];
    size_t n = names ? allowed_keys(path, names, max) : 0;
    size_t i, off = 0;

    list[0] = '\0';
    for (i = 0; i < n && off < sizeof(list); i++)
        off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
                                i ? ", " : "", names[i]);
    near = zx_cf_suggest(k, names, n);
    if (*path)
        zx_cf_error_at(x, kn, "unknown key '%.64s' in %s%s%s%s; allowed: %s",
                       k, disp,
                       near ? " (did you mean '" : "", near ? near : "",
                       near ? "'?)" : "", list);
    else
        zx_cf_error_at(x, kn, "unknown section '%.64s'%s%s%s; allowed: %s", k,
                       near ? " (did you mean '" : "", near ? near : "",
                       near ? "'?)" : "", list);
    free(names);
}

static void walk_named(zx_cf_ctx *x, cf_load *ld, const zx_cf_section *sec,
                       yaml_node_t *n);

/* The structs of the named maps: what an entry is called in messages, its
 * size, where the array and its count live in zx_conf, and where its name
 * and place (line, column) are.  Every entry struct starts with its name. */
typedef struct cf_named {
    int target;
    const char *what;
    const char *example;     /* an entry name for messages */
    const char *keys;        /* its first keys, for messages */
    size_t size;
    size_t arr, cnt;         /* offsets in zx_conf */
    size_t line;             /* offset of `int line, column` */
} cf_named;

static const cf_named cf_nameds[] = {
    {ZX_CF_PIPELINE, "pipeline", "web_events", "direction, source, ...",
     sizeof(zx_conf_pipeline), offsetof(zx_conf, pipelines),
     offsetof(zx_conf, npipelines), offsetof(zx_conf_pipeline, line)},
    {ZX_CF_CONNECTION, "connection", "main_kafka", "kind, brokers, ...",
     sizeof(zx_conf_connection), offsetof(zx_conf, connections),
     offsetof(zx_conf, nconnections), offsetof(zx_conf_connection, line)},
    {ZX_CF_AUTHOR, "author", "alice", "tables",
     sizeof(zx_conf_author), offsetof(zx_conf, authors),
     offsetof(zx_conf, nauthors), offsetof(zx_conf_author, line)},
    {ZX_CF_APITOKEN, "API token", "airflow", "token, role, syncs",
     sizeof(zx_conf_apitoken), offsetof(zx_conf, apitokens),
     offsetof(zx_conf, napitokens), offsetof(zx_conf_apitoken, line)},
};
_Static_assert(offsetof(zx_conf_pipeline, name) == 0 &&
               offsetof(zx_conf_connection, name) == 0 &&
               offsetof(zx_conf_author, name) == 0 &&
               offsetof(zx_conf_apitoken, name) == 0,
               "named-map entries start with their name");

static const cf_named *cf_named_of(int target)
{
    for (size_t i = 0; i < sizeof(cf_nameds) / sizeof(cf_nameds[0]); i++)
        if (cf_nameds[i].target == target)
            return &cf_nameds[i];
    return NULL;
}

/* Sub-section `path` is written in pipeline pl: when it is a destination
 * plug-in's own (zx_cf_section_dest), that plug-in is pl's destination,
 * with its own options struct (zeroed, then its rows' defaults), where the
 * walk sets its rows.  A second destination's is reported at kn, and not
 * walked.  0; -1 when the sub-section is not to be walked. */
static int cf_dest_own(zx_cf_ctx *x, const yaml_node_t *kn, zx_conf_pipeline *pl,
                       const char *path)
{
    const zx_plugin *pg = zx_cf_section_dest(path);

    if (!pg)
        return 0;
    if (pl->dest_plugin) {
        zx_cf_error_at(x, kn, "pipelines.%s: destination: write one destination, not "
                       "both %s and %s", pl->name, pl->dest_plugin->name, pg->name);
        return -1;
    }
    pl->dest_plugin = pg;
    if (!pg->opts_size)
        return 0;
    if (!(pl->dest_own = calloc(1, pg->opts_size))) {
        zx_cf_error_at(x, kn, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < pg->noptions; i++)
        if (pg->options[i].flags & ZX_CF_OWN)
            zx_cf_set_default(x, &pg->options[i], pl->dest_own);
    return 0;
}

/* Walk mapping n as section `path` (called `disp` in messages), setting
 * options in base and recording in w where each was written.  `entry`:
 * the name of the named-map entry being walked (it replaces "<name>" in
 * the names of sub-sections shown in messages), NULL at the top level. */
static void walk_map(zx_cf_ctx *x, cf_load *ld, const char *path,
                     const char *disp, const char *entry, yaml_node_t *n,
                     void *base, zx_cf_where *w)
{
    yaml_node_pair_t *p0, *p;
    size_t *first;
    char sub[128], subdisp[200];

    if (zx_cf_is_null(n))
        return;   /* `server:` with nothing under it: all defaults */
    if (n->type != YAML_MAPPING_NODE) {
        zx_cf_error_at(x, n, "%s must be a mapping of keys to values, got %s",
                       disp, zx_cf_kind(n));
        return;
    }
    first = zx_cf_dups(x, n);
    p0 = n->data.mapping.pairs.start;
    for (p = p0; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = zx_cf_node(x, p->key), *vn = zx_cf_node(x, p->value);
        const char *k = zx_cf_scalar(kn), *tpl;
        const zx_cf_section *sec;
        size_t oi, si = 0;

        if (!k) {
            zx_cf_error_at(x, kn, "keys must be plain words, got %s",
                           zx_cf_kind(kn));
            continue;
        }
        if (first && first[p - p0] != SIZE_MAX) {
            yaml_node_t *fk = zx_cf_node(x, p0[first[p - p0]].key);
            zx_cf_error_at(x, kn, "duplicate key '%.64s' (first written at "
                           "line %d, column %d)", k, zx_cf_line(fk),
                           zx_cf_col(fk));
            continue;
        }
        oi = opt_index_src(path, k, ld->cur_src);
        if (oi != SIZE_MAX) {
            if (oi < w->n) {
                /* NULL: another plug-in's own row, not this pipeline's
                 * (reported by its checks) */
                void *fb = zx_cf_row_base(zx_cf_row(oi), base);
                w->opt[oi] = vn;
                w->bad[oi] = fb && zx_cf_set_node(x, zx_cf_row(oi), fb, vn) < 0;
            }
            continue;
        }
        /* a stream's `forward: {<destination>: {...}}` is walked as a
         * destination's sub-section (the same rows, into dest_own), shown
         * as written (conf/forward.c checks it) */
        if (!strcmp(path, "pipelines.<name>") && !strcmp(k, "forward")) {
            size_t fi;
            if (find_section("pipelines.<name>.forward", &fi))
                w->sec[fi] = vn;
            ((zx_conf_pipeline *)base)->forward = 1;
            if (ld->cur_src && !strcmp(ld->cur_src, "sync"))
                continue;   /* refused as such (conf/forward.c) */
            snprintf(subdisp, sizeof(subdisp), "%s.forward", disp);
            walk_map(x, ld, "pipelines.<name>.destination", subdisp, entry, vn, base, w);
            continue;
        }
        child_path(sub, sizeof(sub), path, k);
        sec = strchr(k, '.') ? NULL : find_section(sub, &si);
        if (!sec || strchr(k, '<')) {
            unknown_key(x, kn, path, disp, k);
            continue;
        }
        if (sec->target == ZX_CF_PIPELINE && cf_dest_own(x, kn, base, sub) < 0)
            continue;
        w->sec[si] = vn;
        if (sec->named_map) {
            walk_named(x, ld, sec, vn);
            continue;
        }
        tpl = entry ? strstr(sub, "<name>") : NULL;
        if (entry && !strncmp(path, "pipelines.<name>.destination", 28) &&
            strstr(disp, ".forward"))
            snprintf(subdisp, sizeof(subdisp), "%s.%s", disp, k);
        else if (tpl)
            snprintf(subdisp, sizeof(subdisp), "%.*s%s%s", (int)(tpl - sub),
                     sub, entry, tpl + 6);
        else
            snprintf(subdisp, sizeof(subdisp), "%s", sub);
        walk_map(x, ld, sub, subdisp, entry, vn, base, w);
    }
    free(first);
}

int zx_cf_name_ok(const char *s)
{
    size_t i, len = strlen(s);

    if (len == 0 || len > 63 || s[0] < 'a' || s[0] > 'z')
        return 0;
    for (i = 0; i < len; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_' || s[i] == '-'))
            return 0;
    return 1;
}

/* Default of every row of `target` in base (the own rows of a pipeline's
 * plug-in into its own struct). */
static void cf_set_defaults(zx_cf_ctx *x, int target, void *base)
{
    for (size_t i = 0; i < zx_cf_nrows(); i++) {
        const zx_cf_option *o = zx_cf_row(i);
        if (zx_cf_target(o->section) != target)
            continue; /* base is not of o's struct (zx_cf_row_base) */
        void *fb = zx_cf_row_base(o, base);
        if (fb)
            zx_cf_set_default(x, o, fb);
    }
}

static void cf_set_own_defaults(zx_cf_ctx *x, zx_conf_pipeline *pl)
{
    const zx_plugin *pg = pl->plugin;

    for (size_t i = 0; pg && pl->own && i < pg->noptions; i++)
        if (pg->options[i].flags & ZX_CF_OWN)
            zx_cf_set_default(x, &pg->options[i], pl->own);
}

/* The plug-in of source src (zx_plugin_of_pipeline) for pipeline pl, and its own options struct
 * (zeroed) when it has one.  0; -1 out of memory (reported at kn). */
static int cf_own_alloc(zx_cf_ctx *x, const yaml_node_t *kn, zx_conf_pipeline *pl,
                        const char *src)
{
    pl->plugin = zx_plugin_of_pipeline(src);
    if (!pl->plugin || !pl->plugin->opts_size)
        return 0;
    pl->own = calloc(1, pl->plugin->opts_size);
    if (!pl->own) {
        zx_cf_error_at(x, kn, "out of memory");
        return -1;
    }
    return 0;
}

/* Free the own struct of pl (its strings and lists too); NULL ok. */
static void cf_own_drop(zx_conf_pipeline *pl)
{
    zx_cf_free_opts(pl->plugin, &pl->own);
    pl->plugin = NULL;
}

/* One entry of a named map (a pipeline, a connection): defaults, its
 * mapping, its required options, then the checks of its kind. */
static void walk_entry(zx_cf_ctx *x, cf_load *ld, const zx_cf_section *map,
                       yaml_node_t *kn, yaml_node_t *vn, void *base,
                       size_t idx)
{
    int target = map->target, pipe = target == ZX_CF_PIPELINE;
    const cf_named *nd = cf_named_of(target);
    const char *name = *(char **)base;
    const char *src = NULL;
    int known = 1, *lc = (int *)((char *)base + nd->line);
    zx_cf_where *w = zx_cf_where_new();
    size_t i;
    char disp[80];

    if (!w) {
        zx_cf_error_at(x, kn, "out of memory");
        return;
    }
    lc[0] = zx_cf_line(kn);
    lc[1] = zx_cf_col(kn);
    ld->cur_src = pipe ? peek_source(x, vn) : NULL;
    if (pipe && cf_own_alloc(x, kn, base, ld->cur_src) < 0) {
        zx_cf_where_free(w);
        return;
    }
    cf_set_defaults(x, target, base);
    snprintf(disp, sizeof(disp), "%s %s", nd->what, name);
    if (!zx_cf_is_null(vn) && vn->type != YAML_MAPPING_NODE)
        zx_cf_error_at(x, vn, "%s must be a mapping of settings (%s), got %s",
                       disp, nd->keys, zx_cf_kind(vn));
    else
        walk_map(x, ld, map->entry, disp, name, vn, base, w);
    ld->cur_src = NULL;
    /* a pipeline's source, a connection's kind: what its options depend on.
     * A reverse sync (direction: out) writes no source: it is "sync". */
    if (pipe) {
        zx_conf_pipeline *pl = base;
        if (pl->direction && !strcmp(pl->direction, "out")) {
            const yaml_node_t *sn = zx_cf_where_opt(w, map->entry, "source");
            if (sn && pl->source && strcmp(pl->source, "sync"))
                zx_cf_error_at(x, sn, "pipeline %s: a reverse sync (direction: out) "
                               "takes no source; remove `source: %s`", name,
                               pl->source);
            free(pl->source);
            if (!(pl->source = strdup("sync")))
                zx_cf_error_at(x, kn, "out of memory");
            w->opt[zx_cf_opt_index(map->entry, "source")] = kn;
        } else if (pl->source && !strcmp(pl->source, "sync") && pl->direction) {
            zx_cf_error_at(x, zx_cf_where_opt(w, map->entry, "source"),
                           "pipeline %s: source: sync is a reverse sync: write "
                           "direction: out", name);
        }
        src = pl->source;
        known = src && zx_plugin_of_pipeline(src);
        /* the source peeked before the walk names the plug-in whose own
         * struct was set; a source refused or written otherwise since
         * (reported already) gets its plug-in's defaults only */
        if (known && pl->plugin != zx_plugin_of_pipeline(src)) {
            cf_own_drop(pl);
            if (cf_own_alloc(x, kn, pl, src) == 0)
                cf_set_own_defaults(x, pl);
        }
    } else if (target == ZX_CF_CONNECTION) {
        src = ((zx_conf_connection *)base)->kind;
        known = zx_cf_conn_kind_ok(src);
    }
    for (i = 0; i < zx_cf_nrows(); i++) {
        const zx_cf_option *o = zx_cf_row(i);
        /* a source-specific option is required only once the source is
         * known (a bad or missing source is reported already) */
        if (!strcmp(o->section, map->entry) && (o->flags & ZX_CF_REQUIRED) &&
            !w->opt[i] && ((!o->sources && !zx_cf_row_owner(o)) ||
                           (known && zx_cf_takes(o, src))))
            zx_cf_error_at(x, kn, "%s: missing required field '%s'", disp,
                           o->name);
    }
    if (pipe) {
        i = zx_cf_opt_index(map->entry, "connection");
        if (ld->conn_node && i < w->n)
            ld->conn_node[idx] = w->opt[i];
        i = zx_cf_opt_index(map->entry, "tables");
        if (ld->tables_node && i < w->n)
            ld->tables_node[idx] = w->opt[i];
        zx_cf_check_pipeline(x, kn, base, w);
    } else if (target == ZX_CF_CONNECTION) {
        zx_cf_check_connection(x, kn, base, w);
    } else if (target == ZX_CF_APITOKEN) {
        zx_conf_apitoken *t = base;
        if (t->token && strlen(t->token) < 16)
            zx_cf_error_at(x, zx_cf_where_opt(w, map->entry, "token"),
                           "api token %s: the token has %zu characters: at least "
                           "16", name, strlen(t->token));
    }
    zx_cf_where_free(w);
}

static void walk_named(zx_cf_ctx *x, cf_load *ld, const zx_cf_section *sec,
                       yaml_node_t *n)
{
    zx_conf *c = ld->c;
    int pipe = sec->target == ZX_CF_PIPELINE;
    const cf_named *nd = cf_named_of(sec->target);
    const char *what = nd->what;
    size_t size = nd->size;
    void **arr = (void **)((char *)c + nd->arr);
    size_t *cnt = (size_t *)((char *)c + nd->cnt);
    yaml_node_pair_t *p0, *p;
    size_t *first, total;

    if (zx_cf_is_null(n))
        return;
    if (n->type != YAML_MAPPING_NODE) {
        zx_cf_error_at(x, n, "%s must be a mapping from each %s's name to its "
                       "settings (%s: {...}), got %s", sec->path, what,
                       nd->example, zx_cf_kind(n));
        return;
    }
    if (*arr) {
        zx_cf_error_at(x, n, "%s is written twice", sec->path);
        return;
    }
    p0 = n->data.mapping.pairs.start;
    total = (size_t)(n->data.mapping.pairs.top - p0);
    if (total == 0)
        return;
    *arr = calloc(total, size);
    if (pipe) {
        ld->conn_node = calloc(total, sizeof(*ld->conn_node));
        ld->tables_node = calloc(total, sizeof(*ld->tables_node));
    }
    if (!*arr || (pipe && (!ld->conn_node || !ld->tables_node))) {
        zx_cf_error_at(x, n, "out of memory");
        return;
    }
    first = zx_cf_dups(x, n);
    for (p = p0; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = zx_cf_node(x, p->key), *vn = zx_cf_node(x, p->value);
        const char *k = zx_cf_scalar(kn);
        char *base, **namep;

        if (!k) {
            zx_cf_error_at(x, kn, "a %s name must be a plain word, got %s",
                           what, zx_cf_kind(kn));
            continue;
        }
        if (first && first[p - p0] != SIZE_MAX) {
            yaml_node_t *fk = zx_cf_node(x, p0[first[p - p0]].key);
            zx_cf_error_at(x, kn, "duplicate %s '%.64s' (first defined "
                           "at line %d, column %d)", what, k, zx_cf_line(fk),
                           zx_cf_col(fk));
            continue;
        }
        if (!zx_cf_name_ok(k))
            zx_cf_error_at(x, kn, "invalid %s name '%.64s': 1 to 63 "
                           "characters among a-z, 0-9, _ and -, starting "
                           "with a letter", what, k);
        base = (char *)*arr + *cnt * size;
        namep = (char **)base;
        *namep = strdup(k);
        if (!*namep) {
            zx_cf_error_at(x, kn, "out of memory");
            continue;
        }
        walk_entry(x, ld, sec, kn, vn, base, (*cnt)++);
    }
    free(first);
}

/* Absolute, lexically normalised path of rel against dir ("." and ".."
 * removed, no trailing '/').  NULL on out of memory. */
char *zx_cf_abspath(const char *dir, const char *rel)
{
    size_t len = strlen(dir) + strlen(rel) + 3, o = 0, keep;
    char *in = malloc(len), *out = malloc(len), *tok, *save = NULL;

    if (!in || !out) {
        free(in);
        free(out);
        return NULL;
    }
    snprintf(in, len, "%s/%s", rel[0] == '/' ? "" : dir, rel);
    for (tok = strtok_r(in, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
        if (!strcmp(tok, "."))
            continue;
        if (!strcmp(tok, "..")) {
            for (keep = o; keep > 0 && out[keep - 1] != '/'; keep--)
                ;
            o = keep > 0 ? keep - 1 : 0;
            continue;
        }
        out[o++] = '/';
        memcpy(out + o, tok, strlen(tok));
        o += strlen(tok);
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = '\0';
    free(in);
    return out;
}

static int cf_make_abs(zx_cf_ctx *x, char **field, const char *dir)
{
    char *abs;

    if (!*field || !dir)
        return 0;
    abs = zx_cf_abspath(dir, *field);
    if (!abs) {
        zx_cf_error(x, 0, 0, "out of memory");
        return -1;
    }
    free(*field);
    *field = abs;
    return 0;
}

/* The request ring of a pipeline with this body limit: it takes records
 * up to half its capacity, so twice the body plus its record header, at
 * least 8 MiB, in 64-byte units.  The one place this is decided. */
static uint64_t cf_in_ring(uint64_t body_limit)
{
    uint64_t in = 2 * (body_limit + 64 * KiB);

    if (in < 8 * MiB)
        in = 8 * MiB;
    return (in + 63) & ~(uint64_t)63;
}

/* Default ring budget: a quarter of the machine's memory, at least 1 GiB. */
static uint64_t cf_default_budget(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    uint64_t b = 0;

    if (pages > 0 && psz > 0 && (uint64_t)pages <= UINT64_MAX / (uint64_t)psz)
        b = (uint64_t)pages * (uint64_t)psz / 4;
    return b < GiB ? GiB : b > 1024 * GiB ? 1024 * GiB : b;
}

static uint64_t cf_rings_total(const zx_conf *c)
{
    uint64_t t = 0;

    for (size_t i = 0; i < c->npipelines; i++)
        t += c->pipelines[i].shm_size;
    return t;
}

/* Fit the pipelines' rings in server.ring_budget: a ring_size left at its
 * default shrinks (not below `need`); otherwise, or if even that does not
 * fit, it is an error naming what they take and the budget. */
static void cf_check_budget(zx_cf_ctx *x, zx_conf *c, const zx_cf_where *w,
                            uint64_t need)
{
    const yaml_node_t *rs = zx_cf_where_opt(w, "server", "ring_size");
    uint64_t np = c->npipelines, fixed = 0, total;
    size_t i;

    if (!c->ring_budget)
        c->ring_budget = cf_default_budget();
    for (i = 0; i < c->npipelines; i++) {
        zx_conf_pipeline *p = &c->pipelines[i];
        const zx_plugin *src = p->plugin;
        /* Only a source the gateway feeds (http) has a request ring, and
         * with it a reply ring: ZX_SEG_MAX_BYTES(0, ring) counts neither
         * (common/segment.h counts the reply ring only when in_cap > 0). */
        p->in_ring_size = src && src->source && (src->source->flags & ZX_SOURCE_GATEWAY)
                          ? cf_in_ring(p->body_limit) : 0;
        p->ring_size = (c->ring_size + 63) & ~(uint64_t)63;
        p->shm_size = ZX_SEG_MAX_BYTES(p->in_ring_size, p->ring_size);
        fixed += ZX_SEG_MAX_BYTES(p->in_ring_size, 0);
    }
    total = cf_rings_total(c);
    if (np && total > c->ring_budget && !rs && fixed < c->ring_budget) {
        uint64_t each = ((c->ring_budget - fixed) / np) & ~(MiB - 1);

        if (each < need)
            each = (need + 63) & ~(uint64_t)63;
        for (i = 0; i < c->npipelines; i++) {
            zx_conf_pipeline *p = &c->pipelines[i];
            if (p->ring_size > each) {
                p->ring_size = each;
                p->shm_size = ZX_SEG_MAX_BYTES(p->in_ring_size, p->ring_size);
            }
        }
        total = cf_rings_total(c);
    }
    c->ring_bytes = total;
    if (total <= c->ring_budget)
        return;
    const yaml_node_t *n = zx_cf_where_opt(w, "server", "ring_budget");
    if (!n)
        n = rs;
    zx_cf_error_at(x, n, "the rings of %zu pipelines need %llu MiB of shared memory "
                   "(each: a frames ring of %llu MiB; an http pipeline also a request "
                   "ring of twice its body limit, at least 8 MiB, and 1 MiB for "
                   "replies) but server.ring_budget "
                   "is %llu MiB: lower server.ring_size or the body limits, or raise "
                   "server.ring_budget", c->npipelines,
                   (unsigned long long)((total + MiB - 1) / MiB),
                   (unsigned long long)(c->pipelines[0].ring_size / MiB),
                   (unsigned long long)(c->ring_budget / MiB));
}

/* Top-level options marked required: required when their section is
 * written (`workspace.postgres` needs `dsn`). */
static void cf_check_required(zx_cf_ctx *x, const zx_cf_where *w)
{
    for (size_t i = 0; i < w->n; i++) {
        const zx_cf_option *o = zx_cf_row(i);
        const yaml_node_t *sec;
        if (!(o->flags & ZX_CF_REQUIRED) ||
            zx_cf_target(o->section) != ZX_CF_ROOT || w->opt[i])
            continue;
        sec = zx_cf_where_sec(w, o->section);
        if (sec)
            zx_cf_error_at(x, sec, "%s: missing required field '%s'",
                           o->section, o->name);
    }
}

/* Which workspace: at most one of its sub-sections; and the dsn as it may
 * be shown. */
static void cf_check_workspace(zx_cf_ctx *x, zx_conf *c, const zx_cf_where *w)
{
    const yaml_node_t *sq = zx_cf_where_sec(w, "workspace.sqlite");
    const yaml_node_t *pg = zx_cf_where_sec(w, "workspace.postgres");
    const yaml_node_t *dsn = zx_cf_where_opt(w, "workspace.postgres", "dsn");

    c->ws_kind = pg ? ZX_WS_KIND_POSTGRES : ZX_WS_KIND_SQLITE;
    if (sq && pg)
        zx_cf_error_at(x, pg, "workspace: workspace.sqlite (line %d) and "
                       "workspace.postgres are both given; write one of them",
                       zx_cf_line(sq));
    if (!pg || (!c->pg_dsn && !zx_cf_scalar(dsn)))
        return;
    /* pg_dsn NULL: a secret skipped under ZX_CONF_SKIP_SECRETS (or refused,
     * already reported): the text as written, references unresolved */
    c->pg_dsn_shown = zx_dsn_redact(c->pg_dsn ? c->pg_dsn : zx_cf_scalar(dsn));
    if (!c->pg_dsn_shown)
        zx_cf_error_at(x, dsn, "out of memory");
}

static void cf_finish(zx_cf_ctx *x, cf_load *ld, const zx_cf_where *w)
{
    zx_conf *c = ld->c;
    const yaml_node_t *n;
    const char *why = NULL;
    uint64_t biggest = c->http.max_body_size, need;
    size_t i;

    cf_check_required(x, w);
    cf_check_workspace(x, c, w);
    cf_make_abs(x, &c->data_dir, c->base_dir);
    cf_make_abs(x, &c->secret_key_file, c->base_dir);
    cf_make_abs(x, &c->secret_store, c->base_dir);
    cf_make_abs(x, &c->control_socket, c->data_dir);
    cf_make_abs(x, &c->sqlite_path, c->data_dir);
    if (c->control_socket &&
        strlen(c->control_socket) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        n = zx_cf_where_opt(w, "server", "control_socket");
        if (!n)
            n = zx_cf_where_opt(w, "server", "data_dir");
        zx_cf_error_at(x, n, "control socket path %s is longer than %zu bytes; "
                       "use a shorter data_dir or an absolute control_socket",
                       c->control_socket,
                       sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
    }
    if (c->http.listen &&
        zx_cf_split_listen(c->http.listen, &c->http.host, &c->http.port, &why))
        zx_cf_error_at(x, zx_cf_where_opt(w, "server.http", "listen"), "listen: %s", why);

    /* The body limit bounds what one frame may need.  A source whose
     * plug-in sets no limit of its own (only http has one): its limit is
     * the server's http.max_body_size, so the frames ring minimum below is the same rule
     * for every source.  Kept simple on purpose: a Kafka frame is at most a
     * few MiB, well under the 16 MiB default. */
    for (i = 0; i < c->npipelines; i++) {
        zx_conf_pipeline *p = &c->pipelines[i];
        uint64_t own = p->plugin && p->plugin->body_limit ? p->plugin->body_limit(p) : 0;
        p->body_limit = own ? own : c->http.max_body_size;
        p->ring_size = c->ring_size;
        if (p->body_limit > biggest)
            biggest = p->body_limit;
    }
    zx_cf_check_tables(x, c, ld->tables_node);
    zx_cf_check_templates(x, c);
    zx_cf_resolve_connections(x, c, ld->conn_node);
    zx_cf_resolve_syncs(x, c, NULL, NULL);
    zx_cf_resolve_forwards(x, c);
    zx_cf_check_slots(x, c);
    if (c->pg_dsn && zx_dsn_is_mysql(c->pg_dsn))
        zx_cf_error_at(x, zx_cf_where_opt(w, "workspace.postgres", "dsn"),
                       "workspace.postgres.dsn: a mysql:// dsn is not a PostgreSQL "
                       "database");
    if (c->nconnections > ZX_MAX_PIPELINES) {
        const zx_conf_connection *cn = &c->connections[ZX_MAX_PIPELINES];
        zx_cf_error(x, cn->line, cn->column, "connection %s: one zxd has at "
                    "most %d connections; this file has %zu", cn->name,
                    ZX_MAX_PIPELINES, c->nconnections);
    }
    if (c->npipelines > ZX_MAX_PIPELINES) {
        const zx_conf_pipeline *p = &c->pipelines[ZX_MAX_PIPELINES];
        zx_cf_error(x, p->line, p->column, "pipeline %s: one zxd runs at most %d "
                    "pipelines; this file has %zu", p->name, ZX_MAX_PIPELINES,
                    c->npipelines);
    }
    need = 2 * biggest + MiB;
    if (c->ring_size < need) {
        n = zx_cf_where_opt(w, "server", "ring_size");
        if (!n && biggest == c->http.max_body_size)
            n = zx_cf_where_opt(w, "server.http", "max_body_size");
        for (i = 0; !n && i < c->npipelines; i++) {
            const zx_conf_pipeline *p = &c->pipelines[i];
            if (p->body_limit == biggest) {
                zx_cf_error(x, p->line, p->column, "pipeline %s: its "
                            "max_body_size needs a ring_size of at least "
                            "%llu bytes (twice the body plus 1 MiB); raise "
                            "server.ring_size", p->name,
                            (unsigned long long)need);
                return;
            }
        }
        zx_cf_error_at(x, n, "ring_size (%llu bytes) must be at least "
                           "twice the largest body limit plus 1 MiB (%llu "
                           "bytes): raise server.ring_size or lower "
                           "max_body_size", (unsigned long long)c->ring_size,
                           (unsigned long long)need);
        return;
    }
    cf_check_budget(x, c, w, need);
    if (c->http.max_held_bytes && c->http.max_held_bytes < biggest)
        zx_cf_error_at(x, zx_cf_where_opt(w, "server.http", "max_held_bytes"),
                       "max_held_bytes (%llu bytes) must be at least the largest "
                       "body limit (%llu bytes), or no such body could be received",
                       (unsigned long long)c->http.max_held_bytes,
                       (unsigned long long)biggest);
}

zx_conf *zx_conf_load(const char *path, unsigned flags, zx_conf_errors *errs)
{
    zx_cf_ctx x;
    zx_conf *c = NULL;
    zx_cf_where *where = zx_cf_where_new();
    cf_load ld = {0};
    yaml_node_t *root;
    char *slash;
    size_t i;

    memset(&x, 0, sizeof(x));
    x.file = path ? path : "(null)";
    x.flags = flags;
    x.errs = errs;
    c = calloc(1, sizeof(*c));
    ld.c = c;
    if (!c || !where || !path) {
        zx_cf_error(&x, 0, 0, c && where ? "no configuration file given"
                                         : "out of memory");
        goto fail;
    }
    c->path = realpath(path, NULL);
    if (!c->path) {
        zx_cf_error(&x, 0, 0, "cannot open: %s", strerror(errno));
        goto fail;
    }
    c->base_dir = strdup(c->path);
    if (!c->base_dir) {
        zx_cf_error(&x, 0, 0, "out of memory");
        goto fail;
    }
    slash = strrchr(c->base_dir, '/');
    if (slash)
        slash[slash == c->base_dir ? 1 : 0] = '\0';
    x.base_dir = c->base_dir;
    if (zx_cf_parse_file(&x, path) < 0)
        goto fail;
    for (i = 0; i < zx_cf_nrows(); i++)
        if (zx_cf_target(zx_cf_row(i)->section) == ZX_CF_ROOT)
            zx_cf_set_default(&x, zx_cf_row(i), c);
    root = zx_cf_root(&x);
    if (root->type != YAML_MAPPING_NODE) {
        zx_cf_error_at(&x, root, "the top level must be a mapping with the "
                       "sections server, workspace, connections and "
                       "pipelines, got %s", zx_cf_kind(root));
        goto fail;
    }
    walk_map(&x, &ld, "", "the top level", NULL, root, c, where);
    cf_finish(&x, &ld, where);
    if (x.nerr)
        goto fail;
    goto out;
fail:
    zx_conf_free(c);
    c = NULL;
out:
    zx_cf_secrets_free(&x);
    if (x.have_doc)
        yaml_document_delete(&x.doc);
    free(ld.conn_node);
    free(ld.tables_node);
    zx_cf_where_free(where);
    return c;
}
