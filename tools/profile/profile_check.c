/* `dliofs profile --check PROFILE`: replay every point a profile measured
 * on the model it holds, in virtual time (pacer/sim.c), and print measured
 * against model. A profile's model: lines say the same at the time it was
 * fitted; this says it for the profile as it is now (edited by hand, a
 * what-if applied with --set, or written by an older dliofs). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/config.h"
#include "dliofs/units.h"
#include "profile_i.h"

/* The value of `key: ` in a flow mapping line, up to the next ", " or "}". */
static int field(const char *ln, const char *key, char *out, size_t len)
{
	char pat[40];
	const char *p, *e;

	snprintf(pat, sizeof(pat), "%s: ", key);
	p = strstr(ln, pat);
	/* a whole key: after "{" or ", " */
	while (p && p > ln && p[-1] != '{' && p[-1] != ' ')
		p = strstr(p + 1, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	e = p + strcspn(p, ",}");
	snprintf(out, len, "%.*s", (int)(e - p), p);
	return 0;
}

/* A latency field that older profiles lack: 0 then. */
static int opt_time(const char *line, const char *key, uint64_t *v)
{
	char s[64];
	const char *w = NULL;

	*v = 0;
	if (field(line, key, s, sizeof(s)))
		return 0;
	return dl_parse_time(s, v, &w) ? -1 : 0;
}

int prof_parse_point(const char *ln, struct prof_line_point *q)
{
	char v[64];
	const char *w = NULL;
	const char *model = strstr(ln, ", model: ");
	char line[1024];

	if (strncmp(ln, "    - {", 7))
		return -1;
	/* What was measured only: the model's figures come after. */
	snprintf(line, sizeof(line), "%.*s", model ? (int)(model - ln) : (int)strlen(ln), ln);
	memset(q, 0, sizeof(*q));
	if (field(line, "op", v, sizeof(v)))
		return -1;
	q->write = !strcmp(v, "write");
	if (field(line, "size", q->size_s, sizeof(q->size_s)) ||
	    dl_parse_size(q->size_s, &q->size, &w) || !q->size)
		return -1;
	if (field(line, "clients", v, sizeof(v)) || !(q->clients = (unsigned)atoi(v)))
		return -1;
	if (field(line, "time", v, sizeof(v)) || dl_parse_time(v, &q->time_ns, &w))
		return -1;
	if (field(line, "MBps", v, sizeof(v)))
		return -1;
	q->mb_s = atof(v);
	if (field(line, "iops", v, sizeof(v)))
		return -1;
	q->iops = atof(v);
	if (field(line, "p50", v, sizeof(v)) || dl_parse_time(v, &q->p50, &w))
		return -1;
	if (field(line, "p99", v, sizeof(v)) || dl_parse_time(v, &q->p99, &w))
		return -1;
	if (opt_time(line, "p10", &q->p10) || opt_time(line, "p90", &q->p90))
		return -1;
	q->too_fast = strstr(line, "left_out: too_fast") != NULL;
	return strstr(line, "error: ") ? -1 : 0;
}

void prof_line_to_fit(const struct prof_line_point *q, struct dl_fit_point *p)
{
	memset(p, 0, sizeof(*p));
	p->size = q->size;
	p->clients = q->clients;
	p->time_ns = q->time_ns;
	/* The measurement's warm-up, as prof_run counts it. */
	p->warm_ns = q->time_ns / 20 < 100000000ULL ? q->time_ns / 20 : 100000000ULL;
	p->mb_s = q->mb_s;
	p->iops = q->iops;
	p->p10_ns = q->p10;
	p->p50_ns = q->p50;
	p->p90_ns = q->p90;
	p->p99_ns = q->p99;
}

static double ratio(double m, double x) { return x > 0 ? m / x : 0; }

int prof_check(const char *path, FILE *o)
{
	char abs[PATH_MAX], cfgtext[PATH_MAX + 256], ln[2048];
	struct dl_config *cfg = NULL;
	unsigned n = 0, good = 0;
	FILE *f;
	int ret, in_req = 0;

	if (!realpath(path, abs)) {
		fprintf(stderr, "dliofs profile --check: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	/* The profile as a mount would take it. */
	snprintf(cfgtext, sizeof(cfgtext),
		 "datasets: [{name: d, format: raw, files: 1, sample_size: 1MiB}]\n"
		 "pacer: {profile: \"%s\"}\n",
		 abs);
	ret = dl_config_load_buf(abs, cfgtext, strlen(cfgtext), stderr, &cfg);
	if (ret)
		return ret;
	f = fopen(abs, "r");
	if (!f) {
		ret = -errno;
		dl_config_free(cfg);
		return ret;
	}
	fprintf(o, "dliofs profile --check %s: each point measured, replayed on the model in "
		   "virtual time\n", abs);
	fprintf(o, "  %-5s %-7s %-7s | %9s %9s %9s | %9s %9s %9s | %6s %6s %6s\n", "op", "size",
		"clients", "MB/s", "p50", "p99", "model", "p50", "p99", "MB/s", "p50", "p99");
	while (fgets(ln, sizeof(ln), f)) {
		struct prof_line_point q;
		struct dl_fit_point s;
		double rb, r5, r9;
		int ok;

		if (!strncmp(ln, "  requests:", 11)) {
			in_req = 1;
			continue;
		}
		if (!in_req || prof_parse_point(ln, &q))
			continue;
		if (q.too_fast) {
			fprintf(o, "  %-5s %-7s %-7u | %9.1f MB/s: left out (faster than the device: "
				   "a cache's)\n",
				q.write ? "write" : "read", q.size_s, q.clients, q.mb_s);
			continue;
		}
		prof_line_to_fit(&q, &s);
		if (dl_pacer_sim_point(&cfg->pacer, q.write ? DL_OP_WRITE : DL_OP_READ, 0x70f11e, &s))
			continue;
		rb = ratio(s.mb_s, q.mb_s);
		r5 = ratio((double)s.p50_ns, (double)q.p50);
		r9 = ratio((double)s.p99_ns, (double)q.p99);
		ok = fabs(rb - 1) <= 0.10 && fabs(r5 - 1) <= 0.20 && fabs(r9 - 1) <= 0.20;
		n++;
		good += ok;
		fprintf(o,
			"  %-5s %-7s %-7u | %9.1f %8.0fus %8.2fms | %9.1f %8.0fus %8.2fms | %6.2f "
			"%6.2f %6.2f%s\n",
			q.write ? "write" : "read", q.size_s, q.clients, q.mb_s, (double)q.p50 / 1e3,
			(double)q.p99 / 1e6, s.mb_s, (double)s.p50_ns / 1e3, (double)s.p99_ns / 1e6,
			rb, r5, r9, ok ? "" : "  *");
	}
	fclose(f);
	dl_config_free(cfg);
	if (!n) {
		fprintf(stderr, "dliofs profile --check: %s has no measured point with its time "
				"(measured.requests, written by dliofs profile)\n",
			abs);
		return -EINVAL;
	}
	fprintf(o, "  %u of %u points within the goals (MB/s within 10%%, p50 and p99 within "
		   "20%%; * marks the others)\n",
		good, n);
	return 0;
}
