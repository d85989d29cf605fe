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

#define LAT_EXPECTED                                                                               \
	"expected a latency: a time (200us), constant(t), uniform(min, max), normal(mean, "        \
	"stdev), "                                                                                 \
	"lognormal(median, p99), exponential(mean), empirical(FILE) or none"

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

uint64_t pacer_lat_sample(const struct dl_lat_model *m, uint64_t key, uint64_t i)
{
	uint64_t span, lo, hi;
	double u, sigma;

	switch (m->kind) {
	case DL_LAT_NONE:
		return 0;
	case DL_LAT_CONST:
		return m->a_ns;
	case DL_LAT_UNIFORM:
		span = m->b_ns - m->a_ns;
		if (span == UINT64_MAX)
			return dl_prng_word(key, i);
		return m->a_ns + dl_prng_below(key, i, span + 1);
	case DL_LAT_NORMAL:
		return to_ns((double)m->a_ns + (double)m->b_ns * dl_prng_normal(key, i));
	case DL_LAT_LOGNORMAL:
		/* median a, p99 b: mu = ln a, sigma = ln(b / a) / z99. */
		sigma = log((double)m->b_ns / (double)m->a_ns) / Z99;
		return to_ns((double)m->a_ns * exp(sigma * dl_prng_normal(key, i)));
	case DL_LAT_EXP:
		u = dl_prng_unit(key, i);
		return to_ns(-(double)m->a_ns * log1p(-u));
	case DL_LAT_EMPIRICAL:
		if (!m->n)
			return 0;
		/* The smallest point whose cumulative probability exceeds u:
		 * each measured value comes back with its own frequency. */
		u = dl_prng_unit(key, i);
		lo = 0;
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
	return 0;
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
	if (a->kind != b->kind)
		return 0;
	switch (a->kind) {
	case DL_LAT_NONE:
		return 1;
	case DL_LAT_CONST:
	case DL_LAT_EXP:
		return a->a_ns == b->a_ns;
	case DL_LAT_EMPIRICAL:
		return a->n == b->n && !strcmp(a->source, b->source);
	default:
		return a->a_ns == b->a_ns && a->b_ns == b->b_ns;
	}
}

int pacer_lat_check(const struct dl_lat_model *m, char *why, size_t whylen)
{
	switch (m->kind) {
	case DL_LAT_UNIFORM:
		if (m->b_ns < m->a_ns) {
			snprintf(why, whylen, "uniform(min, max) needs max >= min");
			return -EINVAL;
		}
		break;
	case DL_LAT_LOGNORMAL:
		if (!m->a_ns) {
			snprintf(why, whylen, "lognormal(median, p99) needs a median above 0");
			return -EINVAL;
		}
		if (m->b_ns < m->a_ns) {
			snprintf(why, whylen, "lognormal(median, p99) needs p99 >= median");
			return -EINVAL;
		}
		break;
	case DL_LAT_EMPIRICAL:
		if (!m->n || !m->values_ns || !m->cdf) {
			snprintf(why, whylen, "empirical latency table is empty");
			return -EINVAL;
		}
		break;
	default:
		break;
	}
	return 0;
}

void pacer_lat_format(const struct dl_lat_model *m, char *buf, size_t len)
{
	char a[32], b[32];

	pacer_fmt_time(m->a_ns, a, sizeof(a));
	pacer_fmt_time(m->b_ns, b, sizeof(b));
	switch (m->kind) {
	case DL_LAT_NONE:
		snprintf(buf, len, "none");
		break;
	case DL_LAT_CONST:
		snprintf(buf, len, "%s", a);
		break;
	case DL_LAT_UNIFORM:
		snprintf(buf, len, "uniform(%s, %s)", a, b);
		break;
	case DL_LAT_NORMAL:
		snprintf(buf, len, "normal(%s, %s)", a, b);
		break;
	case DL_LAT_LOGNORMAL:
		snprintf(buf, len, "lognormal(%s, %s)", a, b);
		break;
	case DL_LAT_EXP:
		snprintf(buf, len, "exponential(%s)", a);
		break;
	case DL_LAT_EMPIRICAL:
		snprintf(buf, len, "empirical(%s)", m->source);
		break;
	}
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
	static const struct {
		const char *name;
		enum dl_lat_kind kind;
		unsigned nargs;
	} fns[] = {
	    {"const", DL_LAT_CONST, 1},
	    {"constant", DL_LAT_CONST, 1},
	    {"uniform", DL_LAT_UNIFORM, 2},
	    {"normal", DL_LAT_NORMAL, 2},
	    {"lognormal", DL_LAT_LOGNORMAL, 2},
	    {"exponential", DL_LAT_EXP, 1},
	    {"exp", DL_LAT_EXP, 1},
	    {"empirical", DL_LAT_EMPIRICAL, 1},
	};
	struct dl_lat_model m;
	char buf[512], *s, *name, *args[2];
	const char *w = NULL;
	unsigned nargs, i;
	uint64_t v[2] = {0, 0};
	int ret;

	memset(&m, 0, sizeof(m));
	if (!str || strlen(str) >= sizeof(buf)) {
		snprintf(why, whylen, LAT_EXPECTED);
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", str);
	s = trim(buf);
	if (!strcmp(s, "none") || !strcmp(s, "0")) {
		*out = m;
		return 0;
	}
	if (!strchr(s, '(')) {
		if (dl_parse_time(s, &v[0], &w)) {
			snprintf(why, whylen, "%s (%s)", LAT_EXPECTED, w ? w : "bad time");
			return -EINVAL;
		}
		m.kind = v[0] ? DL_LAT_CONST : DL_LAT_NONE;
		m.a_ns = v[0];
		*out = m;
		return 0;
	}
	ret = split_call(s, &name, args, &nargs, !strncmp(s, "empirical", 9));
	if (ret) {
		snprintf(why, whylen, "%s", LAT_EXPECTED);
		return ret;
	}
	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (!strcmp(name, fns[i].name))
			break;
	if (i == sizeof(fns) / sizeof(fns[0])) {
		snprintf(why, whylen, "unknown distribution \"%s\": %s", name, LAT_EXPECTED);
		return -EINVAL;
	}
	if (fns[i].kind == DL_LAT_EMPIRICAL) {
		if (!args[0][0]) {
			snprintf(why, whylen, "empirical(FILE) needs a file name");
			return -EINVAL;
		}
		ret = load_empirical(args[0], &m, why, whylen);
		if (ret)
			return ret;
		*out = m;
		return 0;
	}
	if (nargs != fns[i].nargs) {
		snprintf(why, whylen, "%s() takes %u argument%s: %s", name, fns[i].nargs,
			 fns[i].nargs > 1 ? "s" : "", LAT_EXPECTED);
		return -EINVAL;
	}
	for (unsigned k = 0; k < nargs; k++) {
		if (dl_parse_time(args[k], &v[k], &w)) {
			snprintf(why, whylen, "%s(): \"%s\": %s (a time with its unit, e.g. 150us)",
				 name, args[k], w ? w : "bad time");
			return -EINVAL;
		}
	}
	m.kind = fns[i].kind;
	m.a_ns = v[0];
	m.b_ns = v[1];
	ret = pacer_lat_check(&m, why, whylen);
	if (ret)
		return ret;
	*out = m;
	return 0;
}
