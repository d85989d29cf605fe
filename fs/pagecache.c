/* The kernel's page cache and the storage model: a file's pages may stay in
 * the kernel only while the cache policy is `kernel` (and io is not
 * direct); with an emulated cache every read must reach the daemon. What
 * the kernel keeps is dropped on `dliofs cache drop` and when the policy
 * changes, so no page cached earlier answers a read the model never saw. */
#include <errno.h>

#include "fs_i.h"
#include "served.h"

int dl_fs_direct_io(struct dl_fs *fs)
{
	enum dl_cache_policy pol;

	if (fs->io_direct)
		return 1;
	pol = fs->pacer ? dl_pacer_cache_policy(fs->pacer) : fs->cfg->pacer.cache.policy;
	return pol != DL_CACHE_KERNEL;
}

uint64_t dl_fs_blksize(struct dl_fs *fs)
{
	if (fs->pacer)
		return dl_pacer_blksize(fs->pacer);
	return fs->cfg->pacer.blksize ? fs->cfg->pacer.blksize : 1ULL << 20;
}

static void inval_one(void *arg, const struct dl_node *n)
{
	struct dl_fs *fs = arg;

	/* -ENOENT: the kernel has forgotten the inode, and its pages with it. */
	fuse_lowlevel_notify_inval_inode(fs->se, dl_node_ino(n), 0, 0);
}

uint64_t dl_fs_drop_kernel_cache(struct dl_fs *fs)
{
	if (!fs->se || !fs->served)
		return 0;
	return dl_served_drain(fs->served, inval_one, fs);
}
