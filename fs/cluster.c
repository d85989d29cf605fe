/* The exchange of a cluster of mounts (cluster.h), over MPI.
 *
 * MPI is initialised with MPI_THREAD_SERIALIZED: the main thread calls
 * MPI_Init_thread (the rank names the mountpoint before anything mounts)
 * and MPI_Finalize; the exchange thread makes every call in between, and
 * never at the same time as the main thread (it is started after the one
 * and joined before the other). FUNNELED would not do: the exchange thread
 * is not the thread that initialised MPI.
 *
 * Each round (every cluster.period, on a clock of its own):
 *   1. sample the pacer's counts and make this node's record from the
 *      samples a window and half a window ago (pacer/cluster.c);
 *   2. MPI_Iallgather the records, then wait for it with MPI_Test and
 *      sleeps growing from 50 us to 1 ms: a blocking collective would spin
 *      a core for the slowest node (Open MPI polls), and the daemons share
 *      the machine with the readers they serve;
 *   3. every node runs the same allocation on the same table and installs
 *      its own share; the table is kept for stats.json. When the share
 *      grew enough that the node's waiting requests should go faster (a
 *      node that became busy after idle time), the daemon re-times them
 *      (the retime callback: its timer's waiting replies).
 * A node leaving (unmounted) says so in its record; after that round every
 * node calls MPI_Comm_split without it, and the rest go on among
 * themselves. The leaving node then waits in MPI_Finalize for the others
 * (MPI's rule: mpirun ends when all ranks finalize). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef DL_HAVE_MPI
#include <mpi.h>
#endif

#include "dliofs/clock.h"
#include "dliofs/subst.h"
#include "cluster.h"

/* More requests at once than any device's queue (PACER_MAX_QUEUE_DEPTH). */
#define PEAK_MAX 1e6

struct dl_cluster {
	struct dl_cluster_cfg cfg;
	int rank, size;
#ifdef DL_HAVE_MPI
	MPI_Comm comm;
#endif
	struct dl_pacer *pacer;
	void (*retime)(void *); /* the waiting requests again, after a share grew */
	void *retime_arg;
	pthread_t th;
	int started, joined; /* the thread runs; it ran (and left in order) */
	atomic_int stop;
	/* the pacer's samples of the last window, a ring */
	struct dl_cluster_sample *ring;
	unsigned ring_len;
	uint64_t rounds;
	struct dl_cluster_node *all, *live;
	struct dl_cluster_grant *grants;
};

int dl_cluster_rank(const struct dl_cluster *cl) { return cl->rank; }
int dl_cluster_started(const struct dl_cluster *cl) { return cl->joined; }
int dl_cluster_size(const struct dl_cluster *cl) { return cl->size; }

int dl_cluster_expand(const struct dl_cluster *cl, const char *in, char *out, size_t len)
{
	char num[16];

	snprintf(num, sizeof(num), "%d", cl->rank);
	return dl_subst_into(in, "{rank}", num, out, len);
}

#ifdef DL_HAVE_MPI

int dl_cluster_init(int *argc, char ***argv, const struct dl_cluster_cfg *cfg,
		    struct dl_cluster **out)
{
	struct dl_cluster *cl;
	int provided = 0, inited = 0;

	MPI_Initialized(&inited);
	if (inited) {
		fprintf(stderr, "dliofs: cluster: MPI is initialised already\n");
		return -EIO;
	}
	if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
		fprintf(stderr, "dliofs: cluster: MPI_Init_thread failed\n");
		return -EIO;
	}
	if (provided < MPI_THREAD_SERIALIZED) {
		/* The exchange thread calls MPI: with less, the library is
		 * free to assume only the main thread ever does. */
		fprintf(stderr,
			"dliofs: cluster: this MPI gives thread level %d, the exchange needs "
			"MPI_THREAD_SERIALIZED (%d)\n",
			provided, MPI_THREAD_SERIALIZED);
		MPI_Finalize();
		return -EIO;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl) {
		MPI_Finalize();
		return -ENOMEM;
	}
	cl->comm = MPI_COMM_NULL;
	cl->cfg = *cfg;
	if (!cl->cfg.period_ns)
		cl->cfg.period_ns = DL_CLUSTER_DEFAULT_PERIOD;
	if (cl->cfg.window_ns < 2 * cl->cfg.period_ns)
		cl->cfg.window_ns = 2 * cl->cfg.period_ns;
	MPI_Comm_rank(MPI_COMM_WORLD, &cl->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &cl->size);
	/* A communicator of our own: nothing else in the process may use
	 * COMM_WORLD's collectives in between ours. */
	MPI_Comm_dup(MPI_COMM_WORLD, &cl->comm);
	cl->ring_len = (unsigned)(cl->cfg.window_ns / cl->cfg.period_ns) + 1;
	cl->ring = calloc(cl->ring_len, sizeof(*cl->ring));
	cl->all = calloc((size_t)cl->size, sizeof(*cl->all));
	cl->live = calloc((size_t)cl->size, sizeof(*cl->live));
	cl->grants = calloc((size_t)cl->size, sizeof(*cl->grants));
	if (!cl->ring || !cl->all || !cl->live || !cl->grants || cl->size > DL_CLUSTER_MAX_NODES) {
		if (cl->size > DL_CLUSTER_MAX_NODES)
			fprintf(stderr, "dliofs: cluster: %d nodes, at most %d\n", cl->size,
				DL_CLUSTER_MAX_NODES);
		dl_cluster_fini(cl);
		return cl->size > DL_CLUSTER_MAX_NODES ? -E2BIG : -ENOMEM;
	}
	*out = cl;
	return 0;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = {(time_t)(t / 1000000000ULL), (long)(t % 1000000000ULL)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void nap(uint64_t ns)
{
	struct timespec ts = {0, (long)ns};

	nanosleep(&ts, NULL);
}

/* Gather every node's record into cl->all without spinning: 0 or -EIO. */
static int gather(struct dl_cluster *cl, const struct dl_cluster_node *mine)
{
	MPI_Request req;
	uint64_t wait = 50000;
	int done = 0;

	if (MPI_Iallgather(mine, (int)sizeof(*mine), MPI_BYTE, cl->all, (int)sizeof(*mine),
			   MPI_BYTE, cl->comm, &req) != MPI_SUCCESS)
		return -EIO;
	while (!done) {
		if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return -EIO;
		/* Short naps while the others are due, longer ones while one
		 * lags (up to a millisecond): a few percent of a core at most. */
		if (!done) {
			nap(wait);
			if (wait < 1000000)
				wait *= 2;
		}
	}
	return 0;
}

/* One round; returns 1 when this node has left. */
static int round_once(struct dl_cluster *cl, uint64_t now)
{
	uint64_t r = cl->rounds, back = cl->ring_len - 1;
	struct dl_cluster_sample *cur = &cl->ring[r % cl->ring_len];
	const struct dl_cluster_sample *old = &cl->ring[(r >= back ? r - back : 0) % cl->ring_len];
	const struct dl_cluster_sample *mid =
		&cl->ring[(r >= back / 2 ? r - back / 2 : 0) % cl->ring_len];
	struct dl_cluster_node mine;
	int n, leaving = atomic_load(&cl->stop), anyone = 0;
	enum dl_share_policy pol;
	unsigned live = 0;

	dl_pacer_cluster_sample(cl->pacer, now, cur);
	dl_cluster_node_make(old, mid, cur, (uint32_t)cl->rank, &mine);
	mine.leaving = (uint32_t)leaving;
	MPI_Comm_size(cl->comm, &n);
	if (gather(cl, &mine))
		return -1;
	for (int i = 0; i < n; i++) {
		struct dl_cluster_node *nd = &cl->all[i];

		/* The peers are this job's own ranks, but their bytes are still
		 * input: names end, counts and the policy are in range (the
		 * arithmetic takes a NaN or negative demand for none). */
		if (nd->njobs > DL_CLUSTER_JOBS)
			nd->njobs = DL_CLUSTER_JOBS;
		for (unsigned j = 0; j < DL_CLUSTER_JOBS; j++)
			nd->job[j].name[DL_CLUSTER_NAME - 1] = '\0';
		if (nd->policy > DL_SHARE_FAIR)
			nd->policy = DL_SHARE_FCFS;
		for (int c = 0; c < DL_OP__COUNT; c++)
			if (!(nd->w[c].peak >= 0 && nd->w[c].peak <= PEAK_MAX))
				nd->w[c].peak = 0; /* a weight: finite */
		anyone |= cl->all[i].leaving != 0;
		if (!cl->all[i].leaving)
			cl->live[live++] = cl->all[i];
	}
	if (anyone) {
		MPI_Comm next = MPI_COMM_NULL;

		MPI_Comm_split(cl->comm, leaving ? MPI_UNDEFINED : 0, cl->rank, &next);
		MPI_Comm_free(&cl->comm);
		cl->comm = next;
		if (leaving)
			return 1;
	}
	cl->rounds++;
	if (!live)
		return 0;
	/* The records come in rank order: the lowest rank's policy. */
	pol = (enum dl_share_policy)cl->live[0].policy;
	if (!dl_cluster_allocate(cl->live, live, pol, cl->grants) &&
	    dl_pacer_cluster_grant(cl->pacer, (uint32_t)cl->rank, cl->live, cl->grants, live,
				   cl->rounds, cl->cfg.period_ns, cl->cfg.window_ns, now) == 1 &&
	    cl->retime)
		cl->retime(cl->retime_arg);
	return 0;
}

static void *exchange(void *arg)
{
	struct dl_cluster *cl = arg;
	uint64_t next = dl_mono_ns();

	for (;;) {
		int ret = round_once(cl, dl_mono_ns());

		if (ret) {
			if (ret < 0)
				fprintf(stderr, "dliofs: cluster: the exchange failed; this node keeps "
						"its last share\n");
			break;
		}
		next += cl->cfg.period_ns;
		/* Behind by more than a period: skip, do not catch up. */
		if (next < dl_mono_ns())
			next = dl_mono_ns();
		sleep_until(next);
	}
	return NULL;
}

int dl_cluster_start(struct dl_cluster *cl, struct dl_pacer *p, void (*retime)(void *),
		     void *arg)
{
	int ret;

	if (!cl || !p)
		return -EINVAL;
	cl->pacer = p;
	cl->retime = retime;
	cl->retime_arg = arg;
	ret = pthread_create(&cl->th, NULL, exchange, cl);
	if (ret)
		return -ret;
	cl->started = 1;
	cl->joined = 1;
	return 0;
}

void dl_cluster_stop(struct dl_cluster *cl)
{
	if (!cl || !cl->started)
		return;
	atomic_store(&cl->stop, 1);
	pthread_join(cl->th, NULL);
	cl->started = 0;
}

void dl_cluster_fini(struct dl_cluster *cl)
{
	if (!cl)
		return;
	dl_cluster_stop(cl);
	if (cl->comm != MPI_COMM_NULL)
		MPI_Comm_free(&cl->comm);
	MPI_Finalize();
	free(cl->ring);
	free(cl->all);
	free(cl->live);
	free(cl->grants);
	free(cl);
}

void dl_cluster_abort(struct dl_cluster *cl, int code)
{
	(void)cl;
	MPI_Abort(MPI_COMM_WORLD, code);
}

#else /* !DL_HAVE_MPI: config/cluster_yaml.c refuses `cluster:` already */

int dl_cluster_init(int *argc, char ***argv, const struct dl_cluster_cfg *cfg,
		    struct dl_cluster **out)
{
	(void)argc;
	(void)argv;
	(void)cfg;
	(void)out;
	fprintf(stderr, "dliofs: cluster: this dliofs was built without MPI\n");
	return -ENOTSUP;
}

int dl_cluster_start(struct dl_cluster *cl, struct dl_pacer *p, void (*retime)(void *),
		     void *arg)
{
	(void)cl;
	(void)p;
	(void)retime;
	(void)arg;
	return -ENOTSUP;
}

void dl_cluster_stop(struct dl_cluster *cl) { (void)cl; }
void dl_cluster_fini(struct dl_cluster *cl) { free(cl); }
void dl_cluster_abort(struct dl_cluster *cl, int code)
{
	(void)cl;
	exit(code);
}

#endif
