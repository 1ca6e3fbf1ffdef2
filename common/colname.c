/*
 * colname.c — column-name normalisation (rule in colname.h).
 * Must never allocate, never use the locale (no tolower/isalpha).
 */
#include "common/colname.h"

#include <stdio.h>
#include <string.h>

/* 0: byte becomes part of a '_' run; otherwise the output byte. */
static unsigned char map_byte(unsigned char c)
{
    if (c >= 'a' && c <= 'z')
        return c;
    if (c >= 'A' && c <= 'Z')
        return (unsigned char)(c + ('a' - 'A'));
    if ((c >= '0' && c <= '9') || c == '_')
        return c;
    return 0;
}

const char *const zx_meta_names[] = {
    "_ingested_at", "_request_id", "_key", "_partition", "_offset", "_timestamp",
    "_shard", "_sequence", "_partition_key", "_arrival", NULL,
};

int zx_colname_is_reserved(const char *name)
{
    if (name[0] != '_')
        return 0;
    if (strncmp(name, "_zx", 3) == 0)
        return 1;
    for (size_t i = 0; zx_meta_names[i]; i++)
        if (strcmp(name, zx_meta_names[i]) == 0)
            return 1;
    /* the workspace's overflow column (workers/writer/workspace.h) */
    return strcmp(name, "_extra") == 0;
}

size_t zx_colname_normalise(const char *in, size_t n, char out[ZX_COLNAME_MAX + 1])
{
    size_t o = 0;
    int in_run = 0;

    for (size_t i = 0; i < n && o < ZX_COLNAME_MAX; i++) {
        unsigned char c = map_byte((unsigned char)in[i]);
        if (c) {
            if (o == 0 && c >= '0' && c <= '9')
                out[o++] = '_';                  /* rule (c) */
            if (o < ZX_COLNAME_MAX)
                out[o++] = (char)c;
            in_run = 0;
        } else if (!in_run) {
            out[o++] = '_';                      /* rule (b) */
            in_run = 1;
        }
    }
    if (o == 0)
        out[o++] = '_';                          /* rule (d) */
    out[o] = '\0';

    if (out[0] == '_' && zx_colname_is_reserved(out)) {   /* rule (f) */
        char tmp[ZX_COLNAME_MAX + 1];
        size_t keep = o + 4 > ZX_COLNAME_MAX ? ZX_COLNAME_MAX - 4 : o;
        memcpy(tmp, out, keep);
        memcpy(out, "data", 4);
        memcpy(out + 4, tmp, keep);
        o = keep + 4;
        out[o] = '\0';
    }
    return o;
}

size_t zx_colname_suffix(const char *name, size_t n, unsigned k,
                         char out[ZX_COLNAME_MAX + 1])
{
    char sfx[16];
    int sl = snprintf(sfx, sizeof(sfx), "_%u", k);
    size_t keep = n;
    if (keep + (size_t)sl > ZX_COLNAME_MAX)
        keep = ZX_COLNAME_MAX - (size_t)sl;
    memmove(out, name, keep);
    memcpy(out + keep, sfx, (size_t)sl + 1);
    return keep + (size_t)sl;
}
