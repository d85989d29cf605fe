/* Private to fs/: what is mounted at a mountpoint already. */
#ifndef DLIOFS_FS_MOUNTPOINT_I_H
#define DLIOFS_FS_MOUNTPOINT_I_H

/* Before mounting at mnt (an absolute, resolved path): refuse (-EBUSY) a
 * live dliofs mount there, remove dead dliofs mounts there (their daemon
 * was killed: every access says ENOTCONN) and say so, refuse (-ENOTCONN) a
 * dead mount of another FUSE file system and say how to remove it. Other
 * mounts may be mounted over as before. A mountpoint inside a dliofs mount
 * (the nearest mount above it is one) is refused (-EBUSY). Messages go to
 * stderr. */
int dl_fs_mountpoint_check(const char *mnt);

#endif
