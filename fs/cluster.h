/* A cluster of mounts (`cluster:` in the config): the daemons one mpirun
 * starts are one storage system. Each runs an exchange thread that every
 * period gathers every node's demand with an MPI collective and installs
 * this node's share in its pacer (pacer/cluster.c has the arithmetic);
 * requests are still decided locally, with no round trip. */
#ifndef DLIOFS_FS_CLUSTER_H
#define DLIOFS_FS_CLUSTER_H

#include <stddef.h>

#include "dliofs/config.h"
#include "dliofs/pacer.h"

struct dl_cluster;

/* Join the cluster: MPI_Init_thread (mpirun's ranks, or a singleton: a
 * cluster of 1). -ENOTSUP without MPI at build time, -EIO when MPI cannot
 * give the thread level the exchange needs; the reason is on stderr. */
int dl_cluster_init(int *argc, char ***argv, const struct dl_cluster_cfg *cfg,
		    struct dl_cluster **out);
int dl_cluster_rank(const struct dl_cluster *cl);
int dl_cluster_size(const struct dl_cluster *cl);
/* MOUNTPOINT with each "{rank}" replaced by the rank: 0, or -ENAMETOOLONG. */
int dl_cluster_expand(const struct dl_cluster *cl, const char *in, char *out, size_t len);
/* Whether the exchange was started: a node that never started it must end
 * the cluster with dl_cluster_abort, as the others wait for it. */
int dl_cluster_started(const struct dl_cluster *cl);
/* Start exchanging for pacer p (the daemon's, until dl_cluster_stop);
 * retime(arg), called from the exchange thread when a grant says so
 * (dl_pacer_cluster_grant), re-times the requests waiting for their
 * replies; it must stay valid until dl_cluster_stop. */
int dl_cluster_start(struct dl_cluster *cl, struct dl_pacer *p, void (*retime)(void *),
		     void *arg);
/* Leave the exchange (the others go on without this node) and join the
 * thread. */
void dl_cluster_stop(struct dl_cluster *cl);
/* MPI_Finalize (it waits for every node to finalize) and free. */
void dl_cluster_fini(struct dl_cluster *cl);
/* A node that cannot serve ends the whole cluster: the others would wait
 * for it in every exchange. */
void dl_cluster_abort(struct dl_cluster *cl, int code);

#endif
