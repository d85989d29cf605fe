/* Ranks: one process per simulated accelerator, as DLIO runs under mpirun.
 *
 * Built with MPI (DL_HAVE_MPI), a process started by a launcher joins
 * MPI_COMM_WORLD; one started by hand stays a single rank without calling
 * MPI at all (a singleton MPI_Init costs a third of a second and may want a
 * daemon). Built without MPI, every process is a rank of one; if a launcher
 * started several, each says so and reads the whole dataset.
 *
 * Only the main thread calls MPI (MPI_THREAD_FUNNELED): reader threads never
 * take part in collectives. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DL_HAVE_MPI
#include <mpi.h>
#endif

#include "drive_i.h"

/* Processes the launcher started, from the variables mpirun (Open MPI,
 * MPICH/Hydra, PMIx) or srun export; 0 when none is set. */
static int launched_size(void)
{
	static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE",
					   "MPI_LOCALNRANKS", "SLURM_NTASKS"};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);
		if (v && *v) {
			long n = strtol(v, NULL, 10);
			if (n > 0 && n < INT_MAX)
				return (int)n;
		}
	}
	/* PMIx launchers set the rank before (or without) the size. */
	return getenv("PMIX_RANK") || getenv("PMI_RANK") ? 1 : 0;
}

int drv_comm_have_mpi(void)
{
#ifdef DL_HAVE_MPI
	return 1;
#else
	return 0;
#endif
}

void drv_comm_describe(char *buf, size_t len)
{
#ifdef DL_HAVE_MPI
	char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
	int n = 0;
	/* One of the few calls allowed before MPI_Init. */
	MPI_Get_library_version(v, &n);
	v[strcspn(v, ",\n")] = 0;
	snprintf(buf, len, "MPI: %s", v[0] ? v : "yes");
#else
	snprintf(buf, len, "no MPI: one rank");
#endif
}

int drv_comm_init(struct drv_comm *c, int *argc, char ***argv, FILE *err)
{
	memset(c, 0, sizeof(*c));
	c->size = 1;
	c->launched = launched_size();
#ifdef DL_HAVE_MPI
	if (c->launched > 0) {
		int provided = 0;
		if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
			fprintf(err, "dlio-drive: MPI_Init failed\n");
			return -EIO;
		}
		c->mpi = 1;
		MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
		MPI_Comm_size(MPI_COMM_WORLD, &c->size);
		/* Our MPI sees one process where the launcher started several: the
		 * mpirun of another MPI (the venv's MPICH for Open MPI, say). */
		if (c->size == 1 && c->launched > 1)
			fprintf(err,
				"dlio-drive: the launcher started %d processes but MPI sees "
				"one: is this mpirun from the MPI dlio-drive was built with? "
				"Each process runs alone\n",
				c->launched);
	}
#else
	(void)argc;
	(void)argv;
	if (c->launched > 1)
		fprintf(err,
			"dlio-drive: built without MPI: this process runs as a single rank "
			"(the launcher started %d, each reads the whole dataset)\n",
			c->launched);
#endif
	return 0;
}

void drv_comm_fini(struct drv_comm *c)
{
#ifdef DL_HAVE_MPI
	if (c->mpi)
		MPI_Finalize();
#endif
	c->mpi = 0;
}

#ifdef DL_HAVE_MPI
static int on(const struct drv_comm *c) { return c && c->mpi && c->size > 1; }
#endif

int drv_comm_sync(const struct drv_comm *c, int status)
{
#ifdef DL_HAVE_MPI
	if (on(c)) {
		int all = status;
		/* An all-reduce, not a bare barrier: it is what a data-parallel
		 * step ends with, and it carries everyone's status. */
		if (MPI_Allreduce(&status, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) !=
		    MPI_SUCCESS)
			return -EIO;
		return all;
	}
#else
	(void)c;
#endif
	return status;
}

uint64_t drv_comm_bcast(const struct drv_comm *c, uint64_t v)
{
#ifdef DL_HAVE_MPI
	if (on(c)) {
		unsigned long long x = v;
		MPI_Bcast(&x, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
		return x;
	}
#else
	(void)c;
#endif
	return v;
}

uint64_t drv_comm_min(const struct drv_comm *c, uint64_t v)
{
#ifdef DL_HAVE_MPI
	if (on(c)) {
		unsigned long long x = v, m = v;
		MPI_Allreduce(&x, &m, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
		return m;
	}
#else
	(void)c;
#endif
	return v;
}

int drv_comm_gather(const struct drv_comm *c, const void *mine, size_t len, void *all)
{
#ifdef DL_HAVE_MPI
	if (on(c)) {
		if (len > INT_MAX)
			return -EOVERFLOW;
		if (MPI_Gather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, 0,
			       MPI_COMM_WORLD) != MPI_SUCCESS)
			return -EIO;
		return 0;
	}
#else
	(void)c;
#endif
	if (len)
		memcpy(all, mine, len);
	return 0;
}

int drv_comm_gatherv(const struct drv_comm *c, const void *mine, size_t len, void **all,
		     size_t *lens)
{
#ifdef DL_HAVE_MPI
	if (on(c)) {
		/* Everyone learns whether every length fits an int, so that all
		 * ranks take the same branch and no collective is left waiting. */
		int n = len > INT_MAX ? -1 : (int)len, worst = 0;
		MPI_Allreduce(&n, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
		if (worst < 0)
			return -EOVERFLOW;
		int *cnt = NULL, *disp = NULL, ret = 0;
		char *buf = NULL;
		if (c->rank == 0) {
			cnt = calloc((size_t)c->size, sizeof(int));
			disp = calloc((size_t)c->size, sizeof(int));
		}
		MPI_Gather(&n, 1, MPI_INT, cnt, 1, MPI_INT, 0, MPI_COMM_WORLD);
		if (c->rank == 0) {
			long long total = 0;
			for (int r = 0; cnt && r < c->size; r++) {
				disp[r] = (int)total;
				total += cnt[r];
			}
			if (!cnt || !disp || total > INT_MAX)
				ret = total > INT_MAX ? -EOVERFLOW : -ENOMEM;
			else if (!(buf = malloc(total ? (size_t)total : 1)))
				ret = -ENOMEM;
		}
		/* Rank 0's verdict, so that the others know whether to send. */
		ret = (int)(int64_t)drv_comm_bcast(c, (uint64_t)(int64_t)ret);
		if (!ret)
			MPI_Gatherv(mine, n, MPI_BYTE, buf, cnt, disp, MPI_BYTE, 0, MPI_COMM_WORLD);
		if (c->rank == 0 && !ret) {
			for (int r = 0; r < c->size; r++)
				lens[r] = (size_t)cnt[r];
			*all = buf;
			buf = NULL;
		}
		free(buf);
		free(cnt);
		free(disp);
		return ret;
	}
#else
	(void)c;
#endif
	void *b = malloc(len ? len : 1);
	if (!b)
		return -ENOMEM;
	if (len)
		memcpy(b, mine, len);
	*all = b;
	lens[0] = len;
	return 0;
}
