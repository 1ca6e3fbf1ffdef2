/*
 * reference.c — the Markdown reference of every configuration option
 * (conf/OPTIONS.md, `zxd --config-reference`), printed from the option
 * rows (conf/rows.c: options.c's and the plug-ins'), and the sources from
 * the plug-ins (conf/plugin.h).
 *
 * It must never: print an option that is not a row (zx_cf_row: the core
 * table and the plug-ins' rows are the only list), or print any value
 * other than the rows' own defaults and bounds.
 */
#define ZX_CONF_INTERNAL
#include "conf/values.h"
#include "conf/plugin.h"

#include <stdio.h>
#include <string.h>

/* ---- reference documentation ----------------------------------------- */

static const char *type_doc(zx_cf_type t)
{
    switch (t) {
    case ZX_CF_STRING:   return "string";
    case ZX_CF_PATH:     return "path";
    case ZX_CF_ENUM:
    case ZX_CF_ENUM_INT: return "enum";
    case ZX_CF_SIZE:     return "size";
    case ZX_CF_DURATION: return "duration";
    case ZX_CF_UINT:     return "integer";
    case ZX_CF_LISTEN:   return "host:port";
    case ZX_CF_METADATA: return "list";
    case ZX_CF_IDENT:    return "table name";
    case ZX_CF_GROUP:    return "group name";
    case ZX_CF_DSN:      return "connection string";
    case ZX_CF_SQLNAME:  return "SQL name";
    case ZX_CF_BOOL:     return "boolean";
    case ZX_CF_SLOT:     return "slot name";
    case ZX_CF_PGTABLES: return "list of tables";
    case ZX_CF_NAMES:    return "list of names";
    case ZX_CF_PATHS:    return "list of paths";
    case ZX_CF_HOSTPORTS: return "list of host:port";
    case ZX_CF_TOPIC:    return "topic name";
    case ZX_CF_TOPICS:   return "list, or regex";
    case ZX_CF_PROPS:    return "mapping";
    }
    return "?";
}

static void write_allowed(FILE *out, const zx_cf_option *o)
{
    char lo[32], hi[32];
    size_t i;

    if (o->type == ZX_CF_PROPS) {
        fputs("any but", out);
        for (i = 0; o->allowed && o->allowed[i]; i += 2)
            fprintf(out, "%s `%s`", i ? "," : "", o->allowed[i]);
    } else if (o->allowed) {
        for (i = 0; o->allowed[i]; i++)
            fprintf(out, "%s`%s`", i ? ", " : "", o->allowed[i]);
    } else if (o->type == ZX_CF_SIZE || o->type == ZX_CF_DURATION ||
               o->type == ZX_CF_UINT) {
        zx_cf_fmt_value(o, lo, sizeof(lo), o->min);
        zx_cf_fmt_value(o, hi, sizeof(hi), o->max);
        fprintf(out, "%s to %s", lo, hi);
    }
}

/* The Sources cell of a pipeline option (the Kinds cell of a connection
 * option), with its trailing separator. */
static void write_sources(FILE *out, const zx_cf_option *o)
{
    char list[200];

    if (!o->sources && !zx_cf_row_owner(o)) {
        fputs("all | ", out);
        return;
    }
    zx_cf_takers(o, list, sizeof(list), "`, `");
    fprintf(out, "`%s` | ", list);
}

/* What each value of `source:` is, needs, and which metadata it fills. */
static void write_source_list(FILE *out)
{
    size_t s, i;

    fputs("\nSources:\n\n", out);
    for (s = 0; s < zx_nplugins; s++) {
        const zx_plugin *src = zx_plugins[s];
        if (src->role != ZX_PLUGIN_SOURCE && src->role != ZX_PLUGIN_SYNC)
            continue;   /* the sync's line: direction: out, in the same list */
        fprintf(out, "- `%s`: %s", src->name, src->doc);
        for (i = 0; src->conn_kinds && src->conn_kinds[i]; i++)
            fprintf(out, "%s`kind: %s`", i ? " or " : " Its `connection` must be of ",
                    src->conn_kinds[i]);
        if (src->conn_kinds && src->conn_kinds[0])
            fputs(".", out);
        fputs(" Metadata: ", out);
        if (!src->metadata || !src->metadata[0])
            fputs("none", out);
        for (i = 0; src->metadata && src->metadata[i]; i++)
            fprintf(out, "%s`%s`", i ? ", " : "", src->metadata[i]);
        fputs(".\n", out);
    }
}

/* What each destination is: a connection kind's tables, or files. */
static void write_dest_list(FILE *out)
{
    fputs("\nDestinations:\n\n", out);
    for (size_t s = 0; s < zx_nplugins; s++) {
        const zx_plugin *d = zx_plugins[s];
        if (d->role == ZX_PLUGIN_DESTINATION)
            fprintf(out, "- `%s`: %s\n", d->name, d->doc);
    }
}

void zx_conf_write_reference(FILE *out)
{
    size_t s, i;

    fputs("# zxd configuration reference\n\n"
          "<!-- Generated from the option rows (conf/options.c and each "
          "plug-in's <name>_plugin.c)\n     by zx_conf_write_reference; do "
          "not edit.\n"
          "     Regenerate: zxd --config-reference > conf/OPTIONS.md -->\n\n"
          "zxd reads one YAML file (see `conf/zx.example.yaml`). Every "
          "section and option\n"
          "is optional unless marked **required**. Unknown keys are errors, "
          "and every error\n"
          "is reported as `file:line:column: message`.\n\n"
          "Value types:\n\n"
          "- **size**: bytes, as an integer (`16777216`) or with a unit: "
          "`512KiB`, `16MiB`,\n"
          "  `1GiB`, `1TiB` (powers of 1024) or `KB`, `MB`, `GB`, `TB` "
          "(powers of 1000).\n"
          "- **duration**: an integer with a unit: `500ms`, `60s`, `2m`, "
          "`1h`. A bare\n"
          "  number is refused (is `60` seconds or milliseconds?), except "
          "`0`.\n"
          "- **path**: absolute, or relative to the folder named in the "
          "description.\n"
          "  `~` is not expanded.\n"
          "- **references**: `${env:NAME}` (the environment variable, set "
          "and not empty) and\n"
          "  `${file:PATH}` (the content of a regular file of at most 64 "
          "KiB, without its\n"
          "  trailing newlines; PATH relative to the config file's folder, "
          "without `}`) may\n"
          "  be a whole value (`key: ${env:ZX_KEY}`) or stand inside a "
          "longer one, several\n"
          "  in one value (`postgresql://zx:${env:PG_PASSWORD}@db1/"
          "analytics`). A resolved\n"
          "  value is taken as it is: a `${` in it is not a reference. "
          "Write `$${` for a\n"
          "  literal `${`; any other `$` is itself (`$ConnectionString`). "
          "Every other `${`\n"
          "  must start a valid reference. Resolved values never appear in "
          "error messages.\n", out);
    for (s = 0; s < zx_cf_nsecs(); s++) {
        const zx_cf_section *sec = zx_cf_sec(s);
        /* a pipeline's options say which sources take them, a
         * connection's which kinds */
        int any = 0, pipe = sec->target == ZX_CF_PIPELINE && !sec->named_map;
        int by_source = pipe || (sec->target == ZX_CF_CONNECTION && !sec->named_map);
        fprintf(out, "\n## `%s`\n\n%s\n", sec->path, sec->help);
        for (i = 0; i < zx_cf_nrows(); i++) {
            const zx_cf_option *o = zx_cf_row(i);
            if (strcmp(o->section, sec->path))
                continue;
            if (!any)
                fprintf(out, by_source
                        ? "\n| Option | Type | Default | %s | Allowed | Description |\n"
                          "|---|---|---|---|---|---|\n"
                        : "\n| Option | Type | Default | Allowed | Description |\n"
                          "|---|---|---|---|---|\n", pipe ? "Sources" : "Kinds");
            any = 1;
            fprintf(out, "| `%s` | %s | ", o->name, type_doc(o->type));
            if (o->flags & ZX_CF_REQUIRED)
                fputs("**required**", out);
            else if (o->def)
                fprintf(out, "`%s`", o->def);
            else
                fputs(o->def_doc ? o->def_doc : "none", out);
            fputs(" | ", out);
            if (by_source)
                write_sources(out, o);
            write_allowed(out, o);
            fprintf(out, " | %s%s |\n", o->help,
                    !(o->flags & ZX_CF_SECRET) ? ""
                    : o->type == ZX_CF_DSN ? " Secret-bearing: shown only "
                                             "with its passwords replaced by "
                                             "`***`."
                                           : " Secret: never logged.");
        }
        /* the list of sources after the pipeline's own table (a
         * sub-section without rows of its own has none) */
        if (pipe && any)
            write_source_list(out);
        if (!strcmp(sec->path, "pipelines.<name>.destination"))
            write_dest_list(out);
    }
}
