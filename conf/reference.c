/*
 * reference.c — the Markdown reference of every configuration option
 * (conf/OPTIONS.md, `zxd --config-reference`), printed from the options
 * table of options.c.
 *
 * It must never: print an option that is not in zx_cf_options (the table is
 * the only list), or print any value other than the table's own defaults and
 * bounds.
 */
#define ZX_CONF_INTERNAL
#include "conf/values.h"

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
    }
    return "?";
}

static void write_allowed(FILE *out, const zx_cf_option *o)
{
    char lo[32], hi[32];
    size_t i;

    if (o->allowed) {
        for (i = 0; o->allowed[i]; i++)
            fprintf(out, "%s`%s`", i ? ", " : "", o->allowed[i]);
    } else if (o->type == ZX_CF_SIZE || o->type == ZX_CF_DURATION ||
               o->type == ZX_CF_UINT) {
        zx_cf_fmt_value(o, lo, sizeof(lo), o->min);
        zx_cf_fmt_value(o, hi, sizeof(hi), o->max);
        fprintf(out, "%s to %s", lo, hi);
    }
}

void zx_conf_write_reference(FILE *out)
{
    size_t s, i;

    fputs("# zxd configuration reference\n\n"
          "<!-- Generated from conf/options.c by zx_conf_write_reference; do "
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
          "- Any single value may be written `${env:NAME}` (the environment "
          "variable) or\n"
          "  `${file:PATH}` (the file's content without trailing newlines; "
          "PATH relative to\n"
          "  the config file's folder). The reference must be the whole "
          "value. Resolved\n"
          "  values never appear in error messages.\n", out);
    for (s = 0; s < zx_cf_nsections; s++) {
        const zx_cf_section *sec = &zx_cf_sections[s];
        int any = 0;
        fprintf(out, "\n## `%s`\n\n%s\n", sec->path, sec->help);
        for (i = 0; i < zx_cf_noptions; i++) {
            const zx_cf_option *o = &zx_cf_options[i];
            if (strcmp(o->section, sec->path))
                continue;
            if (!any)
                fputs("\n| Option | Type | Default | Allowed | Description |\n"
                      "|---|---|---|---|---|\n", out);
            any = 1;
            fprintf(out, "| `%s` | %s | ", o->name, type_doc(o->type));
            if (o->flags & ZX_CF_REQUIRED)
                fputs("**required**", out);
            else if (o->def)
                fprintf(out, "`%s`", o->def);
            else
                fputs(o->def_doc ? o->def_doc : "none", out);
            fputs(" | ", out);
            write_allowed(out, o);
            fprintf(out, " | %s%s |\n", o->help,
                    (o->flags & ZX_CF_SECRET) ? " Secret: never logged." : "");
        }
    }
}
