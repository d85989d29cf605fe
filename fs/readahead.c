/* The kernel caps a FUSE mount's readahead at 128 KiB (it only lowers the bdi's
 * value at INIT), which halves cold sequential throughput through the page
 * cache; the bdi's sysfs knob lifts the cap after the mount is up. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fs_i.h"

/* Only root may write it, and a failure only costs speed. */
static void set_readahead(const struct stat *st, uint64_t bytes)
{
	char path[128], val[32];
	int fd, n;

	if (!bytes)
		return;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major(st->st_dev),
		 minor(st->st_dev));
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = snprintf(val, sizeof(val), "%llu", (unsigned long long)(bytes / 1024));
	if (write(fd, val, (size_t)n) != n) {
		/* Keep the kernel's default. */
	}
	close(fd);
}

struct ra_job {
	char mountpoint[4096];
	uint64_t bytes;
};

/* Runs beside the session loop: the stat blocks until the loop has answered
 * the kernel's INIT, after which the mount's bdi exists. */
static void *readahead_thread(void *arg)
{
	struct ra_job *j = arg;
	struct stat st;

	if (stat(j->mountpoint, &st) == 0 && st.st_ino == FUSE_ROOT_ID)
		set_readahead(&st, j->bytes);
	free(j);
	return NULL;
}

void dl_fs_start_readahead(const struct dl_mount_opts *o)
{
	struct ra_job *j;
	pthread_attr_t attr;
	pthread_t th;

	if (!o->readahead || !(j = calloc(1, sizeof(*j))))
		return;
	snprintf(j->mountpoint, sizeof(j->mountpoint), "%s", o->mountpoint);
	j->bytes = o->readahead;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, readahead_thread, j))
		free(j);
	pthread_attr_destroy(&attr);
}
