/*
 * config_testlib.c — the helpers the configuration loader's unit tests
 * share (config_testlib.h says what each returns and owns).
 */
#include "config_testlib.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int failures;
char tmpdir[64];
char srcroot[4096];

/* p's http options (http_opts.h), or all-zero ones for another source. */
const zx_http_opts *HO(const zx_conf_pipeline *p)
{
    static const zx_http_opts none;
    const zx_http_opts *o = zx_http_opts_of(p);

    return o ? o : &none;
}

const char *tpath(const char *name)
{
    static char buf[4][256];
    static int k;

    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s/%s", tmpdir, name);
    return buf[k];
}

void write_file(const char *name, const char *text)
{
    FILE *f = fopen(tpath(name), "w");

    if (!f || fputs(text, f) < 0) {
        fprintf(stderr, "%s:%d: cannot write %s\n", __FILE__, __LINE__, name);
        exit(2);
    }
    fclose(f);
}

const zx_kafka_opts *kopts(const zx_conf_pipeline *p)
{
    static const zx_kafka_opts none;
    return p && p->own && p->source && !strcmp(p->source, "kafka") ? p->own : &none;
}

/* Write `text` to t.yaml and load it. */
zx_conf *load(const char *text, unsigned flags, zx_conf_errors *e)
{
    zx_conf_errors_free(e);
    write_file("t.yaml", text);
    return zx_conf_load(tpath("t.yaml"), flags, e);
}

void dump(const zx_conf_errors *e)
{
    size_t i;

    for (i = 0; i < e->n; i++)
        fprintf(stderr, "    got: %s\n", e->msgs[i]);
}

/* Some message is "<t.yaml>:line:col: ..." and contains `sub`. */
int has_err(const zx_conf_errors *e, int line, int col, const char *sub)
{
    char pre[320];
    size_t i;

    snprintf(pre, sizeof(pre), "%s:%d:%d: ", tpath("t.yaml"), line, col);
    for (i = 0; i < e->n; i++)
        if (!strncmp(e->msgs[i], pre, strlen(pre)) && strstr(e->msgs[i], sub))
            return 1;
    return 0;
}

int any_contains(const zx_conf_errors *e, const char *sub)
{
    size_t i;

    for (i = 0; i < e->n; i++)
        if (strstr(e->msgs[i], sub))
            return 1;
    return 0;
}

char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0;

    if (!f)
        return NULL;
    FILE *m = open_memstream(&buf, &len);
    int ch;
    while ((ch = fgetc(f)) != EOF)
        fputc(ch, m);
    fclose(m);
    fclose(f);
    return buf;
}

/* First of: argv[1], $ZX_SOURCE_ROOT, the prefix of __FILE__ before
 * tests/unit/config_testlib.c, ".", "..", that holds conf/OPTIONS.md. */
static void find_srcroot(int argc, char **argv)
{
    const char *suffix = "tests/unit/config_testlib.c";
    size_t fl = strlen(__FILE__), sl = strlen(suffix), i;
    char from_file[4096] = "", probe[4200];
    const char *cands[5];

    if (fl >= sl && !strcmp(__FILE__ + fl - sl, suffix))
        snprintf(from_file, sizeof(from_file), "%.*s", (int)(fl - sl), __FILE__);
    cands[0] = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
    cands[1] = getenv("ZX_SOURCE_ROOT");
    cands[2] = from_file[0] ? from_file : NULL;
    cands[3] = ".";
    cands[4] = "..";
    for (i = 0; i < 5; i++) {
        if (!cands[i] || !*cands[i])
            continue;
        snprintf(probe, sizeof(probe), "%s/conf/OPTIONS.md", cands[i]);
        if (access(probe, R_OK) == 0 || i < 2) {
            snprintf(srcroot, sizeof(srcroot), "%s", cands[i]);
            return;
        }
    }
    snprintf(srcroot, sizeof(srcroot), ".");
}

int has_sub(const zx_conf_errors *e, const char *sub)
{
    return any_contains(e, sub);
}

/* Column (1-based) just after the first `tok` on line `line` (1-based) of
 * text: where the value written after tok starts.  0 when not found. */
int col_after(const char *text, int line, const char *tok)
{
    const char *l = text, *nl, *at;

    for (int i = 1; l && i < line; i++) {
        l = strchr(l, '\n');
        if (l)
            l++;
    }
    if (!l)
        return 0;
    nl = strchr(l, '\n');
    at = strstr(l, tok);
    if (!at || (nl && at > nl))
        return 0;
    return (int)(at - l) + (int)strlen(tok) + 1;
}

int cfg_test_init(int argc, char **argv)
{
    find_srcroot(argc, argv);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/zx_test_config_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return -1;
    }
    return 0;
}

int cfg_test_finish(const char *name)
{
    DIR *d = opendir(tmpdir);
    struct dirent *de;
    char path[sizeof(tmpdir) + sizeof(de->d_name) + 1];

    /* The files the tests leave (t.yaml, web.key, bad.key, ca.pem,
     * client.pem, client.key...): plain files only, no subdirectory. */
    while (d && (de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            snprintf(path, sizeof(path), "%s/%s", tmpdir, de->d_name);
            unlink(path);
        }
    if (d)
        closedir(d);
    if (rmdir(tmpdir) != 0)
        fprintf(stderr, "%s: cannot remove %s\n", name, tmpdir);
    if (failures)
        fprintf(stderr, "%s: %d check(s) failed\n", name, failures);
    else
        printf("%s: all checks passed\n", name);
    return failures ? 1 : 0;
}
