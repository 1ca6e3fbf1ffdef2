/*
 * test_util.c — messages stay one line whatever they quote
 * (common/util.h: zx_oneline, zx_seterr; common/log.h: zx_log): a
 * parser's error text near a client's bytes may hold a newline, and a
 * log line or an error split in two would let outside text forge the
 * next one.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/log.h"
#include "common/util.h"

int main(void)
{
    char s[] = "near 'a\nb\tc\rd\x7f'";
    CHECK(zx_oneline(s) == s && !strcmp(s, "near 'a b c d '"));
    CHECK(zx_oneline(NULL) == NULL);

    char err[64];
    CHECK(zx_seterr(err, sizeof(err), "not JSON: %s", "x\nlevel=error forged") == -1);
    CHECK(!strchr(err, '\n') && !strcmp(err, "not JSON: x level=error forged"));

    /* a log line: exactly one newline, at its end */
    int fds[2];
    CHECK(pipe(fds) == 0);
    int saved = dup(STDERR_FILENO);
    dup2(fds[1], STDERR_FILENO);
    zx_error("event=bad error=\"%s\"", "one\ntwo\r\nthree");
    dup2(saved, STDERR_FILENO);
    close(fds[1]);
    char line[4096];
    ssize_t n = read(fds[0], line, sizeof(line) - 1);
    CHECK(n > 0);
    line[n > 0 ? n : 0] = '\0';
    CHECK(strchr(line, '\n') == line + n - 1);
    CHECK(strstr(line, "error=\"one two  three\"") != NULL);
    if (!failures)
        printf("util: ok\n");
    return failures != 0;
}
