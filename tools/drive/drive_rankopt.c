/* Which rank this process is: --rank R --ranks N, by default what the
 * launcher exported, and {rank} in the paths (the data directory, the trace
 * and JSON files, the checkpoint directory) replaced by R, so that
 *
 *   mpirun -np 4 dlio-drive --config CFG --data-dir '/mnt/dl{rank}' ...
 *
 * has rank r read the mount of node r. Decided before MPI starts (a bad
 * value ends every rank alike); under MPI the communicator's rank and size
 * must agree (dlio_drive.c). Without MPI in use, rank R of N reads its shard
 * alone and writes its own report. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drive_i.h"
#include "dliofs/subst.h"

#define RANKS_MAX (1u << 20)

/* The launchers' variables, in order of precedence: mpirun inside a Slurm
 * allocation sets both its own and Slurm's, and its own are the job's. */
static const struct {
	const char *rank, *size;
} launchers[] = {
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, /* Open MPI's mpirun */
    {"PMIX_RANK", NULL},			      /* PMIx (prterun, srun --mpi=pmix) */
    {"PMI_RANK", "PMI_SIZE"},			      /* MPICH's hydra */
    {"SLURM_PROCID", "SLURM_NTASKS"},		      /* srun */
};

/* Variable var as a number in [min, RANKS_MAX]: 1 found, 0 not set, or
 * -EINVAL (said). */
static int env_num(const char *var, unsigned min, unsigned *out, FILE *err)
{
	const char *v = getenv(var);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return 0;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (*end || errno || v[0] == '-' || n < min || n > RANKS_MAX) {
		fprintf(err, "dlio-drive: %s=%s (from the launcher): not a %s\n", var, v,
			min ? "number of ranks" : "rank");
		return -EINVAL;
	}
	*out = (unsigned)n;
	return 1;
}

int drv_rank_env(unsigned *rank, const char **rvar, unsigned *ranks, const char **svar, FILE *err)
{
	int ret;

	*rvar = *svar = NULL;
	for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]) && !*rvar; i++) {
		if ((ret = env_num(launchers[i].rank, 0, rank, err)) < 0)
			return ret;
		if (ret)
			*rvar = launchers[i].rank;
	}
	for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]) && !*svar; i++) {
		if (!launchers[i].size)
			continue;
		if ((ret = env_num(launchers[i].size, 1, ranks, err)) < 0)
			return ret;
		if (ret)
			*svar = launchers[i].size;
	}
	return 0;
}

int drv_rank_path(const char *in, unsigned rank, char *out, size_t len)
{
	char num[16];

	snprintf(num, sizeof(num), "%u", rank);
	return dl_subst_into(in, "{rank}", num, out, len);
}

/* One path with {rank} replaced into buf (size len); *path then points
 * there. 0 or -ENAMETOOLONG (said). */
static int subst(const char *what, const char **path, char *buf, size_t len, unsigned rank,
		 FILE *err)
{
	if (!*path || !strstr(*path, "{rank}"))
		return 0;
	if (drv_rank_path(*path, rank, buf, len)) {
		fprintf(err, "dlio-drive: %s %s: too long with {rank} replaced\n", what, *path);
		return -ENAMETOOLONG;
	}
	*path = buf;
	return 0;
}

int drv_cli_ranks(struct drv_cli *cl, FILE *err)
{
	int given_r = drv_given(&cl->given, DRV_C(rank)),
	    given_n = drv_given(&cl->given, DRV_C(ranks));
	unsigned er = 0, en = 0;
	const char *rvar, *svar;
	char why[160];
	int ret;

	if ((ret = drv_rank_env(&er, &rvar, &en, &svar, err)))
		return ret;
	/* Each of the two from the command line, else the launcher, else 0/1. */
	snprintf(cl->rank_from, sizeof(cl->rank_from), "--rank %u", cl->rank);
	snprintf(cl->ranks_from, sizeof(cl->ranks_from), "--ranks %u", cl->ranks);
	if (!given_r) {
		cl->rank = rvar ? er : 0;
		snprintf(cl->rank_from, sizeof(cl->rank_from), rvar ? "rank %u (%s)" : "rank %u",
			 cl->rank, rvar);
	}
	if (!given_n) {
		cl->ranks = svar ? en : 1;
		snprintf(cl->ranks_from, sizeof(cl->ranks_from), svar ? "%u ranks (%s)" : "%u rank",
			 cl->ranks, svar);
	}
	/* A PMIx rank without a size: MPI will say how many (drv_cli_paths
	 * checks again once it has). */
	if (cl->rank >= cl->ranks && !(rvar && !given_r && !svar && !given_n)) {
		snprintf(why, sizeof(why), "ranks are numbered 0 to %u", cl->ranks - 1);
		fprintf(err, "dlio-drive: %s, %s: %s\n", cl->rank_from, cl->ranks_from,
			cl->ranks == 1 && !given_n && !svar
			    ? "a rank above 0 needs --ranks N (the number of ranks)"
			    : why);
		return -EINVAL;
	}
	if (cl->ckpt_workload && (given_r || given_n)) {
		fprintf(err, "dlio-drive: --rank/--ranks: a checkpoint workload takes its ranks "
			     "from mpirun (MPI), not from the command line\n");
		return -EINVAL;
	}
	return 0;
}

/* A per-rank output file without {rank}: FILE.RANK (as --trace-files has
 * always done with several ranks), "-" stays stdout. */
static int suffix(const char **path, char *buf, size_t len, unsigned rank, FILE *err)
{
	if (!*path || !strcmp(*path, "-"))
		return 0;
	if ((size_t)snprintf(buf, len, "%s.%u", *path, rank) >= len) {
		fprintf(err, "dlio-drive: %s: too long with .%u added\n", *path, rank);
		return -ENAMETOOLONG;
	}
	*path = buf;
	return 0;
}

int drv_cli_paths(struct drv_cli *cl, int alone, FILE *err)
{
	const char *trace = cl->trace, *json = cl->json;
	int ret;

	if (cl->rank >= cl->ranks) {
		fprintf(err, "dlio-drive: %s, but not how many ranks there are: give --ranks N\n",
			cl->rank_from);
		return -EINVAL;
	}

	if ((ret = subst("DIR", &cl->dir, cl->dir_buf, sizeof(cl->dir_buf), cl->rank, err)) ||
	    (ret = subst("--json", &cl->json, cl->json_buf, sizeof(cl->json_buf), cl->rank, err)) ||
	    (ret = subst("--trace-files", &cl->trace, cl->trace_buf, sizeof(cl->trace_buf),
			 cl->rank, err)))
		return ret;
	if (strstr(cl->p.checkpoint_dir, "{rank}")) {
		char d[sizeof(cl->p.checkpoint_dir)];
		if (drv_rank_path(cl->p.checkpoint_dir, cl->rank, d, sizeof(d))) {
			fprintf(err,
				"dlio-drive: --checkpoint-dir %s: too long with {rank} replaced\n",
				cl->p.checkpoint_dir);
			return -ENAMETOOLONG;
		}
		memcpy(cl->p.checkpoint_dir, d, sizeof(d));
	}
	/* Several ranks, one name: every rank traces, so each its own file; the
	 * JSON is the job's (rank 0's) under MPI, each rank's own without. */
	if (cl->ranks > 1 && cl->trace == trace &&
	    (ret = suffix(&cl->trace, cl->trace_buf, sizeof(cl->trace_buf), cl->rank, err)))
		return ret;
	if (cl->ranks > 1 && alone && cl->json == json &&
	    (ret = suffix(&cl->json, cl->json_buf, sizeof(cl->json_buf), cl->rank, err)))
		return ret;
	return 0;
}
