/*
 * test_fileroots.c — common/fileroots.c: normalising a path, finding its
 * root by whole components, refusing a symbolic link below a root (when
 * checking and when opening folders to write in), making missing folders.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "common/fileroots.h"

static void test_normalise(void)
{
    static const char *const cases[][2] = {
        {"/a/b/../c", "/a/c"},        {"/a/./b//c/", "/a/b/c"},
        {"/../../etc/x", "/etc/x"},   {"/a/b/../../..", "/"},
        {"/", "/"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *n = zx_fr_normalise(cases[i][0]);
        CHECK(n && !strcmp(n, cases[i][1]));
        if (n && strcmp(n, cases[i][1]))
            printf("  %s -> %s, want %s\n", cases[i][0], n, cases[i][1]);
        CHECK(n && zx_fr_normalised(n));
        free(n);
    }
    CHECK(zx_fr_normalise("rel/x") == NULL);
    CHECK(!zx_fr_normalised("/a/../b") && !zx_fr_normalised("/a/") && !zx_fr_normalised("a"));
}

static void test_root_of(void)
{
    const char *roots[] = {"/data/exports", "/srv/out"};
    CHECK(zx_fr_root_of("/data/exports", roots, 2) == 0);
    CHECK(zx_fr_root_of("/data/exports/x.csv", roots, 2) == 0);
    CHECK(zx_fr_root_of("/srv/out/a/b", roots, 2) == 1);
    CHECK(zx_fr_root_of("/data/exportsx/y", roots, 2) == -1);     /* whole components */
    CHECK(zx_fr_root_of("/data/exports/../y", roots, 2) == -1);   /* not normalised */
    CHECK(zx_fr_root_of("/etc/passwd", roots, 2) == -1);
    char list[100];
    CHECK(!strcmp(zx_fr_list(roots, 2, list, sizeof(list)), "/data/exports and /srv/out"));
}

static void test_links(void)
{
    char tmpl[] = "/tmp/zx_fileroots_XXXXXX";
    char *base = mkdtemp(tmpl);
    CHECK(base != NULL);
    if (!base)
        return;
    char root[300], out[300], link[400], path[500], err[700];
    snprintf(root, sizeof(root), "%s/root", base);
    snprintf(out, sizeof(out), "%s/out", base);
    CHECK(mkdir(out, 0755) == 0);

    /* a missing root is made, and the folders below it */
    snprintf(path, sizeof(path), "%s/a/b", root);
    CHECK(zx_fr_check_below(root, path, 1, err, sizeof(err)) == 0);
    int fd = zx_fr_open_dir(root, path, err, sizeof(err));
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && S_ISDIR(sb.st_mode));

    /* a link below the root: refused by both, nothing made through it */
    snprintf(link, sizeof(link), "%s/a/away", root);
    CHECK(symlink(out, link) == 0);
    snprintf(path, sizeof(path), "%s/a/away/deeper", root);
    CHECK(zx_fr_check_below(root, path, 1, err, sizeof(err)) < 0 &&
          strstr(err, "symbolic link") && strstr(err, link));
    snprintf(path, sizeof(path), "%s/a/away/x.csv", root);
    CHECK(zx_fr_check_below(root, path, 0, err, sizeof(err)) < 0);
    snprintf(path, sizeof(path), "%s/a/away/deeper", root);
    CHECK(zx_fr_open_dir(root, path, err, sizeof(err)) < 0 && strstr(err, "symbolic link"));
    snprintf(path, sizeof(path), "%s/deeper", out);
    CHECK(access(path, F_OK) != 0);
    /* the last component a link to a file */
    snprintf(path, sizeof(path), "%s/a/f.csv", root);
    CHECK(symlink("/etc/passwd", path) == 0);
    CHECK(zx_fr_check_below(root, path, 0, err, sizeof(err)) < 0 && strstr(err, "symbolic"));
    /* a folder outside the root */
    CHECK(zx_fr_open_dir(root, out, err, sizeof(err)) < 0 && strstr(err, "not under"));

    unlink(path);
    unlink(link);
    snprintf(path, sizeof(path), "%s/a/b", root);
    rmdir(path);
    snprintf(path, sizeof(path), "%s/a", root);
    rmdir(path);
    rmdir(root);
    rmdir(out);
    rmdir(base);
}

int main(void)
{
    test_normalise();
    test_root_of();
    test_links();
    if (!failures)
        printf("test_fileroots: all checks passed\n");
    return failures != 0;
}
