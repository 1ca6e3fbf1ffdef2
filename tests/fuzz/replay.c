/*
 * replay.c — a main() for the fuzz targets of this folder when they are not
 * built with libFuzzer: runs LLVMFuzzerTestOneInput once on every file
 * given, or on every file of every folder given (not recursive).  meson
 * builds each target with it as a unit test over its seed corpus and saved
 * reproducers (corpus/<target>/), so every build, gcc and ASan included,
 * replays them.  Exit status 0 when every input ran (a broken invariant
 * aborts), 1 when a file cannot be read.  Must never be linked into zx.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs the target on the file at path.  0, or -1 (message printed). */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 4096, n = 0, k;
    uint8_t *buf = malloc(cap);
    while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            uint8_t *nb = cap < SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    int bad = ferror(f) || !buf;
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: cannot read the file\n", path);
        free(buf);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    long runs = 0;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            rc = 1;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            rc |= run_file(argv[i]) != 0;
            runs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        if (!d) {
            perror(argv[i]);
            rc = 1;
            continue;
        }
        while ((e = readdir(d)) != NULL) {
            char path[4096];
            if (e->d_name[0] == '.')
                continue;
            snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
            rc |= run_file(path) != 0;
            runs++;
        }
        closedir(d);
    }
    printf("%ld inputs replayed\n", runs);
    return rc;
}
