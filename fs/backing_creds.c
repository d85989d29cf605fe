/* Acting as the caller: a root daemon creates, links, renames and removes
 * names in a real directory under the fsuid, fsgid and supplementary groups
 * of the client that asked, so that the kernel itself checks the caller's
 * permissions (sticky bit included) on the inode actually at the name when
 * the call runs, and a new inode is born the caller's. A check by the daemon
 * followed by a call as root would leave a window in which another user's
 * file can take the name (issue #22).
 *
 * setfsuid and setfsgid change the calling thread only; so does the raw
 * setgroups system call (glibc's setgroups() changes every thread of the
 * process, which would hand the caller's groups to the other FUSE workers).
 * While the fsuid is not 0 the kernel drops the file capabilities of the
 * thread (CAP_DAC_OVERRIDE, CAP_CHOWN, CAP_FOWNER...), so only calls made
 * between bk_creds_enter and bk_creds_leave run as the caller. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backing_i.h"

static int set_groups(size_t n, const gid_t *list)
{
	return syscall(SYS_setgroups, n, list) ? -errno : 0;
}

/* The caller's groups into s->caller (s->ncaller), or its gid alone when
 * they cannot be read (fewer rights, never more). */
static int caller_groups(fuse_req_t req, const struct fuse_ctx *c, struct bk_creds *s)
{
	int n = fuse_req_getgroups(req, BK_CREDS_GROUPS, s->caller);

	if (n > BK_CREDS_GROUPS) {
		s->caller_heap = calloc((size_t)n, sizeof(gid_t));
		if (!s->caller_heap)
			return -ENOMEM;
		n = fuse_req_getgroups(req, n, s->caller_heap);
		if (n < 0) {
			free(s->caller_heap);
			s->caller_heap = NULL;
		}
	}
	if (n < 0) {
		s->caller[0] = c->gid;
		n = 1;
	}
	s->ncaller = n;
	return 0;
}

/* The thread's own groups, to restore. */
static int own_groups(struct bk_creds *s)
{
	int n = getgroups(BK_CREDS_GROUPS, s->own);

	if (n < 0 && errno == EINVAL) {
		n = getgroups(0, NULL);
		if (n < 0)
			return -errno;
		s->own_heap = calloc((size_t)n + 1, sizeof(gid_t));
		if (!s->own_heap)
			return -ENOMEM;
		n = getgroups(n, s->own_heap);
	}
	if (n < 0)
		return -errno;
	s->nown = n;
	return 0;
}

static void creds_free(struct bk_creds *s)
{
	free(s->caller_heap);
	free(s->own_heap);
	s->caller_heap = s->own_heap = NULL;
}

int bk_creds_enter(fuse_req_t req, struct bk_creds *s)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	int ret;

	memset(s, 0, sizeof(*s));
	/* A daemon that is not root acts as itself; a root caller is root. */
	if (geteuid() != 0 || !c || (c->uid == 0 && c->gid == 0))
		return 0;
	ret = own_groups(s);
	if (!ret)
		ret = caller_groups(req, c, s);
	if (!ret)
		ret = set_groups((size_t)s->ncaller, s->caller_heap ? s->caller_heap : s->caller);
	if (ret) {
		creds_free(s);
		return ret;
	}
	s->on = 1;
	s->fsgid = (gid_t)setfsgid(c->gid);
	s->fsuid = (uid_t)setfsuid(c->uid);
	/* setfsuid says nothing on failure: ask what is in force. */
	if ((uid_t)setfsuid((uid_t)-1) != c->uid || (gid_t)setfsgid((gid_t)-1) != c->gid) {
		bk_creds_leave(s);
		return -EPERM;
	}
	return 0;
}

void bk_creds_leave(struct bk_creds *s)
{
	if (!s->on)
		return;
	setfsuid(s->fsuid);
	setfsgid(s->fsgid);
	if (set_groups((size_t)s->nown, s->own_heap ? s->own_heap : s->own) ||
	    (uid_t)setfsuid((uid_t)-1) != s->fsuid)
		fprintf(stderr, "dliofs: backing: could not restore the daemon's credentials after "
				"acting as a client: %s\n", strerror(errno));
	s->on = 0;
	creds_free(s);
}
