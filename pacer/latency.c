/* Per-request latency distributions: parsing, printing and seeded draws.
 * A draw is a pure function of (model, key, counter), so a run with the
 * same seed and the same request order reproduces every latency. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dliofs/prng.h"
#include "dliofs/units.h"
#include "pacer_i.h"

/* z such that P(Z < z) = 0.99 for a standard normal Z. */
#define Z99 2.3263478740408408
/* Bytes of an empirical latency file read at most, and of one line. */
#define EMPIRICAL_MAX_BYTES (64LL << 20)
#define EMPIRICAL_MAX_LINE 4096

void pacer_fmt_time(uint64_t ns, char *buf, size_t len)
{
	static const struct {
		const char *sym;
		uint64_t mult;
	} u[] = {{"s", 1000000000ULL}, {"ms", 1000000ULL}, {"us", 1000ULL}, {"ns", 1}};

	for (unsigned i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		if (ns % u[i].mult == 0 && (ns || u[i].mult == 1)) {
			snprintf(buf, len, "%llu%s", (unsigned long long)(ns / u[i].mult),
				 u[i].sym);
			return;
		}
	}
}

static uint64_t to_ns(double x)
{
	if (!(x > 0))
		return 0;
	if (x >= 18446744073709549568.0)
		return UINT64_MAX;
	return (uint64_t)(x + 0.5);
}

/* ---- the distributions ---- */

static uint64_t draw_none(const struct dl_lat_model *m, uint64_t key, uint64_t i)
{
	(void)m, (void)key, (void)i;
	return 0;
}

static uint64_t draw_const(const struct dl_lat_model *m, uint64_t key, uint64_t i)
{
	(void)key, (void)i;
	return m->a_ns;
}

static uint64_t draw_uniform(const struct dl_lat_model *m, uint64_t key, uint64_t i)
{
	uint64_t span = m->b_ns - m->a_ns;

	if (span == UINT64_MAX)
		return dl_prng_word(key, i);
	return m->a_ns + dl_prng_below(key, i, span + 1);
}

static uint64_t draw_normal(const struct dl_lat_model *m, uint64_t key, uint64_t i)
{
	return to_ns((double)m->a_ns + (double)m->b_ns * dl_prng_normal(key, i));
}

static uint64_t draw_lognormal(const struct dl_lat_model *m, uint64_t key, uint64_t i)
{
	/* median a, p99 b: mu = ln a, sigma = ln(b / a) / z99. */
	double sigma = log((double)m->b_ns / (double)m->a_ns) / Z99;

	return to_ns((double)m->a_ns * exp(sigma * dl_prng_normal(key, i)));
}

static uint64_t draw_exp(const struct dl_lat_model *m, uint64_t key, uint64_t i)
{
	return to_ns(-(double)m->a_ns * log1p(-dl_prng_unit(key, i)));
}

/* ---- quantiles: the value at probability u in [0, 1) ---- */

/* The standard normal quantile (Acklam's rational approximation, relative
 * error < 1.2e-9 over (0, 1)), for the normal and lognormal quantiles. */
static double probit(double u)
{
	static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
				   -2.759285104469687e+02, 1.383577518672690e+02,
				   -3.066479806614716e+01, 2.506628277459239e+00};
	static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
				   -1.556989798598866e+02, 6.680131188771972e+01,
				   -1.328068155288572e+01};
	static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
				   -2.400758277161838e+00, -2.549732539343734e+00,
				   4.374664141464968e+00,  2.938163982698783e+00};
	static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
				   2.445134137142996e+00, 3.754408661907416e+00};
	double q, r;

	if (u <= 0)
		u = 1e-300;
	if (u >= 1)
		u = 1 - 1e-16;
	if (u < 0.02425) {
		q = sqrt(-2 * log(u));
		return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		       ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	}
	if (u > 1 - 0.02425) {
		q = sqrt(-2 * log1p(-u));
		return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		       ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	}
	q = u - 0.5;
	r = q * q;
	return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
	       (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

static uint64_t q_none(const struct dl_lat_model *m, double u)
{
	(void)m, (void)u;
	return 0;
}

static uint64_t q_const(const struct dl_lat_model *m, double u)
{
	(void)u;
	return m->a_ns;
}

static uint64_t q_uniform(const struct dl_lat_model *m, double u)
{
	return to_ns((double)m->a_ns + u * ((double)m->b_ns - (double)m->a_ns));
}

static uint64_t q_normal(const struct dl_lat_model *m, double u)
{
	return to_ns((double)m->a_ns + (double)m->b_ns * probit(u));
}

static uint64_t q_lognormal(const struct dl_lat_model *m, double u)
{
	double sigma = log((double)m->b_ns / (double)m->a_ns) / Z99;

	return to_ns((double)m->a_ns * exp(sigma * probit(u)));
}

static uint64_t q_exp(const struct dl_lat_model *m, double u)
{
	return to_ns(-(double)m->a_ns * log1p(-u));
}

static uint64_t q_empirical(const struct dl_lat_model *m, double u)
{
	uint64_t lo = 0, hi;

	if (!m->n)
		return 0;
	hi = m->n - 1;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (m->cdf[mid] > u)
			hi = mid;
		else
			lo = mid + 1;
	}
	return m->values_ns[lo];
}

static uint64_t draw_empirical(const struct dl_lat_model *m, uint64_t key, uint64_t i)
{
	/* The smallest point whose cumulative probability exceeds u: each
	 * measured value comes back with its own frequency. */
	return q_empirical(m, dl_prng_unit(key, i));
}

static const char *check_uniform(const struct dl_lat_model *m)
{
	return m->b_ns < m->a_ns ? "uniform(min, max) needs max >= min" : NULL;
}

static const char *check_lognormal(const struct dl_lat_model *m)
{
	if (!m->a_ns)
		return "lognormal(median, p99) needs a median above 0";
	return m->b_ns < m->a_ns ? "lognormal(median, p99) needs p99 >= median" : NULL;
}

static const char *check_empirical(const struct dl_lat_model *m)
{
	return !m->n || !m->values_ns || !m->cdf ? "empirical latency table is empty" : NULL;
}

/* One distribution: how it is written, its arguments (times, or a file),
 * its seeded draw and what makes it unusable. Adding a distribution is a
 * value of enum dl_lat_kind (pacer.h) and a row here: parsing, the dump,
 * the help, the YAML mapping form ({dist: NAME, ARG: ...}) and the
 * messages all come from this table. */
static const struct lat_dist {
	enum dl_lat_kind kind;
	const char *name;
	const char *alias;		/* a second spelling, or NULL */
	unsigned nargs;
	const char *args[2];		/* their names (the YAML mapping's keys) */
	int file;			/* the argument is a file of measured values */
	uint64_t (*draw)(const struct dl_lat_model *m, uint64_t key, uint64_t i);
	uint64_t (*quantile)(const struct dl_lat_model *m, double u);
	const char *(*check)(const struct dl_lat_model *m);	/* NULL: always usable */
} dists[] = {
	{DL_LAT_NONE, "none", NULL, 0, {NULL, NULL}, 0, draw_none, q_none, NULL},
	{DL_LAT_CONST, "constant", "const", 1, {"value", NULL}, 0, draw_const, q_const, NULL},
	{DL_LAT_UNIFORM, "uniform", NULL, 2, {"min", "max"}, 0, draw_uniform, q_uniform,
	 check_uniform},
	{DL_LAT_NORMAL, "normal", NULL, 2, {"mean", "stdev"}, 0, draw_normal, q_normal, NULL},
	{DL_LAT_LOGNORMAL, "lognormal", NULL, 2, {"median", "p99"}, 0, draw_lognormal,
	 q_lognormal, check_lognormal},
	{DL_LAT_EXP, "exponential", "exp", 1, {"mean", NULL}, 0, draw_exp, q_exp, NULL},
	{DL_LAT_EMPIRICAL, "empirical", NULL, 1, {"file", NULL}, 1, draw_empirical,
	 q_empirical, check_empirical},
};

#define NDISTS (sizeof(dists) / sizeof(dists[0]))

static const struct lat_dist *dist_of(enum dl_lat_kind k)
{
	for (unsigned i = 0; i < NDISTS; i++)
		if (dists[i].kind == k)
			return &dists[i];
	return &dists[0];
}

static const struct lat_dist *dist_named(const char *name)
{
	for (unsigned i = 0; i < NDISTS; i++)
		if (!strcmp(name, dists[i].name) || (dists[i].alias && !strcmp(name, dists[i].alias)))
			return &dists[i];
	return NULL;
}

/* "uniform(min, max)"; "FILE" for a file argument. */
static size_t put_form(const struct lat_dist *d, char *buf, size_t len)
{
	if (!d->nargs)
		return (size_t)snprintf(buf, len, "%s", d->name);
	if (d->file)
		return (size_t)snprintf(buf, len, "%s(FILE)", d->name);
	return (size_t)snprintf(buf, len, "%s(%s%s%s)", d->name, d->args[0], d->nargs > 1 ? ", " : "",
				d->nargs > 1 ? d->args[1] : "");
}

void dl_lat_forms(char *buf, size_t len)
{
	size_t o = (size_t)snprintf(buf, len, "a time (200us)");

	for (unsigned i = 1; i < NDISTS && o < len; i++) {
		o += (size_t)snprintf(buf + o, len - o, ", ");
		if (o < len)
			o += put_form(&dists[i], buf + o, len - o);
	}
	if (o < len)
		snprintf(buf + o, len - o, " or none");
}

int dl_lat_dist_arg(const char *dist, const char *arg, char *why, size_t whylen)
{
	const struct lat_dist *d = dist_named(dist);
	char forms[512];

	if (!d) {
		dl_lat_forms(forms, sizeof(forms));
		snprintf(why, whylen, "unknown distribution \"%s\": expected %s", dist, forms);
		return -ENOENT;
	}
	for (unsigned k = 0; k < d->nargs; k++)
		if (!strcmp(arg, d->args[k]))
			return (int)k;
	put_form(d, forms, sizeof(forms));
	snprintf(why, whylen, "%s takes no parameter '%s' (it is %s)", d->name, arg, forms);
	return -EINVAL;
}

/* The message of a latency that cannot be parsed. */
static void expected(char *why, size_t whylen, const char *pre, const char *post)
{
	char forms[512];

	dl_lat_forms(forms, sizeof(forms));
	snprintf(why, whylen, "%sexpected a latency: %s%s", pre, forms, post);
}

uint64_t pacer_lat_sample(const struct dl_lat_model *m, uint64_t key, uint64_t i)
{
	return dist_of(m->kind)->draw(m, key, i);
}

uint64_t pacer_lat_quantile(const struct dl_lat_model *m, double u)
{
	return dist_of(m->kind)->quantile(m, u);
}

void pacer_lat_free(struct dl_lat_model *m)
{
	free(m->values_ns);
	free(m->cdf);
	m->values_ns = NULL;
	m->cdf = NULL;
	m->n = 0;
}

int pacer_lat_copy(struct dl_lat_model *dst, const struct dl_lat_model *src)
{
	struct dl_lat_model t = *src;

	t.values_ns = NULL;
	t.cdf = NULL;
	if (src->kind == DL_LAT_EMPIRICAL && src->n) {
		t.values_ns = malloc(src->n * sizeof(*t.values_ns));
		t.cdf = malloc(src->n * sizeof(*t.cdf));
		if (!t.values_ns || !t.cdf) {
			free(t.values_ns);
			free(t.cdf);
			return -ENOMEM;
		}
		memcpy(t.values_ns, src->values_ns, src->n * sizeof(*t.values_ns));
		memcpy(t.cdf, src->cdf, src->n * sizeof(*t.cdf));
	} else {
		t.n = 0;
	}
	*dst = t;
	return 0;
}

int pacer_lat_equal(const struct dl_lat_model *a, const struct dl_lat_model *b)
{
	const struct lat_dist *d = dist_of(a->kind);

	if (a->kind != b->kind)
		return 0;
	if (d->file)
		return a->n == b->n && !strcmp(a->source, b->source);
	return (d->nargs < 1 || a->a_ns == b->a_ns) && (d->nargs < 2 || a->b_ns == b->b_ns);
}

int pacer_lat_check(const struct dl_lat_model *m, char *why, size_t whylen)
{
	const struct lat_dist *d = dist_of(m->kind);
	const char *w = d->check ? d->check(m) : NULL;
	char a[32], b[32];
	uint64_t p99;

	if (w) {
		snprintf(why, whylen, "%s", w);
		return -EINVAL;
	}
	p99 = m->kind == DL_LAT_NONE ? 0 : pacer_lat_quantile(m, 0.99);
	if (p99 > DL_PACER_MAX_WAIT_NS) {
		pacer_fmt_time(p99, a, sizeof(a));
		pacer_fmt_time(DL_PACER_MAX_WAIT_NS, b, sizeof(b));
		if (m->kind == DL_LAT_CONST)
			snprintf(why, whylen, "%s is above %s, the longest one request may wait",
				 a, b);
		else
			snprintf(why, whylen,
				 "its 99th percentile (%s) is above %s, the longest one request "
				 "may wait (draws are capped there)",
				 a, b);
		return -EINVAL;
	}
	return 0;
}

void pacer_lat_format(const struct dl_lat_model *m, char *buf, size_t len)
{
	const struct lat_dist *d = dist_of(m->kind);
	char a[32], b[32];

	pacer_fmt_time(m->a_ns, a, sizeof(a));
	pacer_fmt_time(m->b_ns, b, sizeof(b));
	if (!d->nargs)
		snprintf(buf, len, "%s", d->name);
	else if (d->file)
		snprintf(buf, len, "%s(%s)", d->name, m->source);
	else if (d->kind == DL_LAT_CONST)
		snprintf(buf, len, "%s", a);	/* a bare time reads back as constant */
	else if (d->nargs == 1)
		snprintf(buf, len, "%s(%s)", d->name, a);
	else
		snprintf(buf, len, "%s(%s, %s)", d->name, a, b);
}

/* ---- empirical tables ---- */

struct point {
	uint64_t v;
	double w;
};

static int cmp_point(const void *a, const void *b)
{
	const struct point *x = a, *y = b;

	return x->v < y->v ? -1 : x->v > y->v;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* One value: "153us", "153 us", or a bare number in the file's `unit`. */
static int parse_value(const char *tok, const char *unit, uint64_t *ns, const char **why)
{
	char tmp[96];

	if (dl_parse_time(tok, ns, why) == 0)
		return 0;
	if (!unit[0])
		return -EINVAL;
	if (snprintf(tmp, sizeof(tmp), "%s%s", tok, unit) >= (int)sizeof(tmp))
		return -EINVAL;
	return dl_parse_time(tmp, ns, why);
}

static int parse_line(char *s, const char *unit, struct point *pt, const char **why)
{
	char *tok[4], *save = NULL, *t, val[96], *end;
	unsigned n = 0;

	for (t = strtok_r(s, " \t,;", &save); t; t = strtok_r(NULL, " \t,;", &save)) {
		if (n == 4) {
			*why = "too many fields (expected VALUE [WEIGHT])";
			return -EINVAL;
		}
		tok[n++] = t;
	}
	/* "153 us 4": the unit may stand apart from its number. */
	if (n >= 2 && (isalpha((unsigned char)tok[1][0]) || (unsigned char)tok[1][0] == 0xc2)) {
		snprintf(val, sizeof(val), "%s%s", tok[0], tok[1]);
		tok[1] = tok[2];
		n--;
	} else {
		snprintf(val, sizeof(val), "%s", tok[0]);
	}
	if (n > 2) {
		*why = "too many fields (expected VALUE [WEIGHT])";
		return -EINVAL;
	}
	if (parse_value(val, unit, &pt->v, why))
		return -EINVAL;
	pt->w = 1;
	if (n == 2) {
		errno = 0;
		pt->w = strtod(tok[1], &end);
		if (errno || *end || !isfinite(pt->w) || pt->w < 0) {
			*why = "weight must be a number >= 0";
			return -EINVAL;
		}
	}
	return 0;
}

static int load_empirical(const char *path, struct dl_lat_model *m, char *why, size_t whylen)
{
	FILE *f = NULL;
	char *line = NULL, unit[16] = "", *s;
	size_t n = 0, alloc = 0, lineno = 0, i, j;
	struct point *pts = NULL, *np;
	double total = 0, cum = 0;
	const char *w = NULL;
	int ret = -EINVAL, fd;
	char resolved[PATH_MAX];
	struct stat st;

	if (strlen(path) >= sizeof(m->source)) {
		snprintf(why, whylen, "path too long (at most %zu bytes)", sizeof(m->source) - 1);
		return -EINVAL;
	}
	/* The name comes from a config or a live `set`: never wait on a FIFO
	 * or a device (O_NONBLOCK), read only a regular file, and only so much
	 * of it (/proc files say size 0 and may not end). */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, whylen, "cannot open %s: %s", path, strerror(errno));
		return -EINVAL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > EMPIRICAL_MAX_BYTES) {
		snprintf(why, whylen, "%s: %s", path,
			 !S_ISREG(st.st_mode) ? "not a regular file" :
						"larger than 64 MiB; a latency table is a few kB");
		close(fd);
		return -EINVAL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		close(fd);
		return -EINVAL;
	}
	line = malloc(EMPIRICAL_MAX_LINE);
	if (!line) {
		ret = -ENOMEM;
		snprintf(why, whylen, "%s: out of memory", path);
		goto out;
	}
	while (fgets(line, EMPIRICAL_MAX_LINE, f)) {
		lineno++;
		if (ftello(f) > EMPIRICAL_MAX_BYTES) {
			snprintf(why, whylen, "%s: larger than 64 MiB; a latency table is a few kB",
				 path);
			goto out;
		}
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(why, whylen, "%s:%zu: line longer than %d bytes", path, lineno,
				 EMPIRICAL_MAX_LINE - 2);
			goto out;
		}
		if ((s = strchr(line, '#')))
			*s = '\0';
		s = trim(line);
		if (!*s)
			continue;
		if (!strncmp(s, "unit", 4) && (isspace((unsigned char)s[4]) || s[4] == ':')) {
			char probe[32];
			uint64_t one;

			s = trim(s + 5);
			snprintf(probe, sizeof(probe), "1%s", s);
			if (!*s || strlen(s) >= sizeof(unit) || dl_parse_time(probe, &one, &w)) {
				snprintf(why, whylen, "%s:%zu: unit: %s", path, lineno,
					 w ? w : "expected a time unit (ns, us, ms, s)");
				goto out;
			}
			snprintf(unit, sizeof(unit), "%s", s);
			continue;
		}
		if (n == alloc) {
			if (alloc >= PACER_MAX_EMPIRICAL_POINTS) {
				snprintf(why, whylen, "%s: more than %u values", path,
					 PACER_MAX_EMPIRICAL_POINTS);
				goto out;
			}
			alloc = alloc ? 2 * alloc : 1024;
			np = realloc(pts, alloc * sizeof(*pts));
			if (!np) {
				ret = -ENOMEM;
				snprintf(why, whylen, "%s: out of memory", path);
				goto out;
			}
			pts = np;
		}
		w = NULL;
		if (parse_line(s, unit, &pts[n], &w)) {
			snprintf(why, whylen,
				 "%s:%zu: %s (a line is a time with its unit, e.g. 153us, "
				 "optionally followed by a weight)",
				 path, lineno, w ? w : "bad value");
			goto out;
		}
		total += pts[n].w;
		n++;
	}
	if (ferror(f)) {
		snprintf(why, whylen, "%s: read error", path);
		goto out;
	}
	if (!n || !(total > 0)) {
		snprintf(why, whylen, "%s: no latency values (or all weights 0)", path);
		goto out;
	}
	qsort(pts, n, sizeof(*pts), cmp_point);
	/* Merge equal values, drop zero weights. */
	for (i = 0, j = 0; i < n; i++) {
		if (pts[i].w == 0)
			continue;
		if (j && pts[j - 1].v == pts[i].v)
			pts[j - 1].w += pts[i].w;
		else
			pts[j++] = pts[i];
	}
	n = j;
	m->values_ns = malloc(n * sizeof(*m->values_ns));
	m->cdf = malloc(n * sizeof(*m->cdf));
	if (!m->values_ns || !m->cdf) {
		pacer_lat_free(m);
		ret = -ENOMEM;
		snprintf(why, whylen, "%s: out of memory", path);
		goto out;
	}
	for (i = 0; i < n; i++) {
		cum += pts[i].w;
		m->values_ns[i] = pts[i].v;
		m->cdf[i] = cum / total;
	}
	m->cdf[n - 1] = 1.0;
	m->n = (unsigned)n;
	m->kind = DL_LAT_EMPIRICAL;
	/* Absolute, so the dump still names the file after a chdir. */
	if (realpath(path, resolved) && strlen(resolved) < sizeof(m->source))
		snprintf(m->source, sizeof(m->source), "%s", resolved);
	else
		snprintf(m->source, sizeof(m->source), "%s", path);
	ret = 0;
out:
	free(pts);
	free(line);
	fclose(f);
	return ret;
}

/* Split "name(x, y)" into name and up to two trimmed arguments. */
static int split_call(char *s, char **name, char **args, unsigned *nargs, int whole_arg)
{
	char *open = strchr(s, '('), *close = s + strlen(s) - 1, *comma;

	if (!open || *close != ')')
		return -EINVAL;
	*close = '\0';
	*open = '\0';
	*name = trim(s);
	args[0] = trim(open + 1);
	*nargs = 1;
	if (!whole_arg && (comma = strchr(args[0], ','))) {
		*comma = '\0';
		args[1] = trim(comma + 1);
		args[0] = trim(args[0]);
		*nargs = 2;
		if (strchr(args[1], ','))
			return -EINVAL;
	}
	return 0;
}

int pacer_lat_parse(const char *str, struct dl_lat_model *out, char *why, size_t whylen)
{
	const struct lat_dist *d;
	struct dl_lat_model m;
	char buf[512], *s, *name, *args[2];
	const char *w = NULL;
	uint64_t v[2] = {0, 0};
	unsigned nargs;
	int ret;

	memset(&m, 0, sizeof(m));
	if (!str || strlen(str) >= sizeof(buf)) {
		expected(why, whylen, "", "");
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", str);
	s = trim(buf);
	if (!strcmp(s, "none") || !strcmp(s, "0")) {
		*out = m;
		return 0;
	}
	if (!strchr(s, '(')) {
		char tail[96];

		if (dl_parse_time(s, &v[0], &w)) {
			snprintf(tail, sizeof(tail), " (%s)", w ? w : "bad time");
			expected(why, whylen, "", tail);
			return -EINVAL;
		}
		m.kind = v[0] ? DL_LAT_CONST : DL_LAT_NONE;
		m.a_ns = v[0];
		*out = m;
		return 0;
	}
	ret = split_call(s, &name, args, &nargs, !strncmp(s, "empirical", 9));
	if (ret) {
		expected(why, whylen, "", "");
		return ret;
	}
	d = dist_named(name);
	if (!d || !d->nargs) {
		char pre[96];

		snprintf(pre, sizeof(pre), "unknown distribution \"%.40s\": ", name);
		expected(why, whylen, pre, "");
		return -EINVAL;
	}
	if (d->file) {
		if (!args[0][0]) {
			snprintf(why, whylen, "%s(FILE) needs a file name", d->name);
			return -EINVAL;
		}
		ret = load_empirical(args[0], &m, why, whylen);
		if (ret)
			return ret;
		m.kind = d->kind;
		*out = m;
		return 0;
	}
	if (nargs != d->nargs) {
		char pre[96];

		snprintf(pre, sizeof(pre), "%s() takes %u argument%s: ", name, d->nargs,
			 d->nargs > 1 ? "s" : "");
		expected(why, whylen, pre, "");
		return -EINVAL;
	}
	for (unsigned k = 0; k < nargs; k++) {
		if (dl_parse_time(args[k], &v[k], &w)) {
			snprintf(why, whylen, "%s(): \"%s\": %s (a time with its unit, e.g. 150us)",
				 name, args[k], w ? w : "bad time");
			return -EINVAL;
		}
	}
	m.kind = d->kind;
	m.a_ns = v[0];
	m.b_ns = v[1];
	ret = pacer_lat_check(&m, why, whylen);
	if (ret)
		return ret;
	*out = m;
	return 0;
}
