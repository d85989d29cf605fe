/* `dliofs profile --refit PROFILE -o OUT.yaml`: fit the device model again
 * to the points PROFILE measured, with this dliofs's fit (pacer/fit.c),
 * without measuring again: a profile written by an older dliofs, whose fit
 * chose a wrong model, is mended even when the storage is gone. OUT is
 * PROFILE with each class's model (pacer: read:, write:) and each point's
 * `model:` figures replaced; what was measured, the metadata tables and
 * everything else stay as they were. Then OUT is checked (--check). */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dliofs/units.h"
#include "profile_i.h"

struct refit {
	struct prof_line_point pt[PROF_MAX_POINTS];
	struct dl_fit_point model[PROF_MAX_POINTS];
	int have_model[PROF_MAX_POINTS];
	unsigned npt;
	int fitted[2];
	struct dl_dev_model dev[2];
	char note[2][160];
	uint64_t max_request[2];
	char blockdev[64];
};

/* The points, and each class's max_request and where it came from (kept:
 * it was read from sysfs, not fitted). */
static int read_in(FILE *f, struct refit *x)
{
	char ln[2048];
	int in_req = 0, cls = -1;

	while (fgets(ln, sizeof(ln), f)) {
		if (!strncmp(ln, "  requests:", 11)) {
			in_req = 1;
			continue;
		}
		if (in_req && !strncmp(ln, "    - {", 7)) {
			if (x->npt >= PROF_MAX_POINTS)
				return -E2BIG;
			if (!prof_parse_point(ln, &x->pt[x->npt]))
				x->npt++;
			continue;
		}
		if (ln[0] != ' ')
			in_req = 0;
		if (!strcmp(ln, "  read:\n") || !strcmp(ln, "  write:\n"))
			cls = ln[2] == 'w';
		else if (strncmp(ln, "    ", 4))
			cls = -1;
		if (cls >= 0 && !strncmp(ln, "    max_request: ", 17)) {
			const char *w = NULL, *q;
			char v[32];

			snprintf(v, sizeof(v), "%.*s", (int)strcspn(ln + 17, " #\n"), ln + 17);
			if (dl_parse_size(v, &x->max_request[cls], &w))
				x->max_request[cls] = 0;
			q = strstr(ln, "(");
			if (q && strstr(q, "'s max_sectors_kb"))
				snprintf(x->blockdev, sizeof(x->blockdev), "%.*s",
					 (int)(strstr(q, "'s max_sectors_kb") - q - 1), q + 1);
		}
	}
	return x->npt ? 0 : -ENOENT;
}

static int fit_class(struct refit *x, int write)
{
	struct dl_fit_point fp[PROF_MAX_POINTS], model[PROF_MAX_POINTS];
	unsigned idx[PROF_MAX_POINTS], n = 0;
	int have[PROF_MAX_POINTS];
	int ret;

	for (unsigned i = 0; i < x->npt; i++) {
		if (x->pt[i].write != write || x->pt[i].too_fast)
			continue;
		idx[n] = i;
		prof_line_to_fit(&x->pt[i], &fp[n++]);
	}
	if (!n)
		return 0;
	ret = prof_fit_points(fp, n, write, x->max_request[write], &x->dev[write], x->note[write],
			      sizeof(x->note[write]), model, have);
	if (ret) {
		fprintf(stderr, "dliofs profile --refit: %s: no device model fitted: %s\n",
			write ? "write" : "read", x->note[write]);
		return ret;
	}
	for (unsigned j = 0; j < n; j++) {
		x->model[idx[j]] = model[j];
		x->have_model[idx[j]] = have[j];
	}
	x->fitted[write] = 1;
	return 0;
}

/* A point's line with its model figures replaced by the new ones. */
static void point_line(FILE *o, const char *ln, const struct dl_fit_point *m)
{
	const char *model = strstr(ln, ", model: ");
	size_t keep = model ? (size_t)(model - ln) : strcspn(ln, "}\n");
	char a[32], b[32];

	prof_fmt_ns(m->p50_ns, a, sizeof(a));
	prof_fmt_ns(m->p99_ns, b, sizeof(b));
	fprintf(o, "%.*s, model: {MBps: %.3f, iops: %.0f, p50: %s, p99: %s}}\n", (int)keep, ln,
		m->mb_s, m->iops, a, b);
}

static int write_out(FILE *in, FILE *o, const struct refit *x, const char *in_path)
{
	char ln[2048], date[32];
	time_t now = time(NULL);
	struct tm tm;
	int in_req = 0, skip = 0, in_pacer = 0;
	unsigned k = 0;

	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	rewind(in);
	while (fgets(ln, sizeof(ln), in)) {
		struct prof_line_point q;

		if (skip && !strncmp(ln, "    ", 4))
			continue; /* the old class block's lines */
		skip = 0;
		if (!strncmp(ln, "measured:", 9))
			fprintf(o, "# Refitted by dliofs profile --refit on %s (dliofs %s) from %s:\n"
				   "# the points are as measured, the model and its figures are this fit's.\n",
				date, DLIOFS_VERSION, in_path);
		if (!strncmp(ln, "  requests:", 11)) {
			in_req = 1;
			fputs(ln, o);
			continue;
		}
		if (in_req && !prof_parse_point(ln, &q)) {
			/* The points come in the order read_in counted them. */
			if (k < x->npt && x->have_model[k])
				point_line(o, ln, &x->model[k]);
			else
				fputs(ln, o);
			k++;
			continue;
		}
		if (ln[0] != ' ') {
			in_req = 0;
			in_pacer = !strncmp(ln, "pacer:", 6);
		}
		if (in_pacer && (!strcmp(ln, "  read:\n") || !strcmp(ln, "  write:\n"))) {
			int w = ln[2] == 'w';

			if (x->fitted[w]) {
				prof_write_class(o, &x->dev[w], x->note[w],
						 x->blockdev[0] ? x->blockdev : "the block device", w);
				skip = 1;
				continue;
			}
		}
		fputs(ln, o);
	}
	return ferror(o) ? -EIO : 0;
}

/* Latency tables are named relative to the profile: OUT must be beside
 * PROFILE for its meta: lines to find them. */
static int same_dir(const char *a_abs, const char *out)
{
	char b[PATH_MAX], da[PATH_MAX], db[PATH_MAX], rb[PATH_MAX];

	snprintf(b, sizeof(b), "%s", out);
	snprintf(da, sizeof(da), "%s", a_abs);
	if (!realpath(dirname(b), rb))
		return -errno;
	snprintf(db, sizeof(db), "%s", rb);
	return strcmp(dirname(da), db) ? -EXDEV : 0;
}

int prof_refit(const char *in_path, const char *out, FILE *o)
{
	char abs[PATH_MAX], tmp[PATH_MAX + 16];
	struct refit *x = calloc(1, sizeof(*x));
	FILE *in = NULL, *f = NULL;
	int ret;

	if (!x)
		return -ENOMEM;
	if (!realpath(in_path, abs)) {
		ret = -errno;
		fprintf(stderr, "dliofs profile --refit: %s: %s\n", in_path, strerror(errno));
		goto out;
	}
	ret = same_dir(abs, out);
	if (ret) {
		fprintf(stderr, "dliofs profile --refit: -o %s: %s\n", out,
			ret == -EXDEV ? "must be in the directory of the profile (its latency "
					"tables are named relative to it)"
				      : strerror(-ret));
		goto out;
	}
	in = fopen(abs, "r");
	if (!in) {
		ret = -errno;
		fprintf(stderr, "dliofs profile --refit: %s: %s\n", abs, strerror(errno));
		goto out;
	}
	ret = read_in(in, x);
	if (ret) {
		fprintf(stderr, "dliofs profile --refit: %s: %s\n", abs,
			ret == -ENOENT ? "no measured point (measured.requests, written by dliofs "
					 "profile)"
				       : "more measured points than a profile holds");
		goto out;
	}
	for (int w = 0; w < 2 && !ret; w++)
		ret = fit_class(x, w);
	if (ret)
		goto out;
	/* Written aside and renamed: OUT may be PROFILE itself. */
	snprintf(tmp, sizeof(tmp), "%s.tmp%ld", out, (long)getpid());
	f = fopen(tmp, "w");
	if (!f) {
		ret = -errno;
		fprintf(stderr, "dliofs profile --refit: %s: %s\n", tmp, strerror(errno));
		goto out;
	}
	ret = write_out(in, f, x, abs);
	if (fclose(f) && !ret)
		ret = -errno;
	f = NULL;
	if (!ret && rename(tmp, out))
		ret = -errno;
	if (ret) {
		fprintf(stderr, "dliofs profile --refit: %s: %s\n", out, strerror(-ret));
		unlink(tmp);
		goto out;
	}
	for (int w = 0; w < 2; w++)
		if (x->fitted[w])
			fprintf(o, "%s model: %s\n", w ? "write" : "read", x->note[w]);
	fprintf(o, "wrote %s\n", out);
	ret = prof_check(out, o);
out:
	if (in)
		fclose(in);
	free(x);
	return ret;
}
