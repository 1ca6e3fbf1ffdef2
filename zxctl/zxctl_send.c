/*
 * zxctl_send.c — `zxctl send`: the request of a one-off send from the
 * command line, and the YAML of the equivalent sync (--print-sync).
 */
#include "zxctl/zxctl_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/control.h"
#include "workers/destinations/files/files_formats.h"

static int usage(const char *msg, const char *arg)
{
    fprintf(stderr, "zxctl: ");
    fprintf(stderr, msg, arg ? arg : "");
    fprintf(stderr, "\n(zxctl help: the forms of send)\n");
    return ZX_EXIT_USAGE;
}

/* The format of a file path by its extension (the files destination's
 * table, files_formats.h), or NULL. */
static const char *ext_format(const char *path)
{
    const zx_file_format *f = NULL;
    const char *slash = strrchr(path, '/');
    if (!zx_file_ext_of(slash ? slash + 1 : path, &f))
        return NULL;
    return f->name;
}

int zxctl_send_request(const char *query, const char *to, const char *mode, const char *key,
                       const char *format, json_t *req)
{
    json_t *q = json_string(query);
    if (!q)
        return usage("--query is not valid UTF-8", NULL);
    json_object_set_new(req, "query", q);
    json_object_set_new(req, "mode", json_string(mode));
    if (!strncmp(to, "files:", 6)) {
        const char *p = to + 6;
        char *abs = NULL;
        if (!*p)
            return usage("--to files:PATH needs a path", NULL);
        if (p[0] == '/') {
            abs = zxctl_xstrdup(p);
        } else {
            char cwd[PATH_MAX];
            if (!getcwd(cwd, sizeof(cwd)))
                return usage("cannot read the current folder for %s", p);
            size_t n = strlen(cwd) + strlen(p) + 2;
            abs = zxctl_xrealloc(NULL, n);
            if (abs)
                snprintf(abs, n, "%s/%s", cwd, p);
        }
        const char *f = format ? format : ext_format(abs);
        if (!f) {
            char fmts[100], why[PATH_MAX + 200];
            free(abs);
            snprintf(why, sizeof(why), "--to files:%s: give --format %s (no known extension)",
                     p, zx_file_format_list(fmts, sizeof(fmts)));
            return usage("%s", why);
        }
        json_t *ps = json_string(abs);
        free(abs);
        if (!ps)
            return usage("the path is not valid UTF-8", NULL);
        json_object_set_new(req, "path", ps);
        json_object_set_new(req, "format", json_string(f));
    } else {
        const char *colon = strchr(to, ':');
        if (!colon || colon == to || !colon[1])
            return usage("--to wants CONNECTION:TABLE or files:PATH, not '%s'", to);
        if (format)
            return usage("--format goes with --to files:PATH", NULL);
        json_t *c = json_stringn(to, (size_t)(colon - to)), *t = json_string(colon + 1);
        if (!c || !t) {
            json_decref(c);
            json_decref(t);
            return usage("--to is not valid UTF-8", NULL);
        }
        json_object_set_new(req, "connection", c);
        json_object_set_new(req, "table", t);
    }
    if (key) {
        json_t *arr = json_array();
        char *k = zxctl_xstrdup(key), *save = NULL;
        for (char *w = strtok_r(k, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
            json_t *ws = json_string(w);
            if (ws)
                json_array_append_new(arr, ws);
        }
        free(k);
        json_object_set_new(req, "key", arr);
    }
    return -1;
}

/* s as a YAML double-quoted scalar (JSON's escapes are YAML's). */
static void yaml_str(const char *s, FILE *out)
{
    json_t *j = json_string(s ? s : "");
    char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    fputs(t ? t : "\"\"", out);
    free(t);
    json_decref(j);
}

void zxctl_print_sync_yaml(const char *name, const json_t *req, const json_t *resp, FILE *out)
{
    const char *author = json_string_value(json_object_get(resp, "author"));
    fprintf(out, "\n# the same as a sync: add to pipelines: in the configuration\n");
    fprintf(out, "  %s:\n    direction: out\n    author: %s\n    query: ", name,
            author ? author : "AUTHOR");
    yaml_str(json_string_value(json_object_get(req, "query")), out);
    fprintf(out, "\n    destination: ");
    const char *conn = json_string_value(json_object_get(req, "connection"));
    if (conn) {
        fprintf(out, "{connection: ");
        yaml_str(conn, out);
        fprintf(out, ", table: ");
        yaml_str(json_string_value(json_object_get(req, "table")), out);
        fprintf(out, "}\n");
    } else {
        fprintf(out, "{files: {path: ");
        yaml_str(json_string_value(json_object_get(req, "path")), out);
        fprintf(out, ", format: %s}}\n", json_string_value(json_object_get(req, "format")));
    }
    fprintf(out, "    mode: %s\n", json_string_value(json_object_get(req, "mode")));
    const json_t *keys = json_object_get(req, "key");
    if (json_array_size(keys)) {
        fprintf(out, "    key: [");
        for (size_t i = 0; i < json_array_size(keys); i++) {
            if (i)
                fprintf(out, ", ");
            yaml_str(json_string_value(json_array_get(keys, i)), out);
        }
        fprintf(out, "]\n");
    }
}
