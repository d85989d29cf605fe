/* The S3 endpoint (tools/s3/): `dliofs s3 serve CONFIG --listen HOST:PORT`
 * serves every dataset as a bucket and every file as an object, with the
 * bytes, sizes and names the mount has. */
#ifndef DLIOFS_S3_H
#define DLIOFS_S3_H

/* `dliofs s3 ...`: argv[0] is "s3". Returns the process exit status. */
int dl_s3_main(int argc, char **argv);

#endif
