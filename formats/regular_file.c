/*
 * regular_file.c - the one way parity opens a file whose kind it does not control (the
 * rule is in regular_file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats/regular_file.h"

static const char *kind_name(mode_t mode)
{
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a file";
}

FILE *parity_open_regular(const char *zPath, uint64_t maxBytes, char *zErr, size_t nErr)
{
    struct stat st;
    FILE *f;
    /* O_NONBLOCK: a FIFO with no writer would block open(2) itself, before fstat could
     * say what it is. It does nothing to a regular file, and is cleared below anyway. */
    int fd = open(zPath, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

    if (fd < 0) {
        snprintf(zErr, nErr, "%s: %s", zPath, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) != 0) {
        snprintf(zErr, nErr, "%s: %s", zPath, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(zErr, nErr, "%s: not a regular file (%s)", zPath, kind_name(st.st_mode));
        goto fail;
    }
    if (maxBytes > 0 && (uint64_t)st.st_size > maxBytes) {
        snprintf(zErr, nErr, "%s: %" PRIu64 " bytes, over the limit of %" PRIu64, zPath,
                 (uint64_t)st.st_size, maxBytes);
        goto fail;
    }
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0 || !(f = fdopen(fd, "rb"))) {
        snprintf(zErr, nErr, "%s: %s", zPath, strerror(errno));
        goto fail;
    }
    return f;
fail:
    close(fd);
    return NULL;
}
