/*
 * test_scrub.c — zx_scrub_copies (common/scrub.c): every copy of a string
 * in the heap (small and large allocations), on the stack, in static data
 * and in freed memory is zeroed; other bytes, short strings and shared
 * mappings are left alone.
 */
#include "common/scrub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int failures;
#define CHECK(c) do {                                                     \
        if (!(c)) {                                                       \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__,        \
                    __LINE__, #c);                                        \
            failures++;                                                   \
        }                                                                 \
    } while (0)

static char in_data[64] = "before:s3cret-Of-Pipeline-B:after";

int main(void)
{
    const char *secret = "s3cret-Of-Pipeline-B";
    char pat[32];
    /* the pattern given by a copy on the heap, like the config's string */
    char *cfg = strdup(secret);
    char *small = malloc(100);
    char *big = malloc(1 << 20);   /* mmap'd by malloc */
    char stack[64];
    char *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(cfg && small && big && shared != MAP_FAILED);
    snprintf(small, 100, "x%sy%s", secret, secret);
    memset(big, 'a', 1 << 20);
    memcpy(big + (1 << 20) - strlen(secret), secret, strlen(secret));   /* at the very end */
    snprintf(stack, sizeof(stack), "[%s]", secret);
    snprintf(shared, 4096, "%s", secret);
    char *freed = strdup(secret);
    volatile char *freed_at = freed;
    free(freed);
    char *shortv = strdup("short");   /* under ZX_SCRUB_MIN: not searched for */
    char *keep = strdup("another-secret-kept");
    /* a large mapping, read only where resident */
    size_t sparse_len = 256u << 20;
    char *sparse = mmap(NULL, sparse_len, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECK(sparse != MAP_FAILED);
    size_t at = (200u << 20) + 4090;   /* across a page boundary */
    memcpy(sparse + at, secret, strlen(secret));

    const char *pats[] = {cfg, NULL, "short", "s3cret"}; /* "s3cret": too short */
    long n = zx_scrub_copies(pats, 4);
    snprintf(pat, sizeof(pat), "%s", secret);   /* again: only to compare */
    CHECK(n >= 6);
    CHECK(cfg[0] == '\0' && memchr(cfg, 's', strlen(secret)) == NULL);
    CHECK(small[0] == 'x' && small[1] == '\0' && small[1 + strlen(secret)] == 'y' &&
          small[2 + strlen(secret)] == '\0');
    CHECK(big[0] == 'a' && big[(1 << 20) - strlen(secret) - 1] == 'a' &&
          big[(1 << 20) - 1] == '\0');
    CHECK(stack[0] == '[' && stack[1] == '\0' && stack[1 + strlen(secret)] == ']');
    CHECK(strcmp(in_data, "before:") == 0 &&
          strcmp(in_data + 7 + strlen(secret), ":after") == 0);
    CHECK(strcmp(shared, pat) == 0);        /* shared mappings are not touched */
    CHECK(strcmp(shortv, "short") == 0);
    CHECK(strcmp(keep, "another-secret-kept") == 0);
    for (size_t i = 0; i < strlen(secret); i++)
        CHECK(sparse[at + i] == '\0');
    (void)freed_at;
    CHECK(zx_scrub_copies(NULL, 0) == 0);
    free(cfg);
    free(small);
    free(big);
    free(shortv);
    free(keep);
    munmap(sparse, sparse_len);
    munmap(shared, 4096);
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    else
        printf("test_scrub: ok\n");
    return failures ? 1 : 0;
}
