/*
 * zxctl_lineage.c — `zxctl lineage [NAME] [--upstream|--downstream]
 * [--format text|json|dot|mermaid]`: where data comes from and goes to,
 * drawn from the configuration (conf/lineage.h), without zxd, and each
 * sync's last ended run from the run history in the store (read-only;
 * none when zxd never ran).
 *
 * NAME (a pipeline, a workspace table, or an object's id or name) keeps
 * only what is connected to it: everything (default), or only what flows
 * into it (--upstream) or out of it (--downstream), transitively.
 *
 * It must never: read a secret (the configuration is loaded with
 * ZX_CONF_SKIP_SECRETS), or print a control byte of the configuration in
 * text output (text is cleaned; json, dot and mermaid escape by their
 * own rules).
 */
#include "zxctl/zxctl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "conf/lineage.h"
#include "proto/control.h"

int zxctl_lineage(const char *config, const char *how, const char *name, int dir,
                  const char *format)
{
    int rc = ZX_EXIT_DAEMON_ERROR;
    zx_lineage *g = NULL, *part = NULL;
    char *out = NULL;
    zx_conf *conf = zxctl_load_config(config, how);
    if (!conf)
        return ZX_EXIT_USAGE;
    g = zx_lineage_build(conf);
    if (!g || zx_lineage_runs_from_store(g, conf->data_dir) < 0)
        zxctl_oom();
    const zx_lineage *show = g;
    if (name) {
        size_t at = zx_lineage_find(g, name);
        if (at == (size_t)-1) {
            char *c = zxctl_clean(name);
            fprintf(stderr, "zxctl: lineage: no pipeline, table or object named %s\n", c);
            free(c);
            goto done;
        }
        part = zx_lineage_around(g, at, dir);
        if (!part)
            zxctl_oom();
        show = part;
    }
    out = zx_lineage_render(show, format);
    if (!out)
        zxctl_oom();
    if (!strcmp(format, "text")) {
        for (char *l = out; *l;) {
            char *e = strchr(l, '\n');
            if (e)
                *e = '\0';
            char *c = zxctl_clean(l);
            printf("%s\n", c);
            free(c);
            if (!e)
                break;
            l = e + 1;
        }
    } else {
        fputs(out, stdout);
    }
    rc = ZX_EXIT_OK;
done:
    free(out);
    zx_lineage_free(part);
    zx_lineage_free(g);
    zx_conf_free(conf);
    return rc;
}
