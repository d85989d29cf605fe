/* The JSON writer (json.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "dliofs/json.h"

void dl_json_quote(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch == '\t')
			fputs("\\t", f);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

void dl_jw_init(struct dl_jw *w, FILE *f, unsigned indent_levels)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
	w->indent_levels = indent_levels;
}

/* Separator, indentation and key before a value. */
static void lead(struct dl_jw *w, const char *key)
{
	if (w->depth) {
		unsigned d = w->depth - 1;

		if (w->count[d])
			fputc(',', w->f);
		if (w->count[d] < UINT8_MAX)
			w->count[d]++;
		if (w->depth <= w->indent_levels)
			fprintf(w->f, "\n%*s", 2 * (int)w->depth, "");
		else if (w->count[d] > 1)
			fputc(' ', w->f);
	}
	if (key && w->depth && w->close[w->depth - 1] == '}') {
		dl_json_quote(w->f, key);
		fputs(": ", w->f);
	}
}

static void open_level(struct dl_jw *w, const char *key, char open, char close)
{
	lead(w, key);
	fputc(open, w->f);
	if (w->depth < DL_JSON_MAX_DEPTH) {
		w->close[w->depth] = close;
		w->count[w->depth] = 0;
	}
	w->depth++;
}

void dl_jw_obj(struct dl_jw *w, const char *key) { open_level(w, key, '{', '}'); }

void dl_jw_arr(struct dl_jw *w, const char *key) { open_level(w, key, '[', ']'); }

void dl_jw_end(struct dl_jw *w)
{
	char c;

	if (!w->depth)
		return;
	w->depth--;
	c = w->depth < DL_JSON_MAX_DEPTH ? w->close[w->depth] : '}';
	if (w->depth < w->indent_levels && w->depth < DL_JSON_MAX_DEPTH && w->count[w->depth])
		fprintf(w->f, "\n%*s", 2 * (int)w->depth, "");
	fputc(c, w->f);
}

void dl_jw_str(struct dl_jw *w, const char *key, const char *s)
{
	lead(w, key);
	dl_json_quote(w->f, s);
}

void dl_jw_u64(struct dl_jw *w, const char *key, uint64_t v)
{
	lead(w, key);
	fprintf(w->f, "%" PRIu64, v);
}

void dl_jw_i64(struct dl_jw *w, const char *key, int64_t v)
{
	lead(w, key);
	fprintf(w->f, "%" PRId64, v);
}

void dl_jw_f64(struct dl_jw *w, const char *key, double v, int digits)
{
	lead(w, key);
	if (isfinite(v))
		fprintf(w->f, "%.*g", digits, v);
	else
		fputs("null", w->f);
}

void dl_jw_fixed(struct dl_jw *w, const char *key, double v, int decimals)
{
	lead(w, key);
	if (isfinite(v))
		fprintf(w->f, "%.*f", decimals, v);
	else
		fputs("null", w->f);
}

void dl_jw_bool(struct dl_jw *w, const char *key, int v)
{
	lead(w, key);
	fputs(v ? "true" : "false", w->f);
}

void dl_jw_null(struct dl_jw *w, const char *key)
{
	lead(w, key);
	fputs("null", w->f);
}

void dl_jw_us(struct dl_jw *w, const char *key, uint64_t ns)
{
	lead(w, key);
	fprintf(w->f, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

int dl_jw_finish(struct dl_jw *w)
{
	while (w->depth)
		dl_jw_end(w);
	if (w->indent_levels)
		fputc('\n', w->f);
	return ferror(w->f) ? -EIO : 0;
}
