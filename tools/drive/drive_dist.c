/* Computation-time distributions, the ones DLIO's utility.sleep() knows
 * (constant, normal, uniform, gamma, exponential, poisson), drawn from the
 * counter-based generator so that draw i of a run is reproducible from the
 * seed alone and does not depend on which thread asked first. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/prng.h"
#include "dliofs/units.h"
#include "drive_i.h"

int drv_parse_seconds(const char *s, double *out, const char **why)
{
	char *end;
	uint64_t ns;
	double v;

	if (!s || !*s) {
		*why = "empty time";
		return -EINVAL;
	}
	/* A bare number is seconds, as in DLIO's YAML. */
	errno = 0;
	v = strtod(s, &end);
	if (end != s && !*end && !errno) {
		if (!isfinite(v) || v < 0) {
			*why = "a time must be finite and >= 0";
			return -EINVAL;
		}
		*out = v;
		return 0;
	}
	if (dl_parse_time(s, &ns, why))
		return -EINVAL;
	*out = (double)ns * 1e-9;
	return 0;
}

static const struct {
	const char *name;
	enum drv_dist_type type;
	unsigned nargs;
} dist_names[] = {
    {"const", DRV_DIST_CONST, 1},   {"constant", DRV_DIST_CONST, 1},
    {"normal", DRV_DIST_NORMAL, 2}, {"uniform", DRV_DIST_UNIFORM, 2},
    {"gamma", DRV_DIST_GAMMA, 2},   {"exponential", DRV_DIST_EXP, 1},
    {"exp", DRV_DIST_EXP, 1},	    {"poisson", DRV_DIST_POISSON, 1},
};

int drv_dist_valid(const struct drv_dist *d, const char **why)
{
	if (!isfinite(d->a) || !isfinite(d->b)) {
		*why = "parameters must be finite";
		return -EINVAL;
	}
	switch (d->type) {
	case DRV_DIST_CONST:
	case DRV_DIST_EXP:
	case DRV_DIST_POISSON:
		if (d->a < 0) {
			*why = "must be >= 0";
			return -EINVAL;
		}
		return 0;
	case DRV_DIST_NORMAL:
		if (d->b < 0) {
			*why = "stdev must be >= 0";
			return -EINVAL;
		}
		return 0;
	case DRV_DIST_UNIFORM:
		if (d->a < 0 || d->b < d->a) {
			*why = "uniform needs 0 <= min <= max";
			return -EINVAL;
		}
		return 0;
	case DRV_DIST_GAMMA:
		if (d->a <= 0 || d->b < 0) {
			*why = "gamma needs shape > 0 and scale >= 0";
			return -EINVAL;
		}
		return 0;
	}
	*why = "unknown distribution";
	return -EINVAL;
}

int drv_dist_parse(const char *s, struct drv_dist *out, const char **why)
{
	const char *colon = strchr(s, ':');
	char args[2][64];
	unsigned nargs = 0;
	double v[2] = {0, 0};

	if (!colon) {
		out->type = DRV_DIST_CONST;
		out->b = 0;
		return drv_parse_seconds(s, &out->a, why);
	}
	size_t nl = (size_t)(colon - s);
	unsigned k;
	for (k = 0; k < sizeof(dist_names) / sizeof(dist_names[0]); k++)
		if (strlen(dist_names[k].name) == nl && !strncmp(s, dist_names[k].name, nl))
			break;
	if (k == sizeof(dist_names) / sizeof(dist_names[0])) {
		*why = "unknown distribution (const, normal, uniform, gamma, exponential, poisson)";
		return -EINVAL;
	}
	for (const char *p = colon + 1; *p;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		if (nargs == 2 || n == 0 || n >= sizeof(args[0])) {
			*why = "bad distribution arguments";
			return -EINVAL;
		}
		memcpy(args[nargs], p, n);
		args[nargs++][n] = 0;
		p += n + (comma ? 1 : 0);
		if (comma && !*p) {
			*why = "bad distribution arguments";
			return -EINVAL;
		}
	}
	if (nargs != dist_names[k].nargs) {
		*why = dist_names[k].nargs == 1 ? "this distribution takes one value"
						: "this distribution takes two values";
		return -EINVAL;
	}
	for (unsigned i = 0; i < nargs; i++) {
		/* gamma's shape is a plain number; everything else may carry a time unit */
		if (dist_names[k].type == DRV_DIST_GAMMA && i == 0) {
			char *end;
			v[0] = strtod(args[0], &end);
			if (*end || end == args[0]) {
				*why = "gamma shape must be a number";
				return -EINVAL;
			}
		} else if (dist_names[k].type == DRV_DIST_POISSON) {
			char *end;
			v[0] = strtod(args[0], &end);
			if (*end || end == args[0]) {
				*why = "poisson lambda must be a number (seconds)";
				return -EINVAL;
			}
		} else if (drv_parse_seconds(args[i], &v[i], why)) {
			return -EINVAL;
		}
	}
	out->type = dist_names[k].type;
	out->a = v[0];
	out->b = v[1];
	return drv_dist_valid(out, why);
}

static double gamma_draw(double shape, uint64_t sub)
{
	uint64_t j = 0;
	double boost = 1.0;

	/* Marsaglia and Tsang; shape < 1 through gamma(shape + 1) * U^(1/shape). */
	if (shape < 1.0) {
		boost = pow(dl_prng_unit(sub, 1000003) + 0x1p-54, 1.0 / shape);
		shape += 1.0;
	}
	double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
	for (;;) {
		double x = dl_prng_normal(sub, j++), v = 1.0 + c * x;
		if (v <= 0)
			continue;
		v = v * v * v;
		double u = dl_prng_unit(sub, 1u << 20 | j++) + 0x1p-54;
		if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
			return d * v * boost;
	}
}

static double poisson_draw(double lam, uint64_t sub)
{
	if (lam <= 0)
		return 0;
	if (lam < 30) {
		/* Knuth: multiply uniforms until below e^-lambda. */
		double l = exp(-lam), p = 1.0;
		uint64_t k = 0;
		do {
			p *= dl_prng_unit(sub, k);
			k++;
		} while (p > l);
		return (double)(k - 1);
	}
	/* Normal approximation for large lambda (error below 1/sqrt(lambda)). */
	double x = floor(lam + sqrt(lam) * dl_prng_normal(sub, 0) + 0.5);
	return x < 0 ? 0 : x;
}

double drv_dist_draw(const struct drv_dist *d, uint64_t key, uint64_t i)
{
	uint64_t sub = dl_key2(key, i);
	double v = 0;

	switch (d->type) {
	case DRV_DIST_CONST:
		v = d->a;
		break;
	case DRV_DIST_NORMAL:
		v = d->a + d->b * dl_prng_normal(sub, 0);
		break;
	case DRV_DIST_UNIFORM:
		v = d->a + (d->b - d->a) * dl_prng_unit(sub, 0);
		break;
	case DRV_DIST_GAMMA:
		v = d->b * gamma_draw(d->a, sub);
		break;
	case DRV_DIST_EXP:
		v = -d->a * log1p(-dl_prng_unit(sub, 0));
		break;
	case DRV_DIST_POISSON:
		v = poisson_draw(d->a, sub);
		break;
	}
	/* DLIO folds negative draws with abs(). */
	return fabs(v);
}

double drv_dist_mean(const struct drv_dist *d)
{
	switch (d->type) {
	case DRV_DIST_CONST:
	case DRV_DIST_EXP:
	case DRV_DIST_POISSON:
		return d->a;
	case DRV_DIST_NORMAL:
		/* mean of |N(m, s)| (the folded normal), m when s == 0 */
		if (d->b == 0)
			return fabs(d->a);
		return d->b * sqrt(2.0 / M_PI) * exp(-d->a * d->a / (2 * d->b * d->b)) +
		       d->a * erf(d->a / (d->b * sqrt(2.0)));
	case DRV_DIST_UNIFORM:
		return (d->a + d->b) / 2;
	case DRV_DIST_GAMMA:
		return d->a * d->b;
	}
	return 0;
}

int drv_dist_scale(struct drv_dist *d, double f)
{
	switch (d->type) {
	case DRV_DIST_CONST:
	case DRV_DIST_EXP:
		d->a *= f;
		return 0;
	case DRV_DIST_NORMAL:
	case DRV_DIST_UNIFORM:
		d->a *= f;
		d->b *= f;
		return 0;
	case DRV_DIST_GAMMA:
		d->b *= f;
		return 0;
	case DRV_DIST_POISSON:
		return -EINVAL;
	}
	return -EINVAL;
}

void drv_dist_describe(const struct drv_dist *d, char *buf, size_t len)
{
	switch (d->type) {
	case DRV_DIST_CONST:
		snprintf(buf, len, "%.6g s", d->a);
		break;
	case DRV_DIST_NORMAL:
		snprintf(buf, len, "normal(mean %.6g s, stdev %.6g s)", d->a, d->b);
		break;
	case DRV_DIST_UNIFORM:
		snprintf(buf, len, "uniform(%.6g s, %.6g s)", d->a, d->b);
		break;
	case DRV_DIST_GAMMA:
		snprintf(buf, len, "gamma(shape %.6g, scale %.6g s)", d->a, d->b);
		break;
	case DRV_DIST_EXP:
		snprintf(buf, len, "exponential(scale %.6g s)", d->a);
		break;
	case DRV_DIST_POISSON:
		snprintf(buf, len, "poisson(lambda %.6g s)", d->a);
		break;
	}
}
