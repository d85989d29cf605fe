/* DLIO's run keys of a workload file (the keys of the options table,
 * drive_opts.c; config/ reads the file, include/dliofs/dlio_keys.h), and
 * MLPerf Storage's per-accelerator table.
 *
 * The dataset itself always comes from dl_config_load(); here we only read
 * what a dliofs config has no place for (batch size, threads, compute
 * time...). Keys are DLIO's (docs/dlio.md 4.2); a Hydra-resolved file with
 * everything under `workload:` works too. DLIO ignores unknown keys and so do
 * we, but a known key with a bad value is an error with its line:column. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dliofs/dlio_keys.h"
#include "dliofs/units.h"
#include "drive_i.h"

/* MLPerf Storage computation time per batch (docs/dlio.md 4.3: DLIO/MLPerf
 * unet3d/resnet50/cosmoflow configs; b200 from MLPerf v3 development). */
static const struct drv_workload workloads[] = {
    {"unet3d", "a100", 0.636, 7, 4, 0.90},	{"unet3d", "h100", 0.323, 7, 4, 0.90},
    {"unet3d", "v100", 1.3604, 4, 4, 0.90},	{"unet3d", "b200", 0.162, 7, 4, 0.90},
    {"resnet50", "a100", 0.435, 400, 8, 0.90},	{"resnet50", "h100", 0.224, 400, 8, 0.90},
    {"resnet50", "v100", 0.195, 64, 8, 0.90},	{"cosmoflow", "a100", 0.00551, 1, 4, 0.70},
    {"cosmoflow", "h100", 0.00350, 1, 4, 0.70}, {"cosmoflow", "v100", 0.00936, 1, 4, 0.70},
};

const struct drv_workload *drv_workload_table(size_t *n)
{
	*n = sizeof(workloads) / sizeof(workloads[0]);
	return workloads;
}

const struct drv_workload *drv_workload_find(const char *workload, const char *accel)
{
	for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++)
		if (!strcasecmp(workloads[i].workload, workload) &&
		    !strcasecmp(workloads[i].accel, accel))
			return &workloads[i];
	return NULL;
}

void drv_note(struct drv_params *p, const char *fmt, ...)
{
	size_t used = strlen(p->notes);
	va_list ap;

	if (used + 2 >= sizeof(p->notes))
		return;
	va_start(ap, fmt);
	vsnprintf(p->notes + used, sizeof(p->notes) - used - 1, fmt, ap);
	va_end(ap);
	used = strlen(p->notes);
	p->notes[used] = '\n';
	p->notes[used + 1] = 0;
}

/* ---- the workload's keys (config/, include/dliofs/dlio_keys.h) ---- */

struct yctx {
	const struct dl_dlio_keys *k;
	FILE *err;
	int errors;
};

typedef struct dl_dlio_val yval;

static void yerr(struct yctx *y, const yval *n, const char *key, const char *what)
{
	dl_dlio_say(y->k, y->err, "", n, key, what);
	y->errors++;
}

static const yval *yget(struct yctx *y, const yval *map, const char *key)
{
	return dl_dlio_child(y->k, map, key);
}

static const char *ystr(const yval *n) { return n && n->kind == DL_DLIO_SCALAR ? n->text : NULL; }

static int yis_null(const yval *n)
{
	const char *s = ystr(n);

	return s && (!*s || !strcmp(s, "~") || !strcasecmp(s, "null") || !strcasecmp(s, "none"));
}

static int ynum(struct yctx *y, const yval *n, const char *key, double *out)
{
	const char *s = ystr(n);
	char *end;

	if (!s) {
		yerr(y, n, key, "expected a number");
		return -EINVAL;
	}
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(v)) {
		yerr(y, n, key, "expected a number");
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* Integer; `neg_ok` lets DLIO's "-1 = off" through as *off. */
static int yint(struct yctx *y, const yval *n, const char *key, int64_t min, int64_t *out)
{
	double v;

	if (ynum(y, n, key, &v))
		return -EINVAL;
	if (v != floor(v) || v < (double)min || v > 9.0e18) {
		char why[64];
		snprintf(why, sizeof(why), "expected a whole number >= %lld", (long long)min);
		yerr(y, n, key, why);
		return -EINVAL;
	}
	*out = (int64_t)v;
	return 0;
}

static int ybool(struct yctx *y, const yval *n, const char *key, int *out)
{
	const char *s = ystr(n);

	if (s && (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcmp(s, "1") ||
		  !strcasecmp(s, "on"))) {
		*out = 1;
		return 0;
	}
	if (s && (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcmp(s, "0") ||
		  !strcasecmp(s, "off"))) {
		*out = 0;
		return 0;
	}
	yerr(y, n, key, "expected true or false");
	return -EINVAL;
}

/* A DLIO time value: scalar seconds, or {mean[, stdev]} (normal), or
 * {type: normal|uniform|gamma|exponential|poisson, ...}. */
static int ytime(struct yctx *y, const yval *n, const char *key, struct drv_dist *d)
{
	const char *why;

	if (n->kind == DL_DLIO_SCALAR) {
		d->type = DRV_DIST_CONST;
		d->b = 0;
		if (ynum(y, n, key, &d->a))
			return -EINVAL;
		d->a = fabs(d->a);
		return 0;
	}
	if (n->kind != DL_DLIO_MAP) {
		yerr(y, n, key, "expected seconds or a distribution mapping");
		return -EINVAL;
	}
	const char *type = ystr(yget(y, n, "type"));
	static const struct {
		const char *type;
		enum drv_dist_type t;
		const char *a, *b;
	} forms[] = {
	    {"normal", DRV_DIST_NORMAL, "mean", "stdev"},
	    {"uniform", DRV_DIST_UNIFORM, "min", "max"},
	    {"gamma", DRV_DIST_GAMMA, "shape", "scale"},
	    {"exponential", DRV_DIST_EXP, "scale", NULL},
	    {"poisson", DRV_DIST_POISSON, "lam", NULL},
	};
	if (!type) {
		/* DLIO: {mean} alone is a constant, {mean, stdev} a normal. */
		const yval *m = yget(y, n, "mean"), *s = yget(y, n, "stdev");
		if (!m) {
			yerr(y, n, key, "a time mapping needs `mean` (or `type`)");
			return -EINVAL;
		}
		d->type = s ? DRV_DIST_NORMAL : DRV_DIST_CONST;
		d->b = 0;
		if (ynum(y, m, key, &d->a) || (s && ynum(y, s, key, &d->b)))
			return -EINVAL;
	} else {
		size_t i;
		for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
			if (!strcmp(type, forms[i].type))
				break;
		if (i == sizeof(forms) / sizeof(forms[0])) {
			yerr(y, yget(y, n, "type"), key,
			     "type must be normal, uniform, gamma, exponential or poisson");
			return -EINVAL;
		}
		const yval *a = yget(y, n, forms[i].a),
			   *b = forms[i].b ? yget(y, n, forms[i].b) : NULL;
		if (!a || (forms[i].b && !b)) {
			char why2[96];
			snprintf(why2, sizeof(why2), "%s needs %s%s%s", type, forms[i].a,
				 forms[i].b ? " and " : "", forms[i].b ? forms[i].b : "");
			yerr(y, n, key, why2);
			return -EINVAL;
		}
		d->type = forms[i].t;
		d->b = 0;
		if (ynum(y, a, key, &d->a) || (b && ynum(y, b, key, &d->b)))
			return -EINVAL;
	}
	if (drv_dist_valid(d, &why)) {
		yerr(y, n, key, why);
		return -EINVAL;
	}
	return 0;
}

/* A whole number for option o: DLIO's conventions (DRV_OF_Y*), then o's
 * range. 0 and the value, 1 to leave it (a null), or -EINVAL (said). */
static int yopt_count(struct yctx *y, const yval *n, const struct drv_opt *o, uint64_t *out)
{
	int64_t min = o->flags & DRV_OF_YOFF ? -1 : o->flags & DRV_OF_YMAIN ? 0 : (int64_t)o->min;
	int64_t v;

	if ((o->flags & DRV_OF_YNULL) && yis_null(n))
		return 1;
	if (yint(y, n, o->key, min, &v))
		return -EINVAL;
	if (v <= 0 && (o->flags & DRV_OF_YOFF))
		v = 0;
	if (v == 0 && (o->flags & DRV_OF_YMAIN))
		v = 1; /* DLIO's 0 = load in the main process; we still need one reader */
	if ((uint64_t)v > o->max && (o->flags & DRV_OF_YCLAMP))
		v = (int64_t)o->max;
	if ((uint64_t)v > o->max && (o->flags & DRV_OF_YMAX)) {
		char why[48];
		snprintf(why, sizeof(why), "at most %llu", (unsigned long long)o->max);
		yerr(y, n, o->key, why);
		return -EINVAL;
	}
	*out = (uint64_t)v;
	return 0;
}

static int yopt_enum(struct yctx *y, const yval *n, const struct drv_opt *o, int *out)
{
	const char *s = ystr(n);
	char names[96], why[128];

	for (const struct drv_name *nm = o->names; s && nm->name; nm++) {
		if (!strcasecmp(s, nm->name)) {
			*out = nm->value;
			return 0;
		}
	}
	if (o->flags & DRV_OF_YLAX)
		return 1; /* another loader of DLIO's: not ours to judge */
	drv_opt_expected(o, names, sizeof(names));
	snprintf(why, sizeof(why), "expected %s", names);
	yerr(y, n, o->key, why);
	return -EINVAL;
}

static int yopt_fraction(struct yctx *y, const yval *n, const struct drv_opt *o, double *out)
{
	double v;

	if (ynum(y, n, o->key, &v))
		return -EINVAL;
	if (v > 1 && v <= 100)
		v /= 100; /* someone wrote a percentage */
	if (v < 0 || v > 1) {
		yerr(y, n, o->key, "expected a fraction in [0, 1]");
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* DLIO's *_stdev: a constant time becomes normal(time, stdev). */
static int yopt_stdev(struct yctx *y, const yval *n, const struct drv_opt *o, struct drv_dist *d)
{
	double sd = 0;

	if (ynum(y, n, o->key, &sd))
		return -EINVAL;
	if (!(sd > 0) || d->type != DRV_DIST_CONST)
		return 1;
	d->type = DRV_DIST_NORMAL;
	d->b = sd;
	return 0;
}

/* Key o->key, there as n, into p. 0 (used), 1 (left as it was) or -EINVAL. */
static int yopt(struct yctx *y, const yval *n, const struct drv_opt *o, struct drv_params *p)
{
	void *field = (char *)p + o->off;
	const char *s;
	uint64_t v;
	int ret;

	switch (o->type) {
	case DRV_T_COUNT:
	case DRV_T_SIZE:
		if ((ret = yopt_count(y, n, o, &v)))
			return ret;
		if (o->size == sizeof(unsigned))
			*(unsigned *)field = (unsigned)v;
		else
			*(uint64_t *)field = v;
		if (o->ynote)
			drv_note(p, o->ynote, (unsigned long long)v);
		return 0;
	case DRV_T_TIME:
		return ytime(y, n, o->key, field);
	case DRV_T_STDEV:
		return yopt_stdev(y, n, o, field);
	case DRV_T_FRACTION:
		return yopt_fraction(y, n, o, field);
	case DRV_T_BOOL:
		return ybool(y, n, o->key, field);
	case DRV_T_ENUM:
		return yopt_enum(y, n, o, field);
	case DRV_T_STRING:
		if (!(s = ystr(n)))
			return 1; /* model: {...} is a section, not a name */
		snprintf(field, o->size, "%s", s);
		return 0;
	default:
		return 1;
	}
}

int drv_params_from_yaml(const char *path, struct drv_params *p, struct drv_optset *set,
			 int *is_dlio, FILE *err)
{
	struct dl_dlio_keys *k;
	struct yctx y = {.err = err};
	char why[512];
	int ret, used = 0;

	*is_dlio = 0;
	/* A YAML error: dl_config_load has already said what is wrong. */
	if ((ret = dl_dlio_keys_load(path, &k, why, sizeof(why))))
		return ret;
	y.k = k;
	if (!dl_dlio_keys_is_workload(k))
		goto out;
	*is_dlio = 1;

	size_t nopts;
	const struct drv_opt *o = drv_opts(&nopts);
	for (size_t i = 0; i < nopts; i++, o++) {
		const yval *n = o->key ? dl_dlio_key(k, o->key) : NULL;
		/* A fallback key counts only where none before it in its chain
		 * gave something; a skipped one keeps the chain's answer. */
		if ((o->flags & DRV_OF_FALLBACK) && used)
			continue;
		if (!n) {
			used = 0;
			continue;
		}
		used = !yopt(&y, n, o, p);
		if (used)
			drv_optset_add(set, o);
	}
	if (y.errors)
		ret = -EINVAL;
out:
	dl_dlio_keys_free(k);
	return ret;
}
