/*
 * secret_store.h — the encrypted secrets of `${secret:NAME}` (conf/secrets.c)
 * and `zxctl secret` (zxctl/zxctl_secret.c).
 *
 * Two files.  The key file holds one random 256-bit key as 64 hex digits
 * and a newline; it is the operator's (made 0600 by `zxctl secret init`),
 * and one readable by its group or by others is refused, as ssh refuses
 * such a private key.  The store holds the secrets, each encrypted on its
 * own with AES-256-GCM under that key (a fresh 96-bit nonce per value; the
 * name is the associated data, so a value moved under another name fails
 * its check).  The store is JSON:
 *
 *   {"format": "zx_secret_store", "version": 1, "key_id": "<16 hex>",
 *    "secrets": {"crm_token": {"nonce": "<24 hex>", "data": "<base64 of
 *                 ciphertext and 16-byte tag>", "set_at": "<RFC 3339>"}}}
 *
 * key_id names the key the store was written under (the first 8 bytes of
 * SHA-256 of "zx_secret_key_id" and the key), so a store and a key that do
 * not belong together are told apart from a damaged value.  The store is
 * written whole, to a temporary file renamed into place, mode 0600.
 *
 * Bounds (a store is outside input): at most ZX_SS_MAX_FILE bytes,
 * ZX_SS_MAX_SECRETS secrets, names of ZX_SS_NAME_MAX bytes of letters,
 * digits, '_', '-' and '.', values of ZX_SS_MAX_VALUE bytes.
 *
 * It must never: put a value, or the key, in an error message; leave a
 * decrypted value or the key in freed memory (explicit_bzero); write a
 * store readable by others.
 *
 * Every function returns 0, or -1 with one line in err (errlen bytes).
 */
#ifndef ZX_COMMON_SECRET_STORE_H
#define ZX_COMMON_SECRET_STORE_H

#include <stddef.h>
#include <stdint.h>

#define ZX_SS_KEY_LEN     32
#define ZX_SS_NAME_MAX    128
#define ZX_SS_MAX_VALUE   (64u << 10)
#define ZX_SS_MAX_SECRETS 10000
#define ZX_SS_MAX_FILE    (16u << 20)

typedef struct zx_secret_store zx_secret_store;

/* Whether name is a valid secret name (1) or not (0). */
int zx_ss_name_ok(const char *name);

/* Read the key file at path into key.  Errors: missing, not a regular
 * file, readable by group or others, not 64 hex digits. */
int zx_ss_read_key(const char *path, unsigned char key[ZX_SS_KEY_LEN], char *err,
                   size_t errlen);

/* Make a new key file at path (mode 0600, refused when it exists), with a
 * fresh random key, also put in key.  tmp_then_rename: write path.tmp and
 * rename it over path (rotation); else create path itself exclusively. */
int zx_ss_write_key(const char *path, unsigned char key[ZX_SS_KEY_LEN], int tmp_then_rename,
                    char *err, size_t errlen);

/* The store at path; a missing file is an empty store (key_id unset).
 * *out is the caller's (zx_ss_free). */
int zx_ss_load(const char *path, zx_secret_store **out, char *err, size_t errlen);

/* The same from text (len bytes): the decoder, fuzzed. */
int zx_ss_parse(const char *text, size_t len, zx_secret_store **out, char *err, size_t errlen);

/* A new empty store; NULL out of memory. */
zx_secret_store *zx_ss_new(void);

void zx_ss_free(zx_secret_store *s);

/* Whether the store was written under key (1), another key (0), or has
 * no secrets and no key yet (1). */
int zx_ss_key_matches(const zx_secret_store *s, const unsigned char key[ZX_SS_KEY_LEN]);

/* The value of secret name, decrypted with key, into *value (NUL-
 * terminated, *len bytes; the caller wipes and frees it).  Errors: no such
 * secret; the store belongs to another key; the check failed. */
int zx_ss_get(const zx_secret_store *s, const unsigned char key[ZX_SS_KEY_LEN], const char *name,
              char **value, size_t *len, char *err, size_t errlen);

/* Set (add or replace) secret name to value (len bytes, 1..ZX_SS_MAX_VALUE)
 * encrypted with key; the store must match key (zx_ss_key_matches). */
int zx_ss_set(zx_secret_store *s, const unsigned char key[ZX_SS_KEY_LEN], const char *name,
              const char *value, size_t len, char *err, size_t errlen);

/* Remove secret name: 1 removed, 0 there was none. */
int zx_ss_delete(zx_secret_store *s, const char *name);

/* Every secret decrypted with oldkey and encrypted again with newkey. */
int zx_ss_rekey(zx_secret_store *s, const unsigned char oldkey[ZX_SS_KEY_LEN],
                const unsigned char newkey[ZX_SS_KEY_LEN], char *err, size_t errlen);

/* The number of secrets, and the name and set_at (RFC 3339, "" unknown) of
 * the i-th in name order; valid until the store changes. */
size_t zx_ss_count(const zx_secret_store *s);
const char *zx_ss_name(const zx_secret_store *s, size_t i, const char **set_at);

/* Write the store to path (path.tmp, fsync, rename; mode 0600). */
int zx_ss_save(const zx_secret_store *s, const char *path, char *err, size_t errlen);

#endif
