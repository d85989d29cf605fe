/* dlio-drive: replay a training job's I/O against a directory holding the
 * dataset (the mount, dlio-gen output, real storage) and say how much of the
 * run the accelerator spent waiting for data, in MLPerf Storage's terms.
 *
 *   dlio-drive --config CFG DIR [options]
 *
 * CFG is a dliofs config or a DLIO workload file as shipped; the dataset is
 * DIR/<dataset name>/{train,valid}/... Run parameters: defaults per format <
 * the workload file's reader/train/evaluation/checkpoint/metric keys <
 * MLPerf Storage's table (--accelerator-type) < the command line.
 *
 * Under mpirun every process is a rank (tools/drive/drive_comm.c) reading its
 * share of the dataset; rank 0 writes the job's report. Without MPI a rank
 * (--rank R --ranks N, or the launcher's variables: drive_rankopt.c) reads
 * the same share alone and writes its own. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dliofs/config.h"
#include "dliofs/format.h"
#include "drive_i.h"

/* Under MPI: --rank/--ranks given must be MPI's; either not given takes
 * MPI's. 0 or -EINVAL (said). */
static int agree(struct drv_cli *cl, const struct drv_comm *comm)
{
	unsigned r = (unsigned)comm->rank, n = (unsigned)comm->size;

	if ((drv_given(&cl->given, DRV_C(rank)) && cl->rank != r) ||
	    (drv_given(&cl->given, DRV_C(ranks)) && cl->ranks != n)) {
		fprintf(stderr,
			"dlio-drive: %s of %s, but MPI made this process rank %u of %u: leave "
			"--rank and --ranks out under mpirun\n",
			cl->rank_from, cl->ranks_from, r, n);
		return -EINVAL;
	}
	cl->rank = r;
	cl->ranks = n;
	return 0;
}

int main(int argc, char **argv)
{
	struct drv_cli cl;
	struct drv_comm comm;
	struct drv_params p;
	struct drv_ctx c;
	struct dl_config *cfg = NULL;
	struct drv_cuda *cuda = NULL;
	struct drv_result res = {0};
	struct drv_summary sum;
	int ret, status;

	memset(&c, 0, sizeof(c));
	memset(&p, 0, sizeof(p));
	pthread_mutex_init(&c.trace_lock, NULL);
	/* Arguments first: --help and bad options end here on every rank
	 * alike, before MPI is started. */
	if ((ret = drv_cli_parse(argc, argv, &cl)))
		return ret < 0 ? 2 : 0; /* 1: --help or --version said all */
	if (drv_cli_ranks(&cl, stderr))
		return 2;
	if (drv_comm_init(&comm, &argc, &argv, stderr))
		return 1;
	if (comm.mpi && comm.size > 1) {
		/* MPI's ranks are the job's; the command line may only agree. All
		 * ranks learn whether any disagrees, so that none waits alone. */
		status = agree(&cl, &comm);
		if (drv_comm_sync(&comm, status)) {
			drv_comm_fini(&comm);
			return 2;
		}
	}
	if (drv_cli_paths(&cl, !(comm.mpi && comm.size > 1), stderr)) {
		drv_comm_fini(&comm);
		return 2;
	}
	if (cl.ckpt_workload) {
		status = drv_ckpt_main(&cl, &comm);
		drv_comm_fini(&comm);
		pthread_mutex_destroy(&c.trace_lock);
		return status;
	}
	c.comm = &comm;
	c.rank = cl.rank;
	c.ranks = cl.ranks;

	status = drv_setup(&cl, &comm, &c, &p, &cfg, &cuda, &res);
	/* Every rank learns whether all are ready (a rank missing a file must
	 * not leave the others waiting in the first step's all-reduce). */
	ret = drv_comm_sync(&comm, -status);
	if (ret || status) {
		status = status ? status : -ret;
		goto out;
	}

	ret = drv_run(&c, cuda, &res, stderr);
	if (cuda)
		res.cuda_device = drv_cuda_device(cuda);
	if (ret) {
		if (c.ranks > 1)
			fprintf(stderr, "dlio-drive: rank %u: run stopped: %s\n", c.rank,
				ret == -ECANCELED ? "another rank failed" : strerror(-ret));
		else
			fprintf(stderr, "dlio-drive: run stopped: %s\n", strerror(-ret));
		status = 1;
	}
	/* Collective: every rank hands its figures to rank 0, which reports. */
	int rret = drv_ranks_reduce(&c, &res);
	if (rret) {
		fprintf(stderr, "dlio-drive: gathering the ranks' figures: %s\n", strerror(-rret));
		status = 1;
		goto out;
	}
	/* The report: MPI's rank 0 for the job, or each rank running alone. */
	if (comm.rank != 0 || !res.nep)
		goto out;
	drv_summarize(&res, p.au_threshold, &sum);
	/* With the JSON on stdout the table goes to stderr. */
	if (!cl.quiet)
		drv_report_table(tool_table_stream(cl.json), &c, &res, &sum);
	if (cl.json) {
		FILE *jf = tool_json_open(cl.json);
		int err;

		if (!jf || drv_report_json(jf, &c, &res, &sum)) {
			fprintf(stderr, "dlio-drive: %s: cannot write the JSON report\n", cl.json);
			status = 1;
		}
		if (jf && (err = tool_json_close(jf))) {
			fprintf(stderr, "dlio-drive: %s: %s\n", cl.json, strerror(-err));
			status = 1;
		}
	}
out:
	if (c.trace && fclose(c.trace)) {
		fprintf(stderr, "dlio-drive: %s: %s\n", cl.trace, strerror(errno));
		status = status ? status : 1;
	}
	drv_cuda_close(cuda);
	drv_result_free(&res);
	if (c.rd && c.rd->teardown)
		c.rd->teardown(&c);
	if (c.fmt)
		dl_fmt_ctx_free(c.fmt);
	dl_config_free(cfg);
	pthread_mutex_destroy(&c.trace_lock);
	drv_comm_fini(&comm);
	return status;
}
