/* Private to `dliofs profile` (cli_profile.c and profile_*.c): the
 * files measured, one measurement, and what the profile is written from. */
#ifndef DLIOFS_FS_PROFILE_I_H
#define DLIOFS_FS_PROFILE_I_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dliofs/pacer.h"
#include "profile.h"

/* How the storage's client cache was kept out of the figures. */
enum prof_bypass {
	PROF_DIRECT,  /* O_DIRECT reads and writes */
	PROF_FADVISE, /* posix_fadvise(DONTNEED) before each measurement, checked with mincore */
	PROF_DROP,    /* /proc/sys/vm/drop_caches before each measurement (root) */
	PROF_LARGE,   /* files larger than twice this machine's memory, read at random */
	PROF_NONE,    /* none of these worked: the figures may be the cache's */
};

/* The files reads (and writes) go to: the probe file, or with --read-only
 * the largest files already in the directory. Sizes are rounded down to
 * whole 4 KiB blocks (O_DIRECT). */
struct prof_file {
	int fd;
	uint64_t size;
};

struct prof_set {
	struct prof_file *f;
	unsigned n;
	uint64_t total;
	uint64_t *prefix; /* prefix[i]: bytes of the files before i */
	enum prof_bypass bypass;
	int own;	  /* the probe file (ours): writes allowed, dirty pages synced */
	int writes_dsync; /* writes opened O_DSYNC (no O_DIRECT): each reaches storage */
};

enum prof_pattern { PROF_RANDOM, PROF_SEQ };

/* One measurement: `threads` clients each with one request of `size` in
 * flight for `time_ns`. */
struct prof_point {
	int write;
	uint64_t size;
	unsigned threads;
	enum prof_pattern pat;
	uint64_t time_ns;
	uint64_t idle_ns; /* the device left idle this long before it starts */
	/* Where in the set (its bytes end to end) the sequential regions
	 * start: measure() moves it on past what the points before read, so
	 * that no point reads what one just read (a cache below this machine,
	 * a VM host's, would serve it; this machine's is bypassed). */
	uint64_t start;
	/* results */
	uint64_t ops, bytes, elapsed_ns;
	uint64_t advance; /* sequential: the most one client went through its region */
	int wrapped;	  /* sequential: a client came round to what it had read */
	int stale;	  /* it read bytes an earlier point had read (measure()) */
	int too_fast;	  /* faster than the device can be: left out of the fit */
	uint64_t *lat; /* per-request latencies (ns), sorted; owned */
	size_t nlat;
	int err; /* errno of the first failed request, 0: none */
};

/* A flag a signal handler sets: the measurement stops at its next request. */
typedef volatile sig_atomic_t prof_stop_t;

/* profile_io.c */
/* Drop the set's cached pages as its bypass method says (before a point). */
void prof_uncache(const struct prof_set *s);
/* Is any page of the file resident in the page cache? 1 yes, 0 no, -1 unknown. */
int prof_resident(int fd, uint64_t size);
/* Run pt on s; 0, or -errno (also in pt->err) when no request succeeded. */
int prof_run(const struct prof_set *s, struct prof_point *pt, prof_stop_t *stop);
void prof_point_free(struct prof_point *pt);
double prof_rate(const struct prof_point *pt); /* bytes/s */
double prof_iops(const struct prof_point *pt);
uint64_t prof_pct(const uint64_t *v, size_t n, double q); /* v sorted */

/* profile_meta.c: what is in a directory (read-only mode measures that),
 * never following a symbolic link. */
struct prof_tree {
	char **files;
	uint64_t *sizes;
	size_t nfiles;
	char **dirs;
	size_t ndirs;
	int truncated; /* stopped at max_entries */
};
int prof_scan(const char *dir, size_t max_entries, struct prof_tree *t);
void prof_tree_free(struct prof_tree *t);

/* Metadata latencies (stat, open + close, readdir): on a probe tree of
 * small files created under probe (writable), or on tree (read-only). */
struct prof_meta {
	unsigned files, dirs;		 /* of the tree measured */
	int cold;			 /* caches dropped before each pass */
	uint64_t create_ns;		 /* creating the tree (writable) */
	uint64_t *stat, *open, *readdir; /* sorted latencies; owned */
	size_t nstat, nopen, nreaddir;
	uint64_t *stat_cached; /* the stat'ed files again, caches kept; owned */
	size_t nstat_cached;
	uint64_t blksize; /* st_blksize of the files (0: not known) */
	uint64_t *fsync; /* writable: fsync after a 4 KiB write */
	size_t nfsync;
	/* Reads the block device did per cold stat or open (its inode's and
	 * directory's blocks; meta.device_ios), from its counters; -1: not
	 * measured (no block device, caches kept). */
	double device_ios;
	double readdir_ios; /* the same per cold listing (meta.readdir_ios); -1: not measured */
};
int prof_meta_run(const char *probe, const struct prof_tree *tree, uint64_t time_ns, int drop,
		  const char *blockdev, struct prof_meta *m, prof_stop_t *stop);
/* Remove what prof_meta_run created under probe (by name, nothing else). */
void prof_meta_cleanup(const char *probe, const struct prof_meta *m);
void prof_meta_free(struct prof_meta *m);
/* Drop the kernel's page, dentry and inode caches (root); 0 or -errno. */
int prof_drop_caches(void);

/* ---- profile_out.c: the profile file, its latency tables, the summary ---- */
#define PROF_MAX_POINTS 40

/* Everything a run found, and where and how. */
struct prof_result {
	char dir[4096]; /* absolute */
	char fstype[64], source[256], mount_opts[256];
	char host[128], kernel[128], date[32];
	char args[512]; /* the command line's options */
	uint64_t time_ns, took_ns;
	enum prof_bypass bypass;
	int writable, writes_dsync, read_only_files;
	uint64_t probe_size; /* bytes of the file(s) data was read from */
	/* The block device below DIR: its largest request (queue/max_sectors_kb,
	 * bytes; 0: none found, e.g. a network or FUSE file system) and its name. */
	uint64_t max_request;
	char blockdev[64];
	unsigned nfiles;     /* files data was read from */
	struct prof_point pt[PROF_MAX_POINTS];
	unsigned npt;
	struct prof_meta meta;
	int have_meta;
	/* The device model fitted per class (profile_fit.c), and what it
	 * predicts for each point (model[i] for pt[i]). */
	int fitted[2];	/* [write] */
	struct dl_dev_model dev[2];
	char fit_note[2][160];
	struct dl_fit_point model[PROF_MAX_POINTS];
	int have_model[PROF_MAX_POINTS];
};

/* profile_fit.c: fit the device model of each class measured, and replay
 * every point on it (r->dev, r->model). A class that cannot be fitted is
 * said on stderr and left out (r->fitted[w] 0); -ENOMEM only. */
int prof_fit(struct prof_result *r);
/* One class's n points fitted (pacer/fit.c; max_request is the block
 * device's, kept as read) and each replayed on the model in virtual time:
 * *dev, the fit's line in note, model[j] for fp[j] where have[j]. 0 or
 * -errno (why in note). prof_fit and --refit both fit this way. */
int prof_fit_points(const struct dl_fit_point *fp, unsigned n, int write, uint64_t max_request,
		    struct dl_dev_model *dev, char *note, size_t notelen,
		    struct dl_fit_point *model, int *have);
void prof_fit_free(struct prof_result *r);
/* How far pt[i]'s model is from the measurement: the largest of
 * |model / measured - 1| over MB/s, p50, p99 (MB/s counted against the 10%
 * goal, latencies against 20%: each divided by its goal). */
double prof_misfit(const struct prof_result *r, unsigned i);

const char *prof_bypass_name(enum prof_bypass b);
const char *prof_bypass_how(enum prof_bypass b);
/* Write OUT (a .yaml file) and its tables beside it: 0 or -errno (said on
 * stderr). *ntables: the tables written. */
int prof_write(const struct prof_result *r, const char *out, unsigned *ntables);
/* The table people read at the end. */
void prof_summary(const struct prof_result *r, FILE *o);
/* "850.0us", "1.25ms": a latency as the profile writes it. */
void prof_fmt_ns(uint64_t ns, char *buf, size_t len);
/* "4KiB", "1MiB": the sizes the profile uses as keys. */
void prof_size_name(uint64_t b, char *buf, size_t len);

/* One write of the class block (read: or write: under pacer:) of model m;
 * note: the fit's line, blockdev: where max_request came from. */
void prof_write_class(FILE *f, const struct dl_dev_model *m, const char *note,
		      const char *blockdev, int write);

/* profile_check.c: `dliofs profile --check PROFILE`: each measured point
 * against the profile's model replayed in virtual time, printed to o. */
int prof_check(const char *path, FILE *o);

/* A measured point as a profile's line holds it (measured.requests). */
struct prof_line_point {
	int write;
	char size_s[32];
	uint64_t size;
	unsigned clients;
	uint64_t time_ns;
	double mb_s, iops;
	uint64_t p10, p50, p90, p99; /* p10, p90: 0 in profiles before they were kept */
	int too_fast;		     /* left out of the fit (a cache's) */
};
/* 0, or -1 when ln is no measured point (or one that failed). */
int prof_parse_point(const char *ln, struct prof_line_point *q);
/* The pattern of q as the fit and the replay take it. */
void prof_line_to_fit(const struct prof_line_point *q, struct dl_fit_point *p);

/* profile_refit.c: `dliofs profile --refit PROFILE -o OUT.yaml`: fit the
 * points PROFILE measured again (this dliofs's fit), write OUT, check it. */
int prof_refit(const char *in, const char *out, FILE *o);

#endif
