/*
 * fileroots.h — the folders zx may write files into (reverse syncs'
 * `files` destinations and `zxctl send --to files:`): a path must lie
 * under one of a list of roots, and nothing below the root may be a
 * symbolic link, so neither "..", an absolute path elsewhere, nor a link
 * planted inside a root leads a write out of it.
 *
 * Paths are absolute and normalised (no "." or ".." components, no "//",
 * no trailing '/'), as zx_cf_abspath makes them.  Messages go to err (at
 * most errlen bytes, one line) and name the path.
 *
 * It must never follow a symbolic link below a root, nor create anything
 * outside one.
 */
#ifndef ZX_COMMON_FILEROOTS_H
#define ZX_COMMON_FILEROOTS_H

#include <stddef.h>

/* 1 when path is normalised as above (absolute, no "."/".."/empty
 * components, no trailing '/' unless it is "/"), else 0. */
int zx_fr_normalised(const char *path);

/* path (absolute) with "." and "//" dropped and each ".." taking away
 * the component before it, as text (no symbolic link is read): malloc'ed,
 * the caller frees it; NULL when path is not absolute or out of memory. */
char *zx_fr_normalise(const char *path);

/* The index of the first of roots[0..n) that path equals or lies under
 * (a whole-component prefix: /a/bc is not under /a/b), or -1. */
int zx_fr_root_of(const char *path, const char *const *roots, size_t n);

/* "A, B and C" of roots into out (cut short to fit); returns out. */
char *zx_fr_list(const char *const *roots, size_t n, char *out, size_t outlen);

/* Check the components of path below root (path under root) that exist:
 * none may be a symbolic link, each but the last must be a folder.  With
 * last_is_dir 0, the last component may be a regular file (or missing).
 * 0, or -1 with err naming the link.  Reads only (lstat). */
int zx_fr_check_below(const char *root, const char *path, int last_is_dir, char *err,
                      size_t errlen);

/* Open folder dir (dir equals root or lies under it) to create files in:
 * root with open() (made with its parents, mode 0755, when missing), then
 * each component below it with openat(O_NOFOLLOW | O_DIRECTORY), made
 * (mkdirat, 0755) when missing, so a symbolic link below root fails with
 * ELOOP / ENOTDIR instead of being followed.  Returns the folder's
 * descriptor (O_CLOEXEC; the caller closes it), or -1 with err. */
int zx_fr_open_dir(const char *root, const char *dir, char *err, size_t errlen);

#endif
