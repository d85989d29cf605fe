/* JSON: one writer for every report the project prints (stats.json, the
 * tools' --json), and one reader that flattens a document into (dotted
 * path, value) pairs for the tools that difference the daemon's counters
 * (util/json.c, util/jsonflat.c), and a whole document as those pairs
 * (util/jsondoc.c). */
#ifndef DLIOFS_JSON_H
#define DLIOFS_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* s as a JSON string literal, quotes included: '"', '\\' and control
 * characters escaped; other bytes as they are. NULL writes null. */
void dl_json_quote(FILE *f, const char *s);

#define DL_JSON_MAX_DEPTH 32

/* A streaming writer. Values go inside the object or array open at the
 * top; in an object every value needs its key, in an array none does (pass
 * NULL). Commas and separators are the writer's business. */
struct dl_jw {
	FILE *f;
	unsigned depth;
	char close[DL_JSON_MAX_DEPTH];	/* '}' or ']' per open level */
	uint8_t count[DL_JSON_MAX_DEPTH]; /* values written at that level (saturating) */
	int indent;			/* >= 0: newline and this many spaces per level
					 * before every value of the first `indent_levels` */
	unsigned indent_levels;
};

/* indent_levels 0: everything on one line. */
void dl_jw_init(struct dl_jw *w, FILE *f, unsigned indent_levels);
void dl_jw_obj(struct dl_jw *w, const char *key);
void dl_jw_arr(struct dl_jw *w, const char *key);
void dl_jw_end(struct dl_jw *w);
void dl_jw_str(struct dl_jw *w, const char *key, const char *s);
void dl_jw_u64(struct dl_jw *w, const char *key, uint64_t v);
void dl_jw_i64(struct dl_jw *w, const char *key, int64_t v);
/* printf %.*g with `digits` significant digits; NaN and infinities as null. */
void dl_jw_f64(struct dl_jw *w, const char *key, double v, int digits);
/* A fixed number of decimals ("1.500"); NaN and infinities as null. */
void dl_jw_fixed(struct dl_jw *w, const char *key, double v, int decimals);
void dl_jw_bool(struct dl_jw *w, const char *key, int v);
void dl_jw_null(struct dl_jw *w, const char *key);
/* Nanoseconds as microseconds with three decimals, exact ("12.345"). */
void dl_jw_us(struct dl_jw *w, const char *key, uint64_t ns);
/* Close every open level; returns 0, or -EIO when the stream failed. */
int dl_jw_finish(struct dl_jw *w);

/* Flatten a document: fn(arg, path, value, is_string) for every scalar,
 * with objects' keys joined by '.' and arrays' indices as numbers
 * ("jobs.0.name"). Strings are decoded (\uXXXX beyond ASCII becomes '?');
 * other scalars are given as written ("12.5", "true", "null"). Stops at
 * fn's first non-zero return and returns it; -EINVAL for malformed text
 * or nesting deeper than DL_JSON_MAX_DEPTH. */
int dl_json_flatten(const char *text, size_t len,
		    int (*fn)(void *arg, const char *path, const char *value, int is_string),
		    void *arg);

/* A whole document as (dotted path, value) pairs, in document order
 * (util/jsondoc.c): the reader of the daemon's stats.json and the tools'
 * reports. */
struct dl_jval {
	char *path;
	char *text;  /* the value as written; strings decoded */
	double num;  /* numbers; booleans 0 or 1; 0 for strings and nulls */
	char *str;   /* text for strings, NULL otherwise */
	int is_null; /* only with DL_JDOC_NULLS */
};

struct dl_jdoc {
	struct dl_jval *v;
	size_t n, cap;
};

/* Keep nulls (left out by default). */
#define DL_JDOC_NULLS 1u
/* A truncated or malformed document: keep the values read before the
 * error (0 when there are any). */
#define DL_JDOC_PARTIAL 2u

/* 0, -EINVAL (malformed, nesting too deep) or -ENOMEM; out is empty on
 * error. */
int dl_jdoc_parse(const char *text, size_t len, unsigned flags, struct dl_jdoc *out);
void dl_jdoc_free(struct dl_jdoc *j);
/* The value at path, or NULL. */
const struct dl_jval *dl_jdoc_get(const struct dl_jdoc *j, const char *path);
/* The number at path, or dflt when missing or not a number. */
double dl_jdoc_num(const struct dl_jdoc *j, const char *path, double dflt);

#endif
