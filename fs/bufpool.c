/* Read buffers are reused: a fresh 1 MiB malloc per request costs an mmap and
 * 256 page faults, more than generating the data. */
#include <stdlib.h>

#include "fs_i.h"

void *dl_fs_buf_get(struct dl_fs *fs)
{
	void *b = NULL;

	pthread_mutex_lock(&fs->buf_lock);
	if (fs->nbufs)
		b = fs->bufs[--fs->nbufs];
	pthread_mutex_unlock(&fs->buf_lock);
	if (!b && posix_memalign(&b, 4096, fs->max_read))
		b = NULL;
	return b;
}

void dl_fs_buf_put(struct dl_fs *fs, void *b)
{
	pthread_mutex_lock(&fs->buf_lock);
	if (fs->nbufs < fs->bufs_cap) {
		fs->bufs[fs->nbufs++] = b;
		b = NULL;
	}
	pthread_mutex_unlock(&fs->buf_lock);
	free(b);
}
