/* `dliofs profile`: what a run writes. OUT.yaml is a storage profile that
 * `pacer: {profile: ./OUT.yaml}` takes (its `pacer:` and `cache:`
 * sections) plus a `measured:` section saying where, when and how, with
 * every figure measured. Latency distributions go to tables beside it
 * (OUT.read-4KiB.lat, ...), the empirical(FILE) format: the measured
 * latencies binned to about 1%, each bin's mean with its count. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/isotonic.h"
#include "profile_i.h"

/* Bins of at most this relative width: the table's quantiles are within
 * half of it of the measured ones. */
#define BIN_WIDTH 0.01

const char *prof_bypass_name(enum prof_bypass b)
{
	static const char *const n[] = {"direct", "fadvise", "drop_caches", "large_files", "none"};

	return (unsigned)b < 5 ? n[b] : "?";
}

const char *prof_bypass_how(enum prof_bypass b)
{
	switch (b) {
	case PROF_DIRECT:
		return "O_DIRECT reads and writes: no page cache holds the data";
	case PROF_FADVISE:
		return "the file system refuses O_DIRECT: the probe's pages are dropped "
		       "(posix_fadvise DONTNEED, checked with mincore) before each measurement";
	case PROF_DROP:
		return "the file system refuses O_DIRECT and keeps pages past DONTNEED: the "
		       "kernel's caches are dropped (/proc/sys/vm/drop_caches) before each "
		       "measurement";
	case PROF_LARGE:
		return "no O_DIRECT, no way to drop the cache: random reads over files larger "
		       "than twice this machine's memory mostly miss it";
	case PROF_NONE:
		return "NOT BYPASSED: no O_DIRECT, pages not droppable, not root, files smaller "
		       "than memory; re-read data may have come from the page cache";
	}
	return "?";
}

void prof_size_name(uint64_t b, char *buf, size_t len)
{
	static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	unsigned i = 0;

	while (i < 4 && b && b % 1024 == 0) {
		b /= 1024;
		i++;
	}
	snprintf(buf, len, "%llu%s", (unsigned long long)b, u[i]);
}

static void fmt_ns(uint64_t ns, char *buf, size_t len)
{
	if (ns >= 10000000ULL)
		snprintf(buf, len, "%.1fms", (double)ns / 1e6);
	else if (ns >= 1000000ULL)
		snprintf(buf, len, "%.2fms", (double)ns / 1e6);
	else if (ns >= 10000ULL)
		snprintf(buf, len, "%.1fus", (double)ns / 1e3);
	else
		snprintf(buf, len, "%.2fus", (double)ns / 1e3);
}

static int write_table(const char *path, const uint64_t *v, size_t n, const char *what)
{
	FILE *f = fopen(path, "w");
	size_t i = 0;

	if (!f)
		return -errno;
	fprintf(f,
		"# %s: %zu latencies measured by dliofs profile, binned to %.0f%% (value: the "
		"bin's mean, then how many)\n# p50 %llu ns, p99 %llu ns, max %llu ns\n",
		what, n, BIN_WIDTH * 100, (unsigned long long)prof_pct(v, n, 0.5),
		(unsigned long long)prof_pct(v, n, 0.99), (unsigned long long)(n ? v[n - 1] : 0));
	while (i < n) {
		double lim = (double)v[i] * (1 + BIN_WIDTH), sum = 0;
		size_t j = i;

		while (j < n && (double)v[j] <= lim)
			sum += (double)v[j++];
		fprintf(f, "%.0fns %zu\n", sum / (double)(j - i), j - i);
		i = j;
	}
	if (fclose(f))
		return -errno;
	return 0;
}

/* OUT's directory and its name without .yaml (tables are STEM.what.lat). */
static void split_out(const char *out, char *dir, size_t dlen, char *stem, size_t slen)
{
	char a[PATH_MAX], b[PATH_MAX], *dot;

	snprintf(a, sizeof(a), "%s", out);
	snprintf(b, sizeof(b), "%s", out);
	snprintf(dir, dlen, "%s", dirname(a));
	snprintf(stem, slen, "%s", basename(b));
	dot = strrchr(stem, '.');
	if (dot && dot != stem && (!strcmp(dot, ".yaml") || !strcmp(dot, ".yml")))
		*dot = '\0';
}

/* Was size measured with more than one client? */
static int has_row(const struct prof_result *r, int write, uint64_t size)
{
	for (unsigned j = 0; j < r->npt; j++)
		if (r->pt[j].write == write && r->pt[j].size == size && r->pt[j].threads > 1 &&
		    r->pt[j].ops)
			return 1;
	return 0;
}

/* The model of one class: latency_by_size from its points with one client,
 * bandwidth_by_concurrency from the sizes also measured with more. */
static int write_class(FILE *f, const struct prof_result *r, int write, const char *dir,
		       const char *stem, unsigned *ntables)
{
	const char *cls = write ? "write" : "read";
	char size[32], path[PATH_MAX + 64], name[PATH_MAX], what[96];
	int any = 0, ret;

	fprintf(f, "  %s:\n    latency_by_size:", cls);
	for (unsigned i = 0; i < r->npt; i++) {
		const struct prof_point *p = &r->pt[i];

		if (p->write != write || p->threads != 1 || !p->nlat)
			continue;
		prof_size_name(p->size, size, sizeof(size));
		snprintf(name, sizeof(name), "%s.%s-%s.lat", stem, cls, size);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		snprintf(what, sizeof(what), "%s %s, one at a time, %s", cls, size,
			 p->pat == PROF_RANDOM ? "random offsets" : "sequential");
		ret = write_table(path, p->lat, p->nlat, what);
		if (ret) {
			fprintf(stderr, "dliofs profile: %s: %s\n", path, strerror(-ret));
			return ret;
		}
		++*ntables;
		fprintf(f, "\n      %s: \"empirical(%s)\"", size, name);
		any = 1;
	}
	fprintf(f, "%s\n    bandwidth_by_concurrency:", any ? "" : " {}");
	any = 0;
	for (unsigned i = 0; i < r->npt; i++) {
		const struct prof_point *a = &r->pt[i];

		if (a->write != write || a->threads != 1 || !a->ops || !has_row(r, write, a->size))
			continue;
		/* The row as measured (plan order: K ascending), then fitted
		 * non-decreasing in K: a point measured while a shared or
		 * throttled device dipped would otherwise be the model at that
		 * concurrency (measured.requests keeps what was measured). */
		double bw[DL_ISOTONIC_MAX];
		unsigned ks[DL_ISOTONIC_MAX], nk = 0;

		bw[nk] = prof_rate(a);
		ks[nk++] = 1;
		for (unsigned j = 0; j < r->npt && nk < DL_ISOTONIC_MAX; j++) {
			const struct prof_point *p = &r->pt[j];

			if (p->write == write && p->size == a->size && p->threads > 1 && p->ops) {
				bw[nk] = prof_rate(p);
				ks[nk++] = p->threads;
			}
		}
		if (dl_isotonic_up(bw, NULL, nk))
			return -EINVAL;
		prof_size_name(a->size, size, sizeof(size));
		fprintf(f, "\n      %s: {", size);
		for (unsigned j = 0; j < nk; j++)
			fprintf(f, "%s%u: %.3fMB/s", j ? ", " : "", ks[j], bw[j] / 1e6);
		fprintf(f, "}");
		any = 1;
	}
	fprintf(f, "%s\n", any ? "" : " {}");
	return 0;
}

static void yaml_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc((unsigned char)*s < 0x20 ? '?' : *s, f);
	}
	fputc('"', f);
}

static void lat_fig(FILE *f, const char *name, const uint64_t *v, size_t n, const char *sep)
{
	char a[32], b[32];

	fmt_ns(prof_pct(v, n, 0.5), a, sizeof(a));
	fmt_ns(prof_pct(v, n, 0.99), b, sizeof(b));
	fprintf(f, "%s%s: {n: %zu, p50: %s, p99: %s}", sep, name, n, a, b);
}

/* Every figure, where, when and how: what a reader of the profile (or a
 * reviewer of a fidelity claim) needs to judge it. */
static void write_measured(FILE *f, const struct prof_result *r)
{
	char size[32], a[32], b[32];

	fprintf(f, "measured:\n  directory: ");
	yaml_str(f, r->dir);
	fprintf(f, "\n  filesystem: ");
	yaml_str(f, r->fstype);
	fprintf(f, "\n  source: ");
	yaml_str(f, r->source);
	fprintf(f, "\n  mount_options: ");
	yaml_str(f, r->mount_opts);
	fprintf(f, "\n  host: ");
	yaml_str(f, r->host);
	fprintf(f, "\n  kernel: ");
	yaml_str(f, r->kernel);
	fprintf(f, "\n  date: %s\n  by: ", r->date);
	yaml_str(f, r->args);
	fprintf(f, "\n  took: %.1fs\n  cache_bypass: %s\n  cache_bypass_how: ",
		(double)r->took_ns / 1e9, prof_bypass_name(r->bypass));
	yaml_str(f, prof_bypass_how(r->bypass));
	prof_size_name(r->probe_size, size, sizeof(size));
	fprintf(f, "\n  data: {files: %u, bytes: %s, %s}\n", r->nfiles, size,
		r->read_only_files ? "source: the files already in the directory (read-only)"
				   : "source: a probe file written here and removed");
	fprintf(f, "  pattern: \"below 64KiB at random 4KiB-aligned offsets; from 64KiB on "
		   "sequential, each client in a region of its own\"\n");
	if (r->writes_dsync)
		fprintf(f, "  writes: \"O_DSYNC (no O_DIRECT): each write reaches the storage\"\n");
	fprintf(f, "  requests:\n");
	for (unsigned i = 0; i < r->npt; i++) {
		const struct prof_point *p = &r->pt[i];

		prof_size_name(p->size, size, sizeof(size));
		fmt_ns(prof_pct(p->lat, p->nlat, 0.5), a, sizeof(a));
		fmt_ns(prof_pct(p->lat, p->nlat, 0.99), b, sizeof(b));
		fprintf(f,
			"    - {op: %s, size: %s, clients: %u, pattern: %s, requests: %llu, "
			"MBps: %.3f, iops: %.0f, p50: %s, p99: %s%s%s}\n",
			p->write ? "write" : "read", size, p->threads,
			p->pat == PROF_RANDOM ? "random" : "sequential", (unsigned long long)p->ops,
			prof_rate(p) / 1e6, prof_iops(p), a, b, p->err ? ", error: " : "",
			p->err ? strerror(p->err) : "");
	}
	if (!r->have_meta)
		return;
	fprintf(f, "  meta: {files: %u, dirs: %u, caches: %s", r->meta.files, r->meta.dirs,
		r->meta.cold ? "dropped before each pass" : "kept (not root, or --keep-caches)");
	if (r->meta.nstat)
		lat_fig(f, "stat", r->meta.stat, r->meta.nstat, ", ");
	if (r->meta.nstat_cached)
		lat_fig(f, "stat_cached", r->meta.stat_cached, r->meta.nstat_cached, ", ");
	if (r->meta.nopen)
		lat_fig(f, "open_close", r->meta.open, r->meta.nopen, ", ");
	if (r->meta.nreaddir)
		lat_fig(f, "readdir", r->meta.readdir, r->meta.nreaddir, ", ");
	if (r->meta.nfsync)
		lat_fig(f, "fsync_4KiB", r->meta.fsync, r->meta.nfsync, ", ");
	fprintf(f, "}\n");
}

int prof_write(const struct prof_result *r, const char *out, unsigned *ntables)
{
	char dir[PATH_MAX], stem[PATH_MAX], path[2 * PATH_MAX + 32];
	FILE *f;
	int ret = 0;

	*ntables = 0;
	split_out(out, dir, sizeof(dir), stem, sizeof(stem));
	f = fopen(out, "w");
	if (!f) {
		ret = -errno;
		fprintf(stderr, "dliofs profile: %s: %s\n", out, strerror(errno));
		return ret;
	}
	fprintf(f,
		"# Storage profile of %s, measured by dliofs profile on %s.\n"
		"# Use it with `pacer: {profile: ./%s.yaml}` (a path is relative to the config\n"
		"# that names it; the latency tables %s.*.lat must stay beside this file).\n"
		"# The model: each request's latency is drawn from the table of its size\n"
		"# (measured one at a time, interpolated between sizes) and stretched when\n"
		"# several are in service so that they complete at the measured bandwidth,\n"
		"# fitted non-decreasing in the number in service (pool adjacent violators:\n"
		"# a dip of the device while one point was measured is averaged with its\n"
		"# neighbours; measured.requests has the rates as measured).\n",
		r->dir, r->date, stem, stem);
	write_measured(f, r);
	fprintf(f, "pacer:\n");
	ret = write_class(f, r, 0, dir, stem, ntables);
	if (!ret && r->writable)
		ret = write_class(f, r, 1, dir, stem, ntables);
	if (!ret && r->have_meta && r->meta.nstat) {
		snprintf(path, sizeof(path), "%s/%s.meta-stat.lat", dir, stem);
		ret = write_table(path, r->meta.stat, r->meta.nstat,
				  "stat of a file not in the client's caches");
		if (ret)
			fprintf(stderr, "dliofs profile: %s: %s\n", path, strerror(-ret));
		else
			++*ntables;
		/* The mount's metadata requests (lookup, getattr, open, readdir)
		 * each take what a stat took here: an open is a lookup and an open
		 * on the mount, as a stat and an open are on most file systems.
		 * A first touch of an inode takes the cold stat, a touch of one
		 * the client has seen the stat repeated (meta.cached_latency). */
		fprintf(f, "  meta: {latency: \"empirical(%s.meta-stat.lat)\"", stem);
		if (!ret && r->meta.nstat_cached) {
			snprintf(path, sizeof(path), "%s/%s.meta-stat-cached.lat", dir, stem);
			ret = write_table(path, r->meta.stat_cached, r->meta.nstat_cached,
					  "stat of a file whose inode the client has cached");
			if (ret)
				fprintf(stderr, "dliofs profile: %s: %s\n", path, strerror(-ret));
			else
				++*ntables;
			fprintf(f, ", cached_latency: \"empirical(%s.meta-stat-cached.lat)\"", stem);
		}
		fprintf(f, "}\n");
	}
	fprintf(f, "# Measured with the client cache bypassed: the mount reads every request\n"
		   "# from the model. To add this node's page cache, give a size:\n"
		   "# cache: {policy: lru, size: 64GiB}\n"
		   "cache: {policy: none}\n");
	if (fclose(f) && !ret) {
		ret = -errno;
		fprintf(stderr, "dliofs profile: %s: %s\n", out, strerror(errno));
	}
	return ret;
}

void prof_summary(const struct prof_result *r, FILE *o)
{
	char size[32], a[32], b[32];

	fprintf(o, "\ndliofs profile: %s (%s on %s), %.1f s, cache: %s\n", r->dir, r->fstype,
		r->source, (double)r->took_ns / 1e9, prof_bypass_name(r->bypass));
	fprintf(o, "  %-5s %-7s %-7s %-10s %10s %10s %10s %10s %9s\n", "op", "size", "clients",
		"pattern", "MB/s", "IOPS", "p50", "p99", "requests");
	for (unsigned i = 0; i < r->npt; i++) {
		const struct prof_point *p = &r->pt[i];

		prof_size_name(p->size, size, sizeof(size));
		fmt_ns(prof_pct(p->lat, p->nlat, 0.5), a, sizeof(a));
		fmt_ns(prof_pct(p->lat, p->nlat, 0.99), b, sizeof(b));
		fprintf(o, "  %-5s %-7s %-7u %-10s %10.1f %10.0f %10s %10s %9llu%s%s\n",
			p->write ? "write" : "read", size, p->threads,
			p->pat == PROF_RANDOM ? "random" : "sequential", prof_rate(p) / 1e6,
			prof_iops(p), a, b, (unsigned long long)p->ops, p->err ? "  " : "",
			p->err ? strerror(p->err) : "");
	}
	if (!r->have_meta)
		return;
	fprintf(o, "  metadata on %u files in %u directories (caches %s):\n", r->meta.files,
		r->meta.dirs, r->meta.cold ? "dropped" : "kept");
	if (r->meta.nstat) {
		fmt_ns(prof_pct(r->meta.stat, r->meta.nstat, 0.5), a, sizeof(a));
		fmt_ns(prof_pct(r->meta.stat, r->meta.nstat, 0.99), b, sizeof(b));
		fprintf(o, "    %-12s p50 %10s  p99 %10s  (%zu)\n", "stat", a, b, r->meta.nstat);
	}
	if (r->meta.nstat_cached) {
		fmt_ns(prof_pct(r->meta.stat_cached, r->meta.nstat_cached, 0.5), a, sizeof(a));
		fmt_ns(prof_pct(r->meta.stat_cached, r->meta.nstat_cached, 0.99), b, sizeof(b));
		fprintf(o, "    %-12s p50 %10s  p99 %10s  (%zu)\n", "stat, cached", a, b,
			r->meta.nstat_cached);
	}
	if (r->meta.nopen) {
		fmt_ns(prof_pct(r->meta.open, r->meta.nopen, 0.5), a, sizeof(a));
		fmt_ns(prof_pct(r->meta.open, r->meta.nopen, 0.99), b, sizeof(b));
		fprintf(o, "    %-12s p50 %10s  p99 %10s  (%zu)\n", "open+close", a, b,
			r->meta.nopen);
	}
	if (r->meta.nreaddir) {
		fmt_ns(prof_pct(r->meta.readdir, r->meta.nreaddir, 0.5), a, sizeof(a));
		fmt_ns(prof_pct(r->meta.readdir, r->meta.nreaddir, 0.99), b, sizeof(b));
		fprintf(o, "    %-12s p50 %10s  p99 %10s  (%zu)\n", "readdir", a, b,
			r->meta.nreaddir);
	}
	if (r->meta.nfsync) {
		fmt_ns(prof_pct(r->meta.fsync, r->meta.nfsync, 0.5), a, sizeof(a));
		fmt_ns(prof_pct(r->meta.fsync, r->meta.nfsync, 0.99), b, sizeof(b));
		fprintf(o, "    %-12s p50 %10s  p99 %10s  (%zu)\n", "fsync 4KiB", a, b,
			r->meta.nfsync);
	}
}
