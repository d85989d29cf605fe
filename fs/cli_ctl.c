/* `dliofs stat | set | cache | trace`: talk to a running mount through
 * `.dliofs/` with the control-file client (dliofs/ctl_client.h): a command
 * is one transaction, written whole, committed by fsync, and on refusal the
 * daemon's reason is read back from the same open file. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "dliofs/ctl_client.h"
#include "dliofs/json.h"
#include "dliofs/pacer.h"

/* Is mnt a mount with this control file? Says so when not. */
static int ctl_check(const char *mnt, enum dl_ctl_file f)
{
	char path[4096];
	int ret = dl_ctl_path(mnt, f, path, sizeof(path));

	if (dl_ctl_sock_is(mnt))
		return 0; /* an S3 endpoint's control socket */
	if (ret) {
		fprintf(stderr, "dliofs: %s: %s\n", mnt, strerror(-ret));
		return ret;
	}
	if (access(path, F_OK) != 0) {
		fprintf(stderr, "dliofs: %s is not a dliofs mount (no %s/%s)\n", mnt, DL_CTL_DIRNAME,
			dl_ctl_names[f]);
		return -ENOENT;
	}
	return 0;
}

/* ---- stats.json as dotted paths (dliofs/json.h): "classes.read.ops" -> "12" ---- */
static const char *flat_get(const struct dl_jdoc *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static const char *flat_get(const struct dl_jdoc *f, const char *fmt, ...)
{
	const struct dl_jval *v;
	char key[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(key, sizeof(key), fmt, ap);
	va_end(ap);
	v = dl_jdoc_get(f, key);
	return v ? v->text : NULL;
}

static double num(const char *v) { return v ? strtod(v, NULL) : 0; }

/* A job's name for a column: path-like words shortened to their last
 * component ("/usr/bin/python3 /data/train.py" -> "python3 train.py"). */
static void short_name(const char *name, char *out, size_t len)
{
	size_t j = 0;

	while (*name && j + 1 < len) {
		const char *end = name + strcspn(name, " "), *base = name;

		for (const char *p = name; p < end; p++)
			if (*p == '/' && p + 1 < end)
				base = p + 1;
		while (base < end && j + 1 < len)
			out[j++] = *base++;
		while (*end == ' ' && j + 1 < len) {
			out[j++] = ' ';
			end++;
		}
		name = end;
	}
	out[j] = 0;
}

/* Backing directories and sinks, a row each (stats.json's `backing`). */
static void print_backing(const struct dl_jdoc *f, FILE *o)
{
	int header = 0;

	for (size_t i = 0; i < f->n; i++) {
		const char *k = f->v[i].path, *dot;
		char at[128];
		size_t n;

		if (strncmp(k, "backing.", 8) || !(dot = strrchr(k + 8, '.')) || strcmp(dot, ".kind"))
			continue;
		n = (size_t)(dot - (k + 8));
		if (n >= sizeof(at))
			continue;
		memcpy(at, k + 8, n);
		at[n] = 0;
		if (!header++)
			fprintf(o, "\n%-24s %-9s %9s %10s %9s %10s %s\n", "backing", "kind", "reads",
				"read MB", "writes", "write MB", "(sinks: discarded, read back)");
		fprintf(o, "%-24.24s %-9s %9.0f %10.1f %9.0f %10.1f", at, f->v[i].text,
			num(flat_get(f, "backing.%s.reads", at)),
			num(flat_get(f, "backing.%s.read_bytes", at)) / 1e6,
			num(flat_get(f, "backing.%s.writes", at)),
			num(flat_get(f, "backing.%s.write_bytes", at)) / 1e6);
		if (!strcmp(f->v[i].text, "sink"))
			fprintf(o, " %.1f MB discarded, %.1f MB read back",
				num(flat_get(f, "backing.%s.discarded_bytes", at)) / 1e6,
				num(flat_get(f, "backing.%s.read_back_bytes", at)) / 1e6);
		fputc('\n', o);
	}
}

/* A cluster of mounts: the table as last exchanged, per node (what it
 * moved, its share of each class's bandwidth) and its jobs below it. */
static void print_cluster(const struct dl_jdoc *f, FILE *o)
{
	static const char *const cls[] = {"read", "write", "meta"};

	if (!flat_get(f, "cluster.nodes"))
		return;
	fprintf(o, "\ncluster: node %.0f of %.0f, %.0f exchanges every %.0f us\n",
		num(flat_get(f, "cluster.rank")), num(flat_get(f, "cluster.nodes")),
		num(flat_get(f, "cluster.exchanges")), num(flat_get(f, "cluster.period_us")));
	fprintf(o, "%-40s %9s %7s %9s %7s %9s %7s\n", "node / job", "read MB/s", "share",
		"write MB/s", "share", "meta IOPS", "share");
	for (int i = 0; flat_get(f, "cluster.table.%d.node", i); i++) {
		char name[64];

		snprintf(name, sizeof(name), "node %s", flat_get(f, "cluster.table.%d.node", i));
		fprintf(o, "%-40s", name);
		for (int c = 0; c < 3; c++)
			fprintf(o, " %9.1f %6.1f%%",
				c == 2 ? num(flat_get(f, "cluster.table.%d.%s.iops", i, cls[c]))
				       : num(flat_get(f, "cluster.table.%d.%s.MBps", i, cls[c])),
				100 * num(flat_get(f, c == 2 ? "cluster.table.%d.%s.share_iops"
							     : "cluster.table.%d.%s.share_bandwidth",
						   i, cls[c])));
		fputc('\n', o);
		for (int j = 0; flat_get(f, "cluster.table.%d.jobs.%d.name", i, j); j++) {
			char jn[64];

			short_name(flat_get(f, "cluster.table.%d.jobs.%d.name", i, j), jn, sizeof(jn));
			fprintf(o, "  %-38.38s", jn);
			for (int c = 0; c < 3; c++)
				fprintf(o, " %9.1f %7s",
					c == 2 ? num(flat_get(f, "cluster.table.%d.jobs.%d.%s.iops",
							      i, j, cls[c]))
					       : num(flat_get(f, "cluster.table.%d.jobs.%d.%s.MBps",
							      i, j, cls[c])),
					"");
			fputc('\n', o);
		}
	}
}

/* The compact view: per class, per job, the cache, backing directories and
 * the trace. */
static void print_table(const struct dl_jdoc *f, FILE *o)
{
	static const char *const cls[] = {"read", "write", "meta"};
	const char *prof = flat_get(f, "profile");

	fprintf(o, "elapsed %.1f s   storage model: %s%s%s   share: %s\n",
		num(flat_get(f, "elapsed_s")),
		!strcmp(flat_get(f, "enabled") ? flat_get(f, "enabled") : "", "true")
		    ? "on"
		    : "off",
		prof && *prof ? ", profile " : "", prof && *prof ? prof : "",
		flat_get(f, "share.policy") ? flat_get(f, "share.policy") : "?");
	fprintf(o, "cache   %s (%s): %s\n", flat_get(f, "cache.policy") ?: "?",
		flat_get(f, "cache.origin") ?: "", flat_get(f, "cache.meaning") ?: "");
	if (strcmp(flat_get(f, "cache.policy") ?: "", "kernel") &&
	    strcmp(flat_get(f, "cache.policy") ?: "", "none"))
		fprintf(o, "        %.1f of %.1f MB resident\n",
			num(flat_get(f, "cache.resident_bytes")) / 1e6,
			num(flat_get(f, "cache.capacity_bytes")) / 1e6);
	fprintf(o, "\n%-6s %10s %10s %9s %9s %9s %9s %9s %6s %8s\n", "class", "ops", "MB", "MB/s",
		"IOPS", "p50 us", "p99 us", "p99.9 us", "queue", "cache hit");
	for (int c = 0; c < 3; c++) {
		double hb = num(flat_get(f, "classes.%s.cache.hit_bytes", cls[c]));
		double mb = num(flat_get(f, "classes.%s.cache.miss_bytes", cls[c]));
		char hit[16] = "-";

		if (hb + mb > 0)
			snprintf(hit, sizeof(hit), "%.1f%%", 100 * hb / (hb + mb));
		fprintf(o, "%-6s %10.0f %10.1f %9.1f %9.1f %9.1f %9.1f %9.1f %6.0f %8s\n", cls[c],
			num(flat_get(f, "classes.%s.ops", cls[c])),
			num(flat_get(f, "classes.%s.bytes", cls[c])) / 1e6,
			num(flat_get(f, "classes.%s.bandwidth_Bps", cls[c])) / 1e6,
			num(flat_get(f, "classes.%s.iops", cls[c])),
			num(flat_get(f, "classes.%s.latency_us.p50", cls[c])),
			num(flat_get(f, "classes.%s.latency_us.p99", cls[c])),
			num(flat_get(f, "classes.%s.latency_us.p99.9", cls[c])),
			num(flat_get(f, "classes.%s.in_flight", cls[c])), hit);
	}
	fprintf(o, "\n%-40s %5s %5s %10s %9s %9s %9s %9s %8s\n", "job", "procs", "thr",
		"read MB", "MB/s", "p50 us", "p99 us", "meta ops", "cache hit");
	for (int j = 0; flat_get(f, "jobs.%d.id", j); j++) {
		double hb = num(flat_get(f, "jobs.%d.classes.read.cache.hit_bytes", j));
		double mb = num(flat_get(f, "jobs.%d.classes.read.cache.miss_bytes", j));
		char name[64], hit[16] = "-";

		short_name(flat_get(f, "jobs.%d.name", j) ?: "?", name, sizeof(name));
		if (hb + mb > 0)
			snprintf(hit, sizeof(hit), "%.1f%%", 100 * hb / (hb + mb));
		fprintf(o, "%-40.40s %5.0f %5.0f %10.1f %9.1f %9.1f %9.1f %9.0f %8s\n", name,
			num(flat_get(f, "jobs.%d.processes", j)),
			num(flat_get(f, "jobs.%d.threads", j)),
			num(flat_get(f, "jobs.%d.classes.read.bytes", j)) / 1e6,
			num(flat_get(f, "jobs.%d.classes.read.bandwidth_Bps", j)) / 1e6,
			num(flat_get(f, "jobs.%d.classes.read.latency_us.p50", j)),
			num(flat_get(f, "jobs.%d.classes.read.latency_us.p99", j)),
			num(flat_get(f, "jobs.%d.classes.meta.ops", j)) +
			    num(flat_get(f, "jobs.%d.classes.meta.nodev_ops", j)),
			hit);
	}
	print_backing(f, o);
	print_cluster(f, o);
	if (flat_get(f, "trace.active"))
		fprintf(o, "\ntrace   %s, %.0f records, %.0f dropped\n",
			!strcmp(flat_get(f, "trace.active"), "true") ? "on" : "off",
			num(flat_get(f, "trace.records")), num(flat_get(f, "trace.dropped")));
}

int dl_cli_stat(const char *mnt, int watch, double interval, int raw, int all, int reset)
{
	char *buf = NULL;
	size_t len = 0;
	int ret;

	if (ctl_check(mnt, DL_CTL_STATS))
		return 1;
	if (reset)
		return dl_ctl_send(mnt, DL_CTL_STATS, "reset\n", 6, "dliofs stat --reset") ? 1 : 0;
	for (;;) {
		struct dl_jdoc f = {0};

		ret = dl_ctl_read(mnt, DL_CTL_STATS, &buf, &len);
		if (ret) {
			fprintf(stderr, "dliofs stat: %s/%s/%s: %s\n", mnt, DL_CTL_DIRNAME,
				dl_ctl_names[DL_CTL_STATS], strerror(-ret));
			return 1;
		}
		if (watch && isatty(1))
			fputs("\033[H\033[2J", stdout);
		if (raw) {
			fwrite(buf, 1, len, stdout);
		} else {
			if (dl_jdoc_parse(buf, len, DL_JDOC_NULLS, &f)) {
				fprintf(stderr, "dliofs stat: malformed stats.json\n");
				dl_jdoc_free(&f);
				free(buf);
				return 1;
			}
			if (all)
				for (size_t i = 0; i < f.n; i++)
					printf("%-48s %s\n", f.v[i].path, f.v[i].text);
			else
				print_table(&f, stdout);
		}
		dl_jdoc_free(&f);
		free(buf);
		fflush(stdout);
		if (!watch)
			return 0;
		usleep((useconds_t)(interval * 1e6));
		if (!isatty(1))
			puts("");
	}
}

/* The cache policy in force (first line of .dliofs/cache: "policy X"). */
static void cache_policy(const char *mnt, char *out, size_t len)
{
	char *buf = NULL;
	size_t n;

	out[0] = 0;
	if (dl_ctl_read(mnt, DL_CTL_CACHE, &buf, &n))
		return;
	if (!strncmp(buf, "policy ", 7))
		snprintf(out, len, "%.*s", (int)strcspn(buf + 7, "\n"), buf + 7);
	free(buf);
}

int dl_cli_set(const char *mnt, int npairs, char **pairs)
{
	char err[512], pol[32];
	struct dl_pacer_cfg probe;
	size_t total = 0, off = 0;
	char *text;
	int ret, bad = 0, model = 0;

	if (ctl_check(mnt, DL_CTL_PACER))
		return 1;
	/* Check syntax here, where the user sees the message; the daemon checks
	 * the whole change against its live settings and refuses all of it if
	 * needed. */
	dl_pacer_cfg_init(&probe);
	for (int i = 0; i < npairs; i++) {
		char *eq = strchr(pairs[i], '=');
		total += strlen(pairs[i]) + 1;
		if (!eq || strchr(pairs[i], '\n') || strchr(pairs[i], ';')) {
			fprintf(stderr, "dliofs set: '%s': expected key=value\n", pairs[i]);
			bad = 1;
			continue;
		}
		*eq = 0;
		if (dl_pacer_cfg_set(&probe, pairs[i], eq + 1, err, sizeof(err))) {
			fprintf(stderr, "dliofs set: %s\n", err);
			bad = 1;
		}
		model |= strncmp(pairs[i], "cache.", 6) != 0;
		*eq = '=';
	}
	dl_pacer_cfg_free(&probe);
	if (bad)
		return 2;
	text = malloc(total + 1);
	if (!text)
		return 1;
	for (int i = 0; i < npairs; i++)
		off += (size_t)sprintf(text + off, "%s\n", pairs[i]);
	ret = dl_ctl_send(mnt, DL_CTL_PACER, text, off, "dliofs set");
	free(text);
	if (ret)
		return 1;
	cache_policy(mnt, pol, sizeof(pol));
	if (model && !strcmp(pol, "kernel"))
		fprintf(stderr,
			"dliofs set: note: cache policy kernel: pages read before this change are "
			"still served from the page cache without the model; `dliofs cache drop "
			"%s` makes the next run cold\n",
			mnt);
	return 0;
}

int dl_cli_cache(const char *mnt, const char *cmd, const char *arg)
{
	size_t mlen = strlen(mnt);

	if (ctl_check(mnt, DL_CTL_CACHE))
		return 1;
	if (!strcmp(cmd, "drop"))
		return dl_ctl_cache_drop(mnt, "dliofs cache drop") ? 1 : 0;
	if (strcmp(cmd, "warm") || !arg) {
		fprintf(stderr, "usage: dliofs cache drop MOUNT | dliofs cache warm MOUNT PATH\n");
		return 2;
	}
	/* Accept a path under the mountpoint or one relative to its root. */
	if (!strncmp(arg, mnt, mlen) && (arg[mlen] == '/' || !arg[mlen]))
		arg += mlen;
	if (strchr(arg, '\n')) {
		fprintf(stderr, "dliofs cache warm: a path with a newline\n");
		return 2;
	}
	if (strlen(arg) > PATH_MAX) {
		fprintf(stderr, "dliofs cache %s: path too long\n", cmd);
		return 2;
	}
	return dl_ctl_cache_warm(mnt, arg, "dliofs cache warm") ? 1 : 0;
}

int dl_cli_trace(const char *mnt, const char *cmd, const char *file, const char *ops)
{
	char text[8400], abs[4096];
	int n;

	if (ctl_check(mnt, DL_CTL_TRACE))
		return 1;
	if (!strcmp(cmd, "stop")) {
		n = snprintf(text, sizeof(text), "stop\n");
	} else if (!strcmp(cmd, "start") && file) {
		if (strchr(file, '\n') || (ops && (strchr(ops, '\n') || strchr(ops, ' ')))) {
			fprintf(stderr, "dliofs trace start: a newline in the path or a blank in "
					"OPS\n");
			return 2;
		}
		/* The daemon runs in /: hand it an absolute path (the rest of the
		 * line, blanks included). */
		abs[0] = 0;
		if (file[0] != '/' && !getcwd(abs, sizeof(abs)))
			return 1;
		n = snprintf(text, sizeof(text), "start ops=%s %s%s%s\n", ops ? ops : "all", abs,
			     abs[0] ? "/" : "", file);
	} else {
		fprintf(stderr, "usage: dliofs trace start MOUNT FILE [OPS] | dliofs trace stop MOUNT\n");
		return 2;
	}
	if (n < 0 || (size_t)n >= sizeof(text)) {
		fprintf(stderr, "dliofs trace: path too long\n");
		return 2;
	}
	if (dl_ctl_send(mnt, DL_CTL_TRACE, text, (size_t)n, "%s",
			!strcmp(cmd, "stop") ? "dliofs trace stop" : "dliofs trace start"))
		return 1;
	if (!strcmp(cmd, "stop")) {
		/* Say what the file holds when records were lost. */
		char *st = NULL, *last;
		size_t len;

		if (dl_ctl_read(mnt, DL_CTL_TRACE, &st, &len) == 0 &&
		    (last = strstr(st, "last ")) &&
		    !strstr(last, " 0 dropped")) {
			last[strcspn(last, "\n")] = 0;
			fprintf(stderr, "dliofs trace stop: %s\n", last);
		}
		free(st);
	}
	return 0;
}
