/* dliofs profile DIR -o OUT.yaml: measure the storage DIR is on and write a
 * storage profile the mount reproduces it with. The steps, in a bounded
 * time (--time, 60 s by default):
 *   1. the data: a probe file written in DIR (in a probe directory of its
 *      own, .dliofs-profile-PID, removed at the end), or with --read-only
 *      the largest files already there, read and never written;
 *   2. how the client cache is kept out: O_DIRECT where the file system
 *      takes it, else the probe's pages dropped before each measurement,
 *      else the kernel's caches dropped (root), else files larger than
 *      memory (the profile says which);
 *   3. reads one at a time at sizes 4 KiB .. 4 MiB (the latency tables),
 *      then 4 KiB and 1 MiB with 2 .. 32 clients (bandwidth by
 *      concurrency, IOPS at 4 KiB); writes likewise when DIR is writable;
 *   4. metadata: stat, open, readdir on many small files (a probe tree,
 *      or what DIR holds), fsync after a small write;
 *   5. OUT.yaml and its tables; a summary table on stdout.
 * Nothing of the user's is written, renamed or removed: the probe directory
 * is created with a fresh name and only the names created in it are removed. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "dliofs/clock.h"
#include "dliofs/prng.h"
#include "dliofs/units.h"
#include "profile_i.h"
#include "tool_opts_i.h"

#define KiB 1024ULL
#define MiB (1024ULL * 1024)
#define PROBE_MAX (1ULL << 30)
#define PROBE_MIN (16ULL << 20)
#define CHUNK (4ULL << 20)
#define MAX_DATA_FILES 64

struct opts {
	const char *dir, *out;
	uint64_t time_ns, probe_size;
	unsigned max_clients;
	int read_only, keep_caches, quiet;
	const char *check; /* --check PROFILE */
	const char *refit; /* --refit PROFILE */
};

/* The one thing a signal handler may touch is static storage: the flag
 * the measurements look at before each request. */
static prof_stop_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static int set_time(void *ctx, const struct tool_opt *r, const char *arg)
{
	struct opts *o = ctx;
	const char *why = NULL;

	(void)r;
	if (dl_parse_time(arg, &o->time_ns, &why) || o->time_ns < 1000000000ULL) {
		fprintf(stderr, "dliofs profile: --time %s: %s\n", arg, why ? why : "at least 1s");
		return -EINVAL;
	}
	return 0;
}

static int set_max_clients(void *ctx, const struct tool_opt *r, const char *arg)
{
	struct opts *o = ctx;
	const char *why = NULL;
	uint64_t v;

	(void)r;
	if (dl_parse_count(arg, &v, &why) || v < 1 || v > 256) {
		fprintf(stderr, "dliofs profile: --max-clients %s: expected 1 to 256\n", arg);
		return -EINVAL;
	}
	o->max_clients = (unsigned)v;
	return 0;
}

static int set_probe_size(void *ctx, const struct tool_opt *r, const char *arg)
{
	struct opts *o = ctx;
	const char *why = NULL;

	(void)r;
	if (dl_parse_size(arg, &o->probe_size, &why) || o->probe_size < PROBE_MIN) {
		fprintf(stderr, "dliofs profile: --probe-size %s: at least 16MiB%s%s\n", arg,
			why ? ": " : "", why ? why : "");
		return -EINVAL;
	}
	return 0;
}

#define OFF(f) offsetof(struct opts, f)

/* clang-format off */
static const struct tool_opt prof_opt[] = {
	{.name = "check", .kind = TOOL_OPT_STR, .off = OFF(check), .arg = "PROFILE",
	 .help = "replay every point PROFILE measured on the model it\n"
		 "holds now (virtual time) and print both"},
	{.name = "refit", .kind = TOOL_OPT_STR, .off = OFF(refit), .arg = "PROFILE",
	 .help = "fit the model again to the points PROFILE measured\n"
		 "(this dliofs's fit, no new measurement), write it to\n"
		 "-o OUT.yaml (beside PROFILE; may be PROFILE) and check it"},
	{.name = "output", .letter = 'o', .kind = TOOL_OPT_STR, .off = OFF(out), .arg = "OUT.yaml",
	 .help = "the profile (its tables go beside it)"},
	{.name = "time", .kind = TOOL_OPT_CALL, .set = set_time, .arg = "TIME",
	 .help = "the whole run, e.g. 30s, 2min (default 60s)"},
	{.name = "read-only", .kind = TOOL_OPT_FLAG, .off = OFF(read_only), .value = 1,
	 .help = "write nothing in DIR: read the largest files already\n"
		 "there, time metadata on what is there (a DIR that\n"
		 "cannot be written needs this)"},
	{.name = "keep-caches", .kind = TOOL_OPT_FLAG, .off = OFF(keep_caches), .value = 1,
	 .help = "never drop the kernel's caches (root otherwise drops\n"
		 "them before metadata passes, and for data when no\n"
		 "other way bypasses the cache)"},
	{.name = "max-clients", .kind = TOOL_OPT_CALL, .set = set_max_clients, .arg = "N",
	 .help = "most requests in flight measured (default 32)"},
	{.name = "probe-size", .kind = TOOL_OPT_CALL, .set = set_probe_size, .arg = "SIZE",
	 .help = "the probe file (default: up to 1GiB, what 12% of the\n"
		 "time writes)"},
	{.name = "quiet", .letter = 'q', .hide_letter = 1, .kind = TOOL_OPT_FLAG, .off = OFF(quiet),
	 .value = 1, .help = "no progress line (there is one only when stderr is a\nterminal)"},
	{.name = "help", .letter = 'h', .kind = TOOL_OPT_HELP},
};
/* clang-format on */

static const struct tool_opts prof_opts = {
    .prog = "dliofs profile",
    .head =
	"usage: dliofs profile DIR -o OUT.yaml [--time TIME] [--read-only] [--keep-caches]\n"
	"                      [--max-clients N] [--probe-size SIZE] [--quiet]\n"
	"       dliofs profile --check PROFILE\n"
	"       dliofs profile --refit PROFILE -o OUT.yaml\n"
	"\n"
	"Measure the storage DIR is on (a local disk, an NFS, Lustre or S3 FUSE mount...)\n"
	"and write a storage profile that `pacer: {profile: ./OUT.yaml}` takes, so that\n"
	"the mount behaves like this storage. Measured, with the client cache bypassed:\n"
	"  reads of 4KiB .. 4MiB one at a time, 4KiB and 1MiB reads with 2 .. 32\n"
	"  clients; writes likewise when DIR is writable; stat, open and readdir on many\n"
	"  small files, fsync. Reads and writes are fitted with a device model: a\n"
	"  throttle (byte and IO buckets, refilled continuously or per period, as Linux\n"
	"  blk-throttle's slices), channels, a fixed cost plus size / transfer rate per\n"
	"  request, and noise; the profile says for every point what the model gives\n"
	"  there, and the summary ends with the worst misfits.\n"
	"\n",
    .tail =
	"\n"
	"DIR must be writable (a probe directory .dliofs-profile-PID is created there and\n"
	"removed at the end; nothing else is touched) unless --read-only. The profile\n"
	"records where, when and how it was measured (`measured:`), and which cache\n"
	"bypass was used: direct (O_DIRECT), fadvise, drop_caches, large_files, none.\n",
    .col = 25,
    .opt = prof_opt,
    .n = TOOL_OPTS_N(prof_opt),
    .usage_on_error = 1,
};

static int parse_opts(int argc, char **argv, struct opts *o)
{
	int next, ret;

	memset(o, 0, sizeof(*o));
	o->time_ns = 60ULL * 1000000000ULL;
	o->max_clients = 32;
	if ((ret = tool_opts_parse(&prof_opts, argc, argv, 1, o, &next)))
		return ret > 0 ? 1 : 2;
	if (o->refit) {
		if (next != argc || !o->out || o->check) {
			fprintf(stderr, "dliofs profile: --refit PROFILE takes -o OUT.yaml and no "
					"DIR\n");
			tool_opts_usage(stderr, &prof_opts);
			return 2;
		}
		return 0;
	}
	if (o->check) {
		if (next != argc) {
			fprintf(stderr, "dliofs profile: --check PROFILE takes no DIR\n");
			tool_opts_usage(stderr, &prof_opts);
			return 2;
		}
		return 0;
	}
	if (next != argc - 1 || !o->out) {
		fprintf(stderr, "dliofs profile: %s\n",
			next != argc - 1 ? "expected one DIR" : "-o OUT.yaml is required");
		tool_opts_usage(stderr, &prof_opts);
		return 2;
	}
	o->dir = argv[next];
	return 0;
}

/* ---- where and when ---- */

/* mountinfo escapes blanks as \040. */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] && s[3]) {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

/* The file system DIR is on: the mount with the longest matching point. */
static void where(struct prof_result *r)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[8192];
	size_t best = 0;

	snprintf(r->fstype, sizeof(r->fstype), "unknown");
	while (f && fgets(line, sizeof(line), f)) {
		char mnt[4096], opts[256], fs[64], src[256], *dash;
		size_t n;

		if (sscanf(line, "%*s %*s %*s %*s %4095s %255s", mnt, opts) != 2)
			continue;
		dash = strstr(line, " - ");
		if (!dash || sscanf(dash + 3, "%63s %255s", fs, src) != 2)
			continue;
		unescape(mnt);
		n = strlen(mnt);
		if (strncmp(r->dir, mnt, n) || (r->dir[n] != '/' && r->dir[n] && n > 1))
			continue;
		if (n >= best) {
			best = n;
			snprintf(r->fstype, sizeof(r->fstype), "%s", fs);
			snprintf(r->source, sizeof(r->source), "%s", src);
			snprintf(r->mount_opts, sizeof(r->mount_opts), "%s", opts);
		}
	}
	if (f)
		fclose(f);
}

/* The largest request the block device below DIR takes (its queue's
 * max_sectors_kb): the pieces of one read FUSE splits merge up to it on
 * the mount (read.max_request). A partition's queue is its disk's; no block
 * device (major 0: NFS, FUSE, tmpfs) leaves it unknown. */
static void block_limits(struct prof_result *r)
{
	char sys[96], path[PATH_MAX + 32], real[PATH_MAX], *slash;
	unsigned long long kb = 0;
	struct stat st;
	FILE *f;

	r->max_request = 0;
	r->blockdev[0] = '\0';
	if (stat(r->dir, &st) || !major(st.st_dev))
		return;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	if (!realpath(sys, real))
		return;
	snprintf(path, sizeof(path), "%s/partition", real);
	if (!access(path, F_OK) && (slash = strrchr(real, '/')))
		*slash = '\0'; /* the disk the partition is on */
	snprintf(path, sizeof(path), "%s/queue/max_sectors_kb", real);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fscanf(f, "%llu", &kb) == 1 && kb >= 4 && kb <= (1ULL << 20)) {
		r->max_request = kb * 1024;
		slash = strrchr(real, '/');
		snprintf(r->blockdev, sizeof(r->blockdev), "%.63s", slash ? slash + 1 : real);
	}
	fclose(f);
}

static void when(struct prof_result *r, int argc, char **argv)
{
	struct utsname u;
	time_t now = time(NULL);
	struct tm tm;
	size_t o = 0;

	gmtime_r(&now, &tm);
	strftime(r->date, sizeof(r->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (gethostname(r->host, sizeof(r->host)))
		snprintf(r->host, sizeof(r->host), "?");
	r->host[sizeof(r->host) - 1] = '\0';
	if (!uname(&u))
		snprintf(r->kernel, sizeof(r->kernel), "%.40s %.80s", u.sysname, u.release);
	o = (size_t)snprintf(r->args, sizeof(r->args), "dliofs profile " DLIOFS_VERSION);
	for (int i = 1; i < argc && o < sizeof(r->args); i++)
		o += (size_t)snprintf(r->args + o, sizeof(r->args) - o, " %s", argv[i]);
}

static uint64_t mem_total(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	unsigned long long kb = 0;
	char line[256];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return (uint64_t)kb * 1024;
}

/* ---- the data ---- */

static int set_add(struct prof_set *s, int fd, uint64_t size)
{
	struct prof_file *nf = realloc(s->f, (s->n + 1) * sizeof(*nf));
	uint64_t *np = realloc(s->prefix, (s->n + 1) * sizeof(*np));

	if (nf)
		s->f = nf;
	if (np)
		s->prefix = np;
	if (!nf || !np)
		return -ENOMEM;
	s->prefix[s->n] = s->total;
	s->f[s->n].fd = fd;
	s->f[s->n].size = size / 4096 * 4096;
	s->total += s->f[s->n].size;
	s->n++;
	return 0;
}

static void set_close(struct prof_set *s)
{
	for (unsigned i = 0; i < s->n; i++)
		close(s->f[i].fd);
	free(s->f);
	free(s->prefix);
	memset(s, 0, sizeof(*s));
}

/* How the cache is kept out of buffered reads of s (no O_DIRECT). */
static enum prof_bypass buffered_bypass(struct prof_set *s, int may_drop)
{
	int resident = 0;

	s->bypass = PROF_FADVISE;
	prof_uncache(s);
	for (unsigned i = 0; i < s->n && !resident; i++)
		resident = prof_resident(s->f[i].fd, s->f[i].size);
	if (!resident)
		return PROF_FADVISE;
	if (may_drop && prof_drop_caches() == 0) {
		resident = 0;
		for (unsigned i = 0; i < s->n && !resident; i++)
			resident = prof_resident(s->f[i].fd, s->f[i].size);
		if (!resident)
			return PROF_DROP;
	}
	return s->total >= 2 * mem_total() ? PROF_LARGE : PROF_NONE;
}

/* Write the probe file: up to want bytes, until the time is spent. */
static int probe_file(const char *probe, uint64_t want, uint64_t until, const struct opts *o,
		      struct prof_set *s)
{
	char path[PATH_MAX + 80];
	void *buf = NULL;
	uint64_t size = 0;
	int fd, direct = 1, ret = 0;

	snprintf(path, sizeof(path), "%s/data", probe);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		direct = 0;
		fd = open(path, O_RDWR | O_DSYNC | O_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	if (posix_memalign(&buf, 4096, CHUNK)) {
		close(fd);
		return -ENOMEM;
	}
	dl_prng_fill(dl_key2(0x9e0b, (uint64_t)getpid()), 0, buf, CHUNK);
	while (size < want && !stop_flag && (size < PROBE_MIN || dl_mono_ns() < until)) {
		ssize_t n = pwrite(fd, buf, CHUNK, (off_t)size);

		if (n < 0 && errno == EINVAL && direct && size == 0) {
			/* O_DIRECT taken at open, refused at the first write. */
			close(fd);
			direct = 0;
			fd = open(path, O_RDWR | O_DSYNC | O_CLOEXEC);
			if (fd < 0) {
				ret = -errno;
				break;
			}
			continue;
		}
		if (n != (ssize_t)CHUNK) {
			ret = n < 0 ? -errno : -ENOSPC;
			break;
		}
		size += CHUNK;
	}
	free(buf);
	if (!ret && fdatasync(fd))
		ret = -errno;
	if (ret || stop_flag) {
		close(fd);
		return ret ? ret : -EINTR;
	}
	ret = set_add(s, fd, size);
	if (ret) {
		close(fd);
		return ret;
	}
	s->own = 1;
	s->writes_dsync = !direct;
	s->bypass = direct ? PROF_DIRECT : buffered_bypass(s, !o->keep_caches);
	return 0;
}

static int cmp_size_desc(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? 1 : x[0] > y[0] ? -1 : 0;
}

/* --read-only: the largest files DIR holds, opened read-only. */
static int existing_files(const struct prof_tree *t, const struct opts *o, struct prof_set *s,
			  int direct)
{
	uint64_t(*by)[2] = malloc((t->nfiles ? t->nfiles : 1) * sizeof(*by));
	int ret = 0;

	if (!by)
		return -ENOMEM;
	for (size_t i = 0; i < t->nfiles; i++) {
		by[i][0] = t->sizes[i];
		by[i][1] = i;
	}
	qsort(by, t->nfiles, sizeof(*by), cmp_size_desc);
	for (int pass = 0; pass < 2 && !ret; pass++) {
		set_close(s);
		for (size_t i = 0; i < t->nfiles && s->n < MAX_DATA_FILES && !ret; i++) {
			const char *path = t->files[by[i][1]];
			int fl = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (direct ? O_DIRECT : 0);
			int fd = open(path, fl | O_NOATIME);

			if (by[i][0] < 4096)
				break;
			if (fd < 0 && errno == EPERM)
				fd = open(path, fl);
			if (fd < 0 && direct && errno == EINVAL)
				break; /* no O_DIRECT here: again, buffered */
			if (fd < 0)
				continue;
			ret = set_add(s, fd, by[i][0]);
			if (ret)
				close(fd);
		}
		if (s->n || !direct)
			break;
		direct = 0;
	}
	free(by);
	if (!ret && !s->n) {
		fprintf(stderr,
			"dliofs profile: %s holds no readable file of 4KiB or more to "
			"measure reads on\n",
			o->dir);
		return -ENOENT;
	}
	s->bypass = direct ? PROF_DIRECT : buffered_bypass(s, !o->keep_caches);
	return ret;
}

/* O_DIRECT accepted at open may still be refused by reads (some FUSE file
 * systems): one aligned read says. */
static int direct_reads(int fd)
{
	void *buf;
	ssize_t n;

	if (posix_memalign(&buf, 4096, 4096))
		return 0;
	n = pread(fd, buf, 4096, 0);
	free(buf);
	return n == 4096;
}

/* ---- the measurements ---- */

/* Each point starts on an idle device, as the fit replays it (sim.c: the
 * buckets full, no throttle slice begun): blk-throttle ends a slice up to
 * two slices (100 ms each) after its last request, so 250 ms without one
 * starts the point at the beginning of a slice. A point that starts where
 * the one before left the throttle starts at any phase of its slice, and in
 * the 0.35 to 1.5 s a point lasts that moves its MB/s by up to a slice's
 * allowance either way (0.6 s points of a 50 MB/s throttle measured 43 to
 * 54 MB/s by the phase alone; the fit then took 53 for the bucket). A run
 * too short for it (points under 0.5 s) waits half a point. */
#define PROF_IDLE_NS 250000000ULL

struct plan_row {
	uint64_t size;
	unsigned threads;
	enum prof_pattern pat;
};

static enum prof_pattern pattern_of(uint64_t size)
{
	return size < 64 * KiB ? PROF_RANDOM : PROF_SEQ;
}

/* Reads (or writes) one at a time at each size, then 4 KiB and 1 MiB with
 * more clients (writes: fewer points). */
static unsigned plan(int write, unsigned max_clients, struct plan_row *p)
{
	static const uint64_t rsizes[] = {4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, MiB, 4 * MiB};
	static const uint64_t wsizes[] = {4 * KiB, 64 * KiB, MiB, 4 * MiB};
	static const unsigned rk[] = {2, 4, 8, 16, 32}, wk[] = {4, 16};
	const uint64_t *sz = write ? wsizes : rsizes;
	unsigned nsz = write ? 4 : 6, nk = write ? 2 : 5, n = 0;
	const unsigned *ks = write ? wk : rk;

	for (unsigned i = 0; i < nsz; i++)
		p[n++] = (struct plan_row){sz[i], 1, pattern_of(sz[i])};
	for (unsigned s = 0; s < 2; s++) {
		uint64_t size = s ? MiB : 4 * KiB;

		for (unsigned i = 0; i < nk; i++)
			if (ks[i] <= max_clients)
				p[n++] = (struct plan_row){size, ks[i], pattern_of(size)};
	}
	return n;
}

/* One line rewritten in place, on a terminal only: a log or a pipe gets
 * the summary table, not a line per step. */
static void progress(const struct opts *o, uint64_t t0, const char *what, int done)
{
	if (o->quiet || !isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "\rdliofs profile: [%5.1fs/%.0fs] %s\033[K",
		(double)(dl_mono_ns() - t0) / 1e9, (double)o->time_ns / 1e9, what);
	if (done)
		fputc('\n', stderr);
	fflush(stderr);
}

static int measure(struct prof_result *r, const struct prof_set *s, int write, uint64_t share,
		   const struct opts *o, uint64_t t0)
{
	struct plan_row rows[16];
	unsigned n = plan(write, o->max_clients, rows);
	char what[160], size[32];
	/* Where the next sequential point starts, and what the points so far
	 * went through: each point reads on from where the one before
	 * stopped, so that nothing is read twice until the set is used up. */
	uint64_t cursor = 0, used = 0;

	for (unsigned i = 0; i < n && !stop_flag && r->npt < PROF_MAX_POINTS; i++) {
		struct prof_point *p = &r->pt[r->npt++];

		memset(p, 0, sizeof(*p));
		p->write = write;
		p->size = rows[i].size;
		p->threads = rows[i].threads;
		p->pat = rows[i].pat;
		p->time_ns = share / n > 50000000ULL ? share / n : 50000000ULL;
		p->idle_ns = p->time_ns >= 2 * PROF_IDLE_NS ? PROF_IDLE_NS : p->time_ns / 2;
		p->time_ns -= p->idle_ns;
		p->start = cursor;
		prof_size_name(p->size, size, sizeof(size));
		snprintf(what, sizeof(what), "%s %s x%u %s ...", write ? "write" : "read", size,
			 p->threads, p->pat == PROF_RANDOM ? "random" : "sequential");
		progress(o, t0, what, 0);
		prof_run(s, p, &stop_flag);
		if (p->pat == PROF_SEQ) {
			uint64_t span = p->advance * (p->threads ? p->threads : 1);

			p->stale = used + span > s->total;
			used += span;
			cursor = (cursor + p->advance) % s->total;
		}
		if (p->ops)
			snprintf(what, sizeof(what), "%s %s x%u %s: %.1f MB/s, %.0f IOPS",
				 write ? "write" : "read", size, p->threads,
				 p->pat == PROF_RANDOM ? "random" : "sequential",
				 prof_rate(p) / 1e6, prof_iops(p));
		else
			snprintf(what, sizeof(what), "%s %s x%u: %s", write ? "write" : "read",
				 size, p->threads, strerror(p->err ? p->err : EIO));
		progress(o, t0, what, 0);
	}
	return stop_flag ? -EINTR : 0;
}

/* ---- the run ---- */

struct run {
	struct opts o;
	struct prof_result *r;
	struct prof_set s;
	struct prof_tree tree;
	char probe[PATH_MAX + 64];
	int have_probe;
	uint64_t t0;
};

static int make_probe(struct run *x)
{
	/* A fresh name: mkdir fails on anything that exists. */
	for (unsigned k = 0; k < 100; k++) {
		if (k)
			snprintf(x->probe, sizeof(x->probe), "%s/.dliofs-profile-%d-%u", x->r->dir,
				 (int)getpid(), k);
		else
			snprintf(x->probe, sizeof(x->probe), "%s/.dliofs-profile-%d", x->r->dir,
				 (int)getpid());
		if (!mkdir(x->probe, 0700)) {
			x->have_probe = 1;
			return 0;
		}
		if (errno != EEXIST)
			break;
	}
	fprintf(stderr,
		"dliofs profile: cannot write in %s (%s): it measures a directory it can create "
		"a probe directory in; --read-only measures reads and metadata on the files "
		"already there, writing nothing\n",
		x->r->dir, strerror(errno));
	return -errno;
}

/* Remove what the run created, by name. */
static void cleanup(struct run *x)
{
	char path[PATH_MAX + 80];

	set_close(&x->s);
	if (!x->have_probe)
		return;
	if (x->r->have_meta)
		prof_meta_cleanup(x->probe, &x->r->meta);
	snprintf(path, sizeof(path), "%s/data", x->probe);
	unlink(path);
	if (rmdir(x->probe))
		fprintf(stderr, "dliofs profile: could not remove %s: %s\n", x->probe,
			strerror(errno));
	x->have_probe = 0;
}

/* O_DIRECT opens but its reads are refused: the same files, buffered. */
static int reopen_buffered(struct run *x)
{
	char path[PATH_MAX + 80];
	uint64_t size = x->s.total;
	int fd, ret;

	if (x->o.read_only)
		return existing_files(&x->tree, &x->o, &x->s, 0);
	set_close(&x->s);
	snprintf(path, sizeof(path), "%s/data", x->probe);
	fd = open(path, O_RDWR | O_DSYNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = set_add(&x->s, fd, size);
	if (ret) {
		close(fd);
		return ret;
	}
	x->s.own = 1;
	x->s.writes_dsync = 1;
	x->s.bypass = buffered_bypass(&x->s, !x->o.keep_caches);
	return 0;
}

static int setup_data(struct run *x)
{
	const struct opts *o = &x->o;
	uint64_t want = o->probe_size ? o->probe_size : PROBE_MAX;
	int ret;

	if (o->read_only) {
		progress(o, x->t0, "looking for files to read ...", 0);
		ret = prof_scan(x->r->dir, 200000, &x->tree);
		if (!ret)
			ret = existing_files(&x->tree, o, &x->s, 1);
		x->r->read_only_files = 1;
	} else {
		ret = make_probe(x);
		if (ret)
			return ret;
		progress(o, x->t0, "writing the probe file ...", 0);
		ret = probe_file(x->probe, want, x->t0 + o->time_ns * 12 / 100, o, &x->s);
		if (ret && ret != -EINTR)
			fprintf(stderr, "dliofs profile: %s/data: %s\n", x->probe, strerror(-ret));
	}
	if (!ret && x->s.bypass == PROF_DIRECT && !direct_reads(x->s.f[0].fd))
		ret = reopen_buffered(x);
	if (ret)
		return ret;
	x->r->bypass = x->s.bypass;
	x->r->writes_dsync = x->s.writes_dsync;
	x->r->probe_size = x->s.total;
	x->r->nfiles = x->s.n;
	if (x->s.bypass == PROF_NONE)
		fprintf(stderr, "dliofs profile: warning: %s\n", prof_bypass_how(PROF_NONE));
	return 0;
}

static int run_all(struct run *x)
{
	const struct opts *o = &x->o;
	uint64_t left, meta_share;
	int ret;

	ret = setup_data(x);
	if (ret)
		return ret;
	left = x->t0 + o->time_ns > dl_mono_ns() ? x->t0 + o->time_ns - dl_mono_ns() : 0;
	/* Of what is left: reads 56% (80% read-only), writes 24%, metadata 20%. */
	ret = measure(x->r, &x->s, 0, o->read_only ? left * 4 / 5 : left * 56 / 100, o, x->t0);
	if (!ret && !o->read_only)
		ret = measure(x->r, &x->s, 1, left * 24 / 100, o, x->t0);
	if (ret)
		return ret;
	meta_share =
	    x->t0 + o->time_ns > dl_mono_ns() ? x->t0 + o->time_ns - dl_mono_ns() : left / 10;
	progress(o, x->t0, "metadata ...", 0);
	ret = prof_meta_run(o->read_only ? NULL : x->probe, &x->tree, meta_share, !o->keep_caches,
			    x->r->blockdev, &x->r->meta, &stop_flag);
	x->r->have_meta = 1;
	if (ret && ret != -EINTR)
		fprintf(stderr, "dliofs profile: metadata: %s\n", strerror(-ret));
	progress(o, x->t0, "done", 1);
	return stop_flag ? -EINTR : ret;
}

int dl_cli_profile(int argc, char **argv)
{
	struct sigaction sa, old_int, old_term;
	struct prof_result *r = calloc(1, sizeof(*r));
	struct run x;
	struct stat st;
	unsigned ntables = 0;
	int ret;

	memset(&x, 0, sizeof(x));
	if (!r)
		return 1;
	ret = parse_opts(argc, argv, &x.o);
	if (ret) {
		free(r);
		return ret == 1 ? 0 : 2;
	}
	if (x.o.refit) {
		ret = prof_refit(x.o.refit, x.o.out, stdout);
		free(r);
		return ret ? 1 : 0;
	}
	if (x.o.check) {
		ret = prof_check(x.o.check, stdout);
		free(r);
		return ret ? 1 : 0;
	}
	x.r = r;
	if (!realpath(x.o.dir, r->dir) || stat(r->dir, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "dliofs profile: %s: %s\n", x.o.dir,
			errno ? strerror(errno) : "not a directory");
		free(r);
		return 2;
	}
	where(r);
	block_limits(r);
	when(r, argc, argv);
	r->time_ns = x.o.time_ns;
	r->writable = !x.o.read_only;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	x.t0 = dl_mono_ns();
	ret = run_all(&x);
	r->took_ns = dl_mono_ns() - x.t0;
	cleanup(&x);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (ret == -EINTR || stop_flag) {
		fprintf(stderr, "dliofs profile: interrupted: the probe was removed, no profile "
				"written\n");
		ret = 130;
	} else if (!ret) {
		progress(&x.o, x.t0, "fitting the device model ...", 1);
		ret = prof_fit(r) ? 1 : 0;
		if (!ret)
			ret = prof_write(r, x.o.out, &ntables) ? 1 : 0;
		if (!ret) {
			prof_summary(r, stdout);
			printf("wrote %s and %u latency table%s beside it\n", x.o.out, ntables,
			       ntables == 1 ? "" : "s");
		}
	} else {
		ret = 1;
	}
	for (unsigned i = 0; i < r->npt; i++)
		prof_point_free(&r->pt[i]);
	prof_meta_free(&r->meta);
	prof_fit_free(r);
	prof_tree_free(&x.tree);
	free(r);
	return ret;
}
