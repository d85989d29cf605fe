/* Settings as the user writes them: --set KEY=V1,V2,... lists, --vary
 * KEY=LO..HI ranges, values formatted back for the pacer and for people,
 * and the target a search aims at. Every value is checked against the
 * pacer's own options table (dl_pacer_cfg_set) before anything runs, so a
 * typo fails at once with the pacer's message, not after an hour of runs. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dlio_whatif_i.h"
#include "dliofs/units.h"

/* The pacer says what a key takes (its options table). */
static enum wi_kind kind_of(const char *key)
{
	static const enum wi_kind of[] = {
	    [DL_PACER_K_RATE] = WI_K_RATE,
	    [DL_PACER_K_TIME] = WI_K_TIME,
	    [DL_PACER_K_SIZE] = WI_K_SIZE,
	    [DL_PACER_K_COUNT] = WI_K_COUNT,
	    [DL_PACER_K_OTHER] = WI_K_TEXT,
	};
	enum dl_pacer_kind k;

	return dl_pacer_key_kind(key, &k) ? WI_K_TEXT : of[k];
}

int wi_key_higher_is_better(const char *key) { return kind_of(key) != WI_K_TIME; }

void wi_key_label(const char *key, char *buf, size_t len)
{
	size_t i;

	for (i = 0; key[i] && i + 1 < len; i++)
		buf[i] = key[i] == '.' || key[i] == '_' ? ' ' : key[i];
	buf[i] = 0;
}

/* The value in base units, NAN when it is not a plain quantity (a
 * distribution, a policy) and INFINITY for "unlimited". */
static double numeric(enum wi_kind k, const char *v)
{
	uint64_t u;
	int ret = -EINVAL;

	if (!strcmp(v, "unlimited") || !strcmp(v, "none"))
		return k == WI_K_TEXT ? NAN : INFINITY;
	switch (k) {
	case WI_K_RATE:
		ret = dl_parse_rate(v, &u, NULL);
		break;
	case WI_K_TIME:
		ret = dl_parse_time(v, &u, NULL);
		break;
	case WI_K_SIZE:
		ret = dl_parse_size(v, &u, NULL);
		break;
	case WI_K_COUNT:
		ret = dl_parse_count(v, &u, NULL);
		break;
	case WI_K_TEXT:
		break;
	}
	return ret ? NAN : (double)u;
}

/* The pacer decides what a key takes: a scratch configuration is set. */
static int check_value(const char *what, const char *key, const char *val)
{
	struct dl_pacer_cfg cfg;
	char err[512];
	int ret;

	dl_pacer_cfg_init(&cfg);
	ret = dl_pacer_cfg_set(&cfg, key, val, err, sizeof(err));
	dl_pacer_cfg_free(&cfg);
	if (ret)
		fprintf(stderr, "dlio-whatif: %s %s=%s: %s\n", what, key, val, err);
	return ret;
}

static int add_value(const char *what, struct wi_axis *ax, const char *v, size_t n)
{
	while (n && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	if (!n) {
		fprintf(stderr, "dlio-whatif: %s %s: an empty value in the list\n", what, ax->key);
		return -EINVAL;
	}
	if (ax->nvals == WI_MAX_VALS || n >= WI_VAL) {
		fprintf(stderr, "dlio-whatif: %s %s: at most %d values of %d characters\n", what,
			ax->key, WI_MAX_VALS, WI_VAL - 1);
		return -EINVAL;
	}
	memcpy(ax->vals[ax->nvals], v, n);
	ax->vals[ax->nvals][n] = 0;
	if (check_value(what, ax->key, ax->vals[ax->nvals]))
		return -EINVAL;
	ax->num[ax->nvals] = numeric(ax->kind, ax->vals[ax->nvals]);
	ax->nvals++;
	return 0;
}

static int parse_range(const char *what, struct wi_axis *ax, const char *v, const char *dots)
{
	int ret = add_value(what, ax, v, (size_t)(dots - v));

	if (!ret)
		ret = add_value(what, ax, dots + 2, strlen(dots + 2));
	if (ret)
		return ret;
	ax->range = 1;
	if (ax->kind == WI_K_TEXT || !isfinite(ax->num[0]) || !isfinite(ax->num[1]) ||
	    ax->num[0] <= 0 || ax->num[1] <= 0) {
		fprintf(stderr,
			"dlio-whatif: %s %s=%s: a range needs two plain quantities above 0 "
			"(10MB/s..10GB/s, 100us..20ms, 1GiB..64GiB, 1..64)\n",
			what, ax->key, v);
		return -EINVAL;
	}
	if (ax->num[0] > ax->num[1]) {
		double t = ax->num[0];
		char s[WI_VAL];

		ax->num[0] = ax->num[1];
		ax->num[1] = t;
		memcpy(s, ax->vals[0], WI_VAL);
		memcpy(ax->vals[0], ax->vals[1], WI_VAL);
		memcpy(ax->vals[1], s, WI_VAL);
	}
	if (ax->num[1] / ax->num[0] < 1.01) {
		fprintf(stderr, "dlio-whatif: %s %s=%s: the range is empty\n", what, ax->key, v);
		return -EINVAL;
	}
	return 0;
}

int wi_axis_parse(const char *what, const char *arg, int allow_range, struct wi_axis *ax)
{
	const char *eq = strchr(arg, '='), *v, *dots, *start;
	int depth = 0;

	memset(ax, 0, sizeof(*ax));
	if (!eq || eq == arg || (size_t)(eq - arg) >= WI_KEY || !eq[1]) {
		fprintf(stderr, "dlio-whatif: %s '%s': expected KEY=VALUE[,VALUE...]%s\n", what,
			arg, allow_range ? " or KEY=LOW..HIGH" : "");
		return -EINVAL;
	}
	memcpy(ax->key, arg, (size_t)(eq - arg));
	ax->kind = kind_of(ax->key);
	v = eq + 1;
	dots = strstr(v, "..");
	if (dots) {
		if (!allow_range) {
			fprintf(stderr,
				"dlio-whatif: %s %s: a range (LOW..HIGH) is for search's "
				"--vary; give a list of values\n",
				what, ax->key);
			return -EINVAL;
		}
		return parse_range(what, ax, v, dots);
	}
	/* Commas inside parentheses belong to a distribution: lognormal(1ms,10ms). */
	start = v;
	for (const char *p = v;; p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')' && depth)
			depth--;
		if (*p == 0 || (*p == ',' && !depth)) {
			if (add_value(what, ax, start, (size_t)(p - start)))
				return -EINVAL;
			if (!*p)
				break;
			start = p + 1;
		}
	}
	return 0;
}

size_t wi_grid_points(const struct wi_grid *g)
{
	size_t n = 1;

	for (unsigned a = 0; a < g->nax; a++)
		n *= g->ax[a].range ? 1 : g->ax[a].nvals;
	return n;
}

void wi_grid_point(const struct wi_grid *g, size_t i, struct wi_kv *kv)
{
	for (unsigned a = g->nax; a-- > 0;) {
		const struct wi_axis *ax = &g->ax[a];
		size_t n = ax->range ? 1 : ax->nvals;

		snprintf(kv[a].key, sizeof(kv[a].key), "%s", ax->key);
		snprintf(kv[a].val, sizeof(kv[a].val), "%s", ax->vals[i % n]);
		i /= n;
	}
}

/* v rounded to 3 significant digits in the largest unit it fills, from a
 * table of (unit, multiplier) largest first; the smallest unit is whole. */
struct unit {
	const char *sym;
	double mult;
};

static void fmt_units(const struct unit *u, size_t n, double v, const char *sep, const char *tail,
		      char *buf, size_t len)
{
	size_t i;
	double x;

	if (!isfinite(v)) {
		snprintf(buf, len, "unlimited");
		return;
	}
	for (i = 0; i + 1 < n && v < u[i].mult; i++)
		;
	x = v / u[i].mult;
	if (i + 1 == n) {
		snprintf(buf, len, "%.0f%s%s%s", x, sep, u[i].sym, tail);
		return;
	}
	/* 999.7 MB/s rounds to 1.00 GB/s, not to "1e+03 MB/s". */
	if (x >= 999.5 && i > 0) {
		i--;
		x = v / u[i].mult;
	}
	snprintf(buf, len, "%.*f%s%s%s", x >= 100 ? 0 : x >= 10 ? 1 : 2, x, sep, u[i].sym, tail);
	/* Trailing zeros of the fraction say nothing ("2.50" -> "2.5"). */
	char *dot = strchr(buf, '.');
	if (dot) {
		char *e = dot + 1, *z;

		while (*e >= '0' && *e <= '9')
			e++;
		for (z = e; z[-1] == '0'; z--)
			;
		if (z[-1] == '.')
			z--;
		memmove(z, e, strlen(e) + 1);
	}
}

static const struct unit size_u[] = {{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}, {"B", 1}};
static const struct unit time_u[] = {{"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}};
static const struct unit count_u[] = {{"M", 1e6}, {"k", 1e3}, {"", 1}};

static void fmt(enum wi_kind k, double v, const char *sep, char *buf, size_t len)
{
	switch (k) {
	case WI_K_RATE:
		fmt_units(size_u, 5, v, sep, "/s", buf, len);
		break;
	case WI_K_TIME:
		fmt_units(time_u, 4, v, sep, "", buf, len);
		break;
	case WI_K_SIZE:
		fmt_units(size_u, 5, v, sep, "", buf, len);
		break;
	case WI_K_COUNT:
		if (v < 1000)
			snprintf(buf, len, "%.0f", v);
		else
			fmt_units(count_u, 3, v, "", "", buf, len);
		break;
	case WI_K_TEXT:
		snprintf(buf, len, "%g", v);
		break;
	}
}

void wi_value_fmt(enum wi_kind k, double v, char *buf, size_t len) { fmt(k, v, "", buf, len); }

void wi_value_label(enum wi_kind k, double v, char *buf, size_t len)
{
	fmt(k, v, k == WI_K_COUNT ? "" : " ", buf, len);
}

/* ---- targets ---- */

double wi_mlperf_au(const char *name)
{
	static const struct {
		const char *name;
		double au;
	} t[] = {{"unet3d", 0.90}, {"resnet50", 0.90}, {"cosmoflow", 0.70}};

	for (size_t i = 0; name && i < sizeof(t) / sizeof(t[0]); i++)
		if (!strncasecmp(name, t[i].name, strlen(t[i].name)) || strcasestr(name, t[i].name))
			return t[i].au;
	return NAN;
}

int wi_target_parse(const char *s, const char *workload, struct wi_target *t)
{
	const char *op = strstr(s, ">=");
	char name[32], *end;
	size_t n;

	memset(t, 0, sizeof(*t));
	snprintf(t->text, sizeof(t->text), "%s", s);
	t->ge = 1;
	if (!op) {
		op = strstr(s, "<=");
		t->ge = 0;
	}
	if (!op || op == s || (n = (size_t)(op - s)) >= sizeof(name)) {
		fprintf(stderr,
			"dlio-whatif: --target '%s': expected METRIC>=VALUE or METRIC<=VALUE "
			"(au>=0.90, au>=mlperf, wait_share<=0.10, samples_per_s>=500)\n",
			s);
		return -EINVAL;
	}
	memcpy(name, s, n);
	name[n] = 0;
	t->metric = wi_metric_find(name);
	if (t->metric < 0) {
		fprintf(stderr, "dlio-whatif: --target '%s': unknown metric '%s' (", s, name);
		for (int m = 0; m < WI_NM; m++)
			fprintf(stderr, "%s%s", m ? ", " : "", wi_metrics[m].name);
		fprintf(stderr, ")\n");
		return -EINVAL;
	}
	if (!strcmp(op + 2, "mlperf")) {
		if (t->metric != WI_M_AU || isnan(wi_mlperf_au(workload))) {
			fprintf(
			    stderr,
			    "dlio-whatif: --target '%s': MLPerf Storage's thresholds are AU's, for "
			    "unet3d and resnet50 (90%%) and cosmoflow (70%%); the workload here is "
			    "'%s' (say which with --workload)\n",
			    s, workload ? workload : "unknown");
			return -EINVAL;
		}
		t->value = wi_mlperf_au(workload);
		snprintf(t->text, sizeof(t->text), "au>=%.2f (MLPerf Storage, %s)", t->value,
			 workload);
		return 0;
	}
	t->value = strtod(op + 2, &end);
	if (end == op + 2 || (*end && strcmp(end, "%")) || !isfinite(t->value) || t->value < 0) {
		fprintf(stderr, "dlio-whatif: --target '%s': '%s' is not a number\n", s, op + 2);
		return -EINVAL;
	}
	/* A share is a fraction (au>=0.9) or a percentage (au>=90%), never
	 * guessed from the number: au>=1 is 100%, and au>=2 has no meaning. */
	if (wi_metrics[t->metric].form != WI_MF_SHARE) {
		if (*end == '%') {
			fprintf(stderr,
				"dlio-whatif: --target '%s': a percentage is for a share (au, "
				"wait_share); %s is not one\n",
				s, name);
			return -EINVAL;
		}
		return 0;
	}
	if (*end == '%') {
		if (t->value > 100) {
			fprintf(stderr,
				"dlio-whatif: --target '%s': a share is at most 100%%\n", s);
			return -EINVAL;
		}
		t->value /= 100;
	} else if (t->value > 1) {
		fprintf(stderr,
			"dlio-whatif: --target '%s': %s is a share: a fraction from 0 to 1 "
			"(%s%s%g) or a percentage (%s%s%g%%); %g is neither\n",
			s, name, name, t->ge ? ">=" : "<=", t->value / 100, name, t->ge ? ">=" : "<=",
			t->value, t->value);
		return -EINVAL;
	}
	return 0;
}

int wi_target_met(const struct wi_target *t, double v)
{
	if (isnan(v))
		return 0;
	return t->ge ? v >= t->value : v <= t->value;
}
