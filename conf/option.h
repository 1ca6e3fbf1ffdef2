/*
 * option.h — the shape of one configuration option row (zx_cf_option):
 * the core rows of conf/options.c and the rows a plug-in carries in its
 * zx_plugin (conf/plugin.h) are both of it.  The loader (conf/config.c)
 * parses, defaults, compares, frees and documents every field by its row.
 *
 * A row is constant data: it names a YAML key in a section, its type, its
 * default (as YAML text), where its field lives (an offset into the
 * struct its section targets, or with ZX_CF_OWN into the plug-in's own
 * options struct), and its help text for conf/OPTIONS.md.
 */
#ifndef ZX_CONF_OPTION_H
#define ZX_CONF_OPTION_H

#include <stddef.h>
#include <stdint.h>

/* Units rows are written in (min, max of SIZE and DURATION rows). */
#define ZX_CF_KIB ((uint64_t)1024)
#define ZX_CF_MIB (1024 * ZX_CF_KIB)
#define ZX_CF_GIB (1024 * ZX_CF_MIB)
#define ZX_CF_SEC ((uint64_t)1000)      /* durations are in ms */
#define ZX_CF_MIN (60 * ZX_CF_SEC)
#define ZX_CF_HOUR (60 * ZX_CF_MIN)

typedef enum zx_cf_type {
    ZX_CF_STRING, ZX_CF_PATH, ZX_CF_ENUM, ZX_CF_ENUM_INT, ZX_CF_SIZE,
    ZX_CF_DURATION, ZX_CF_UINT, ZX_CF_LISTEN, ZX_CF_METADATA, ZX_CF_IDENT,
    ZX_CF_GROUP,
    ZX_CF_DSN,        /* a libpq connection string (zx_dsn_check); quoted
                         in messages only through zx_dsn_redact */
    ZX_CF_SQLNAME,    /* an SQL name used quoted: 1 to 63 bytes, no control
                         characters */
    ZX_CF_BOOL,       /* true or false (also True, TRUE, False, FALSE):
                         an int, 1 or 0 */
    ZX_CF_SLOT,       /* a replication slot name: [a-z0-9_]{1,63} */
    /* The list types fill a char ** at offset and its size_t count at
     * n_offset (freed and replaced as a whole when set again). */
    ZX_CF_HOSTPORTS,  /* list of host:port, or one "a:1,b:2" string */
    ZX_CF_TOPIC,      /* one Kafka topic name: a list of one */
    ZX_CF_TOPICS,     /* a list of topic names, or one: a name, or a regex
                         (text starting with '^') */
    ZX_CF_PGTABLES,   /* a list of Postgres tables, `schema.table` or
                         `table` (public.table), stored as "schema.table";
                         1 to ZX_MAX_PG_TABLES, none twice */
    ZX_CF_NAMES,      /* a list of names (or one): each 1 to 63 bytes
                         without control characters, none twice */
    ZX_CF_PATHS,      /* a list of paths (or one), each made absolute
                         against the config file's folder, none twice */
    ZX_CF_PROPS       /* mapping of scalar to scalar: keys at offset, values
                         (char **) at v_offset, count at n_offset */
} zx_cf_type;

enum { ZX_CF_ROOT, ZX_CF_PIPELINE, ZX_CF_CONNECTION, ZX_CF_AUTHOR,
       ZX_CF_APITOKEN }; /* struct of `offset` */
#define ZX_CF_REQUIRED 0x1u    /* in a named-map entry: required when the
                                  entry's source (a pipeline) or kind (a
                                  connection) is among `sources`; at the
                                  top level: required when its section is
                                  written */
#define ZX_CF_SECRET   0x2u    /* never quoted in a message (a DSN: only
                                  with its passwords hidden); left NULL by
                                  ZX_CONF_SKIP_SECRETS when it holds a
                                  reference */
#define ZX_CF_REL_DATA 0x4u    /* PATH relative to data_dir, not the file */
#define ZX_CF_TOKEN    0x8u    /* STRING: printable ASCII without spaces */
#define ZX_CF_OR_AT    0x20u   /* STRING: also written as {at: VALUE}, a
                                  mapping of the one key `at` (kinesis
                                  `start: {at: TIME}`); 0x10 is ZX_CF_OWN */

typedef struct zx_cf_option {
    const char *section;     /* "server", "server.http", "pipelines.<name>" */
    const char *name;        /* YAML key */
    zx_cf_type type;
    const char *def;         /* default as written in YAML, NULL = none */
    const char *def_doc;     /* default shown in docs when def is NULL */
    size_t offset;
    unsigned flags;
    uint64_t min, max;       /* SIZE, DURATION (ms), UINT */
    const char *const *allowed; /* ENUM, ENUM_INT, METADATA: NULL-ended.
                                   PROPS: refused keys, NULL-ended pairs of
                                   (key, what to write instead) */
    const char *help;
    const char *const *sources; /* pipeline options: the `source:` values
                                   that take it; connection options: the
                                   `kind:` values.  NULL-ended; NULL = all
                                   (a row of a source plug-in: that source
                                   only; of the sync's: reverse syncs only) */
    size_t n_offset;         /* list types, PROPS: the size_t count */
    size_t v_offset;         /* PROPS: the values (char **) */
} zx_cf_option;
/* ZX_CF_OWN (0x10u), a row of a plug-in whose field is in its own options
 * struct, is defined in conf/plugin.h. */

#endif
