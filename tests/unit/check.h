/*
 * check.h — the unit tests' one assertion: CHECK(cond) prints the file,
 * line and condition of a failed check and counts it in `failures`; the
 * test's main returns failures != 0.  Include it once, in one test file.
 */
#ifndef ZX_TESTS_CHECK_H
#define ZX_TESTS_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            printf("%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);  \
            failures++;                                                      \
        }                                                                    \
    } while (0)

#endif
