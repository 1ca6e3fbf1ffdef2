/*
 * zxctl_print_verify.c — human output of `zxctl verify` (one block per
 * table: rows compared, keys differing, then each listed key and how it
 * differs) and the "last verify" line `status` prints under a pipeline.
 *
 * Every string from the daemon is cleaned (zxctl_clean) before printing.
 */
#include "zxctl/zxctl_int.h"

#include <stdlib.h>
#include <string.h>

/* "id=3, region=eu" of a key object.  Caller frees. */
static char *key_text(const json_t *key)
{
    char *out = zxctl_xstrdup("");
    size_t len = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)key, k, v) {
        char *kc = zxctl_clean(k), *vc = zxctl_fmt(v);
        out = zxctl_xrealloc(out, len + strlen(kc) + strlen(vc) + 4);
        len += (size_t)sprintf(out + len, "%s%s=%s", len ? ", " : "", kc, vc);
        free(kc);
        free(vc);
    }
    return out;
}

void zxctl_print_verify(const json_t *r, FILE *out)
{
    char *name = zxctl_fmt(json_object_get(r, "name"));
    char *at = zxctl_fmt(json_object_get(r, "at"));
    fprintf(out, "verify %s at %s: %lld rows compared, %lld differing\n", name, at,
            (long long)json_integer_value(json_object_get(r, "compared")),
            (long long)json_integer_value(json_object_get(r, "differing")));
    free(name);
    free(at);
    if (json_is_integer(json_object_get(r, "repaired")))
        fprintf(out, "repaired: %lld of them now equal the source\n",
                (long long)json_integer_value(json_object_get(r, "repaired")));
    size_t i, j;
    json_t *t, *k;
    json_array_foreach(json_object_get(r, "tables"), i, t) {
        char *tn = zxctl_fmt(json_object_get(t, "table"));
        char *mn = zxctl_fmt(json_object_get(t, "mirror"));
        fprintf(out, "  %s -> %s: %lld rows compared, %lld differing", tn, mn,
                (long long)json_integer_value(json_object_get(t, "compared")),
                (long long)json_integer_value(json_object_get(t, "differing")));
        if (json_integer_value(json_object_get(t, "ranges")) > 0) /* hashed by ranges */
            fprintf(out, " (%lld key ranges hashed, %lld differing)",
                    (long long)json_integer_value(json_object_get(t, "ranges")),
                    (long long)json_integer_value(json_object_get(t, "ranges_differing")));
        fputc('\n', out);
        free(tn);
        free(mn);
        json_array_foreach(json_object_get(t, "keys"), j, k) {
            char *kt = key_text(json_object_get(k, "key"));
            const char *how = json_string_value(json_object_get(k, "how"));
            const char *what = !how ? "?"
                               : !strcmp(how, "missing") ? "missing in the mirror"
                               : !strcmp(how, "extra") ? "extra in the mirror (not in the source)"
                               : "values differ";
            char *cols = NULL;
            if (json_is_array(json_object_get(k, "columns"))) {
                size_t c;
                json_t *cn;
                size_t len = 0;
                cols = zxctl_xstrdup("");
                json_array_foreach(json_object_get(k, "columns"), c, cn) {
                    char *cc = zxctl_fmt(cn);
                    cols = zxctl_xrealloc(cols, len + strlen(cc) + 3);
                    len += (size_t)sprintf(cols + len, "%s%s", len ? ", " : "", cc);
                    free(cc);
                }
            }
            fprintf(out, "    %s: %s%s%s\n", kt, what, cols ? ": " : "", cols ? cols : "");
            free(kt);
            free(cols);
        }
        if (json_is_integer(json_object_get(t, "repaired")))
            fprintf(out, "    repaired: %lld\n",
                    (long long)json_integer_value(json_object_get(t, "repaired")));
        long long more = (long long)json_integer_value(json_object_get(t, "more"));
        if (more > 0)
            fprintf(out, "    ... and %lld more (not listed)\n", more);
        const char *note = json_string_value(json_object_get(t, "note"));
        if (note) {
            char *nc = zxctl_clean(note);
            fprintf(out, "    note: %s\n", nc);
            free(nc);
        }
    }
}

char *zxctl_verify_line(const json_t *last)
{
    if (!json_is_object(last))
        return NULL;
    char *at = zxctl_fmt(json_object_get(last, "at"));
    char *tb = zxctl_fmt(json_object_get(last, "table"));
    char *out = zxctl_xrealloc(NULL, strlen(at) + strlen(tb) + 200);
    char rep[64] = "";
    if (json_is_integer(json_object_get(last, "repaired")))
        snprintf(rep, sizeof(rep), ", %lld repaired",
                 (long long)json_integer_value(json_object_get(last, "repaired")));
    sprintf(out, "  last verify: %s, %lld rows compared, %lld differing%s%s%s\n", at,
            (long long)json_integer_value(json_object_get(last, "compared")),
            (long long)json_integer_value(json_object_get(last, "differing")), rep,
            json_is_string(json_object_get(last, "table")) ? ", table " : "",
            json_is_string(json_object_get(last, "table")) ? tb : "");
    free(at);
    free(tb);
    return out;
}
