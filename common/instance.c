/*
 * instance.c — see instance.h.
 */
#include "common/instance.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* The id in the file at path into out: 1 read, 0 no file, -1 error. */
static int read_id(const char *path, char *out, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    char buf[ZX_INSTANCE_ID_LEN + 8];
    ssize_t n = read(fd, buf, sizeof(buf));
    close(fd);
    if (n < 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    size_t len = (size_t)n;
    if (len == ZX_INSTANCE_ID_LEN + 1 && buf[ZX_INSTANCE_ID_LEN] == '\n')
        len--;
    int ok = len == ZX_INSTANCE_ID_LEN;
    for (size_t i = 0; ok && i < len; i++)
        ok = (buf[i] >= '0' && buf[i] <= '9') || (buf[i] >= 'a' && buf[i] <= 'f');
    if (!ok) {
        snprintf(err, errlen, "%s does not hold an instance id (%d lowercase hex digits): "
                 "restore it from a backup, or remove it to make a new one (this zxd's rows "
                 "in a shared workspace are then another instance's)", path,
                 ZX_INSTANCE_ID_LEN);
        return -1;
    }
    memcpy(out, buf, ZX_INSTANCE_ID_LEN);
    out[ZX_INSTANCE_ID_LEN] = '\0';
    return 1;
}

int zx_instance_id(const char *data_dir, char *out, char *err, size_t errlen)
{
    char path[4200], tmp[4300];
    snprintf(path, sizeof(path), "%s/instance-id", data_dir);
    int rc = read_id(path, out, err, errlen);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    uint64_t r;
    if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
        snprintf(err, errlen, "cannot make an instance id: getrandom: %s", strerror(errno));
        return -1;
    }
    char line[ZX_INSTANCE_ID_LEN + 2];
    snprintf(line, sizeof(line), "%016llx\n", (unsigned long long)r);
    snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int bad = fd < 0;
    if (!bad)
        bad = write(fd, line, ZX_INSTANCE_ID_LEN + 1) != ZX_INSTANCE_ID_LEN + 1 ||
              fsync(fd) < 0;
    if (fd >= 0)
        close(fd);
    /* link, not rename: a file another first start put there wins */
    if (!bad && link(tmp, path) < 0 && errno != EEXIST)
        bad = 1;
    int e = errno;
    unlink(tmp);
    if (bad) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(e));
        return -1;
    }
    rc = read_id(path, out, err, errlen);
    return rc == 1 ? 0 : -1;
}
