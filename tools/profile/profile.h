/* `dliofs profile` (tools/profile/): measures the storage a directory is on
 * and writes a storage profile the pacer reproduces. A tool linked into the
 * dliofs binary; this is all fs/main.c sees of it. */
#ifndef DLIOFS_PROFILE_H
#define DLIOFS_PROFILE_H

/* `dliofs profile ...`: argv[0] is "profile". Returns the exit status. */
int dl_cli_profile(int argc, char **argv);

#endif
