/* Clients to jobs, from /proc: /proc/<tid>/status gives the thread group and
 * process group, /proc/<pid>/environ a DLIOFS_JOB= or an MPI launcher's
 * variables, /proc/<pgid>/cmdline the job's name. Each is read once per
 * thread or process (and again after a few seconds, since ids are reused),
 * so a request costs a cache probe.
 *
 * The ranks of one mpirun are one job, though each rank leads its own
 * process group: a rank's environment names its launch (PMIX_NAMESPACE,
 * set by Open MPI 4/5 and PMIx launchers, or OMPI_MCA_ess_base_jobid), or,
 * where it names none (MPICH's hydra: PMI_RANK, PMI_SIZE, PMI_FD only), the
 * ranks share the first ancestor that is not a rank (hydra_pmi_proxy,
 * orted, mpirun). A rank's DataLoader workers inherit its variables and so
 * join it. DLIOFS_JOB still wins.
 * The tables are bounded: past them, counts of processes and threads are
 * lower bounds and the oldest jobs are forgotten (their ids are never given
 * again). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clients.h"

#define TTL_NS (3ULL * 1000000000ULL)
#define NTHREADS 4096	/* thread cache, direct-mapped */
#define NPROCS 1024	/* process cache, direct-mapped */
#define NJOBS 1024	/* jobs remembered */
#define NMEMBERS 65536	/* (job, pid) and (job, tid) pairs counted */
#define JOB_NAME 160
#define ENV_KEY "DLIOFS_JOB="
#define ANCESTORS_MAX 32 /* how far up a rank's launcher is looked for */

enum job_kind { JOB_PGID, JOB_ENV, JOB_MPI };

struct thread_e {
	uint32_t tid, pid, job;
	uint64_t stamp;
};

struct proc_e {
	uint32_t pid, job;
	uint64_t stamp;
};

struct job_e {
	uint32_t id;		/* 0: free */
	int kind;		/* enum job_kind: keyed by process group, DLIOFS_JOB or MPI launch */
	uint32_t pgid;
	uint64_t env_hash;
	char key[JOB_NAME];	/* JOB_ENV: DLIOFS_JOB's value; JOB_MPI: the launch */
	char name[JOB_NAME];
	uint32_t procs, threads;
	uint64_t stamp;
};

struct dl_clients {
	pthread_mutex_t lock;
	uint32_t next_id;
	struct thread_e threads[NTHREADS];
	struct proc_e procs[NPROCS];
	struct job_e jobs[NJOBS];
	uint64_t *members; /* NMEMBERS keys: kind:1 | job:31 | id:32; 0 empty */
	size_t nmembers;
};

int dl_clients_new(struct dl_clients **out)
{
	struct dl_clients *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->members = calloc(NMEMBERS, sizeof(*c->members));
	if (!c->members) {
		free(c);
		return -ENOMEM;
	}
	pthread_mutex_init(&c->lock, NULL);
	c->next_id = 1;
	*out = c;
	return 0;
}

void dl_clients_free(struct dl_clients *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	free(c->members);
	free(c);
}

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* Read a small /proc file whole (NUL-terminated; at most len - 1 bytes). */
static ssize_t read_proc(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, got = 0;

	if (fd < 0)
		return -errno;
	while ((size_t)got < len - 1 && (n = read(fd, buf + got, len - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = 0;
	return got;
}

static uint32_t status_field(const char *status, const char *name)
{
	const char *p = strstr(status, name);

	return p ? (uint32_t)strtoul(p + strlen(name), NULL, 10) : 0;
}

/* Thread group and process group of tid; 0 when /proc cannot tell. */
static int read_ids(uint32_t tid, uint32_t *pid, uint32_t *pgid)
{
	char path[64], buf[4096];

	snprintf(path, sizeof(path), "/proc/%u/status", tid);
	if (read_proc(path, buf, sizeof(buf)) <= 0)
		return -ESRCH;
	*pid = status_field(buf, "\nTgid:");
	*pgid = status_field(buf, "\nNSpgid:");
	if (!*pgid) {
		/* Kernels before 4.1: the fifth field of stat. */
		char *rp;

		snprintf(path, sizeof(path), "/proc/%u/stat", tid);
		if (read_proc(path, buf, sizeof(buf)) > 0 && (rp = strrchr(buf, ')')))
			sscanf(rp + 1, " %*c %*u %u", pgid);
	}
	return *pid ? 0 : -ESRCH;
}

/* What a process's environment says of its job (environ is the
 * environment the process was started with). */
struct env_info {
	char job[JOB_NAME];	/* DLIOFS_JOB's value, or "" */
	char launch[JOB_NAME];	/* an MPI launch's id, or "" */
	int rank;		/* an MPI rank's variables are set */
};

static int starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static void env_scan(uint32_t pid, struct env_info *e)
{
	static const char *const ns_keys[] = {"PMIX_NAMESPACE=", "OMPI_MCA_ess_base_jobid="};
	static const char *const rank_keys[] = {"OMPI_COMM_WORLD_RANK=", "PMIX_RANK=",
						"PMI_RANK="};
	static const size_t cap = 256 * 1024;
	char path[64], *buf = malloc(cap);
	int ns_rank = 2; /* which ns key gave launch: the first wins */
	ssize_t n;

	memset(e, 0, sizeof(*e));
	if (!buf)
		return;
	snprintf(path, sizeof(path), "/proc/%u/environ", pid);
	n = read_proc(path, buf, cap);
	for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(buf + i) + 1) {
		const char *v = buf + i;

		if (starts(v, ENV_KEY))
			snprintf(e->job, sizeof(e->job), "%s", v + strlen(ENV_KEY));
		for (int k = 0; k < 2; k++)
			if (k < ns_rank && starts(v, ns_keys[k]) && v[strlen(ns_keys[k])]) {
				snprintf(e->launch, sizeof(e->launch), "%s", v + strlen(ns_keys[k]));
				ns_rank = k;
			}
		for (int k = 0; k < 3; k++)
			if (starts(v, rank_keys[k]))
				e->rank = 1;
	}
	free(buf);
}

static uint32_t parent_of(uint32_t pid)
{
	char path[64], buf[4096];

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	if (read_proc(path, buf, sizeof(buf)) <= 0)
		return 0;
	return status_field(buf, "\nPPid:");
}

/* The first ancestor of rank pid that is not itself a rank (or a rank's
 * worker): the launcher's process on this node, which all its ranks share.
 * 0 when none is found. */
static uint32_t launcher_of(uint32_t pid)
{
	struct env_info *e = malloc(sizeof(*e));
	uint32_t p = pid, found = 0;

	for (int depth = 0; e && depth < ANCESTORS_MAX && !found; depth++) {
		uint32_t pp = parent_of(p);

		if (pp <= 1)
			break;
		env_scan(pp, e);
		if (!e->rank)
			found = pp;
		p = pp;
	}
	free(e);
	return found;
}

/* The job key of process pid: its kind, and key (DLIOFS_JOB's value, the
 * MPI launch) for all but JOB_PGID. */
static int job_key(uint32_t pid, char *key, size_t len)
{
	struct env_info *e = malloc(sizeof(*e));
	int kind = JOB_PGID;
	uint32_t l;

	key[0] = 0;
	if (!e)
		return JOB_PGID;
	env_scan(pid, e);
	if (e->job[0]) {
		snprintf(key, len, "%s", e->job);
		kind = JOB_ENV;
	} else if (e->rank && e->launch[0]) {
		snprintf(key, len, "%s", e->launch);
		kind = JOB_MPI;
	} else if (e->rank && (l = launcher_of(pid))) {
		snprintf(key, len, "launcher pid %u", l);
		kind = JOB_MPI;
	}
	free(e);
	return kind;
}

/* A command line, arguments joined by spaces, control characters as '?'. */
static int cmdline_of(uint32_t pid, char *out, size_t len)
{
	char path[64], buf[JOB_NAME];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
	n = read_proc(path, buf, sizeof(buf));
	if (n <= 0)
		return -ESRCH;
	while (n > 0 && buf[n - 1] == 0)
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == 0)
			buf[i] = ' ';
		else if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = '?';
	buf[n] = 0;
	snprintf(out, len, "%s", buf);
	return 0;
}

/* Count (kind, job, id) once; lock held. */
static int member_add(struct dl_clients *c, int kind, uint32_t job, uint32_t id)
{
	uint64_t key = ((uint64_t)kind << 63) | ((uint64_t)(job & 0x7fffffff) << 32) | id;
	size_t i;

	if (c->nmembers * 4 >= NMEMBERS * 3)
		return 0;
	for (i = hash64(key) & (NMEMBERS - 1); c->members[i]; i = (i + 1) & (NMEMBERS - 1))
		if (c->members[i] == key)
			return 0;
	c->members[i] = key;
	c->nmembers++;
	return 1;
}

static struct job_e *job_slot(struct dl_clients *c, uint32_t id)
{
	for (unsigned i = 0; id && i < NJOBS; i++)
		if (c->jobs[i].id == id)
			return &c->jobs[i];
	return NULL;
}

/* The job of process pid in group pgid, of `kind` with `key`; lock held. */
static uint32_t job_of(struct dl_clients *c, uint32_t pid, uint32_t pgid, int kind,
		       const char *key, uint64_t now)
{
	struct job_e *j = NULL, *victim = &c->jobs[0];
	uint64_t eh = 1469598103934665603ULL; /* FNV-1a of the key */

	for (const char *s = key; *s; s++)
		eh = (eh ^ (unsigned char)*s) * 1099511628211ULL;
	for (unsigned i = 0; i < NJOBS; i++) {
		struct job_e *e = &c->jobs[i];

		if (e->id && e->kind == kind &&
		    (kind == JOB_PGID ? e->pgid == pgid
				      : e->env_hash == eh && !strcmp(e->key, key))) {
			j = e;
			break;
		}
		if (!e->id || (victim->id && e->stamp < victim->stamp))
			victim = e;
	}
	if (!j) {
		char cmd[JOB_NAME];

		j = victim;
		memset(j, 0, sizeof(*j));
		j->id = c->next_id++;
		if (!c->next_id)
			c->next_id = 1;
		j->kind = kind;
		j->env_hash = eh;
		j->pgid = pgid;
		snprintf(j->key, sizeof(j->key), "%s", key);
		if (kind == JOB_ENV) {
			snprintf(j->name, sizeof(j->name), "%s", key);
		} else if (kind == JOB_MPI) {
			/* The first rank seen names it: "mpi 247857153: dlio-drive ..." */
			if (cmdline_of(pid, cmd, sizeof(cmd)))
				snprintf(cmd, sizeof(cmd), "pid %u", pid);
			snprintf(j->name, sizeof(j->name), "mpi %.60s: %.90s", key, cmd);
		} else if (cmdline_of(pgid, j->name, sizeof(j->name)) &&
			   cmdline_of(pid, j->name, sizeof(j->name))) {
			snprintf(j->name, sizeof(j->name), "pgid %u", pgid);
		}
	}
	j->stamp = now;
	return j->id;
}

int dl_clients_resolve(struct dl_clients *c, uint32_t tid, uint64_t now, struct dl_client *out)
{
	struct thread_e *te;
	struct proc_e *pe;
	uint32_t pid = 0, pgid = 0, job = 0;
	char key[JOB_NAME];
	struct job_e *j;
	int kind;

	out->tid = tid;
	out->pid = 0;
	out->job = 0;
	if (!tid)
		return 0;
	pthread_mutex_lock(&c->lock);
	te = &c->threads[hash64(tid) & (NTHREADS - 1)];
	if (te->tid == tid && now - te->stamp < TTL_NS) {
		out->pid = te->pid;
		out->job = te->job;
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	pthread_mutex_unlock(&c->lock);
	/* /proc is read without the lock: other requests go on meanwhile. */
	if (read_ids(tid, &pid, &pgid)) {
		out->pid = tid;
		return 0;
	}
	pthread_mutex_lock(&c->lock);
	pe = &c->procs[hash64(pid) & (NPROCS - 1)];
	if (pe->pid == pid && now - pe->stamp < TTL_NS && job_slot(c, pe->job)) {
		job = pe->job;
	} else {
		pthread_mutex_unlock(&c->lock);
		kind = job_key(pid, key, sizeof(key));
		pthread_mutex_lock(&c->lock);
		job = job_of(c, pid, pgid, kind, key, now);
		pe = &c->procs[hash64(pid) & (NPROCS - 1)];
		pe->pid = pid;
		pe->job = job;
		pe->stamp = now;
	}
	te = &c->threads[hash64(tid) & (NTHREADS - 1)];
	te->tid = tid;
	te->pid = pid;
	te->job = job;
	te->stamp = now;
	if ((j = job_slot(c, job))) {
		j->procs += member_add(c, 0, job, pid);
		j->threads += member_add(c, 1, job, tid);
		j->stamp = now;
	}
	pthread_mutex_unlock(&c->lock);
	out->pid = pid;
	out->job = job;
	return 1;
}

int dl_clients_job(struct dl_clients *c, uint32_t job, char *name, size_t len, uint32_t *procs,
		   uint32_t *threads)
{
	struct job_e *j;
	int ret = -ENOENT;

	pthread_mutex_lock(&c->lock);
	j = job_slot(c, job);
	if (j) {
		snprintf(name, len, "%s", j->name);
		if (procs)
			*procs = j->procs;
		if (threads)
			*threads = j->threads;
		ret = 0;
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}
