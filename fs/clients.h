/* Who sent a request. The kernel gives the calling thread's id; a training
 * job is many processes (DataLoader workers, MPI ranks, tf.data threads).
 * Requests are grouped into jobs: the processes that share DLIOFS_JOB=NAME in
 * their environment, else the ranks of one MPI launch (and their workers),
 * else those of one process group (what a shell makes of one command line).
 * A job is named by DLIOFS_JOB, "mpi <launch>: <a rank's command line>", or
 * its group leader's command line. */
#ifndef DLIOFS_FS_CLIENTS_H
#define DLIOFS_FS_CLIENTS_H

#include <stddef.h>
#include <stdint.h>

struct dl_client {
	uint32_t tid;	/* the calling thread, as the kernel gives it (0: the kernel) */
	uint32_t pid;	/* its process (thread group) */
	uint32_t job;	/* its job (0: none: the kernel, or /proc could not tell) */
};

struct dl_clients;
int dl_clients_new(struct dl_clients **out);
void dl_clients_free(struct dl_clients *c);
/* What tid belongs to (cached; /proc is read for threads and processes not
 * seen in the last seconds). Returns 1 when /proc was read (the job may
 * have gained a process or thread), else 0. */
int dl_clients_resolve(struct dl_clients *c, uint32_t tid, uint64_t now_ns,
		       struct dl_client *out);
/* A job's name and how many processes and threads of it were seen. */
int dl_clients_job(struct dl_clients *c, uint32_t job, char *name, size_t len, uint32_t *procs,
		   uint32_t *threads);

#endif
