/* Quantities as people write them. Every value is computed exactly in
 * integers (128-bit intermediates), never through a double: "1.5KiB" is 1536
 * and "18446744073709551615" survives unchanged. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dliofs/units.h"

typedef unsigned __int128 u128;

struct unit {
	const char *sym;
	uint64_t mult;
};

#define K10 1000ULL
#define K2 1024ULL

static const struct unit size_units[] = {
	{ "", 1 }, { "B", 1 },
	{ "kB", K10 }, { "KB", K10 },
	{ "MB", K10 * K10 }, { "GB", K10 * K10 * K10 }, { "TB", K10 * K10 * K10 * K10 },
	{ "PB", K10 * K10 * K10 * K10 * K10 }, { "EB", K10 * K10 * K10 * K10 * K10 * K10 },
	{ "KiB", 1ULL << 10 }, { "MiB", 1ULL << 20 }, { "GiB", 1ULL << 30 },
	{ "TiB", 1ULL << 40 }, { "PiB", 1ULL << 50 }, { "EiB", 1ULL << 60 },
	{ NULL, 0 }
};

static const struct unit time_units[] = {
	{ "ns", 1 }, { "us", K10 }, { "\xc2\xb5s", K10 }, { "ms", K10 * K10 },
	{ "s", K10 * K10 * K10 }, { "m", 60 * K10 * K10 * K10 }, { "min", 60 * K10 * K10 * K10 },
	{ "h", 3600 * K10 * K10 * K10 },
	{ NULL, 0 }
};

static const struct unit count_units[] = {
	{ "", 1 }, { "k", K10 }, { "K", K10 }, { "M", K10 * K10 }, { "G", K10 * K10 * K10 },
	{ "T", K10 * K10 * K10 * K10 },
	{ "Ki", 1ULL << 10 }, { "Mi", 1ULL << 20 }, { "Gi", 1ULL << 30 }, { "Ti", 1ULL << 40 },
	{ NULL, 0 }
};

/* More significant fraction digits than this cannot be held exactly in the
 * 128-bit product below (10^19 * 2^62 < 2^128), and no one writes them. */
#define MAX_FRAC_DIGITS 19

enum qty_kind { QTY_SIZE, QTY_TIME, QTY_COUNT };

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static const char *size_unit_hint(const char *u, size_t n)
{
	static const char prefixes[] = "kKMGTPE";

	if (n >= 2 && u[n - 1] == 'b')
		return "\"b\" means bits: write B for bytes (MB, MiB, ...)";
	if ((n == 1 || (n == 2 && u[1] == 'i')) && strchr(prefixes, u[0]))
		return "ambiguous unit: write kB, MB, GB (powers of 1000) or KiB, MiB, GiB "
		       "(powers of 1024)";
	if (n >= 1 && strchr("mgtpe", u[0]))
		return "unknown unit (units are case-sensitive): expected B, kB, MB, GB, TB, PB, "
		       "EB or KiB, MiB, GiB, TiB, PiB, EiB";
	return "unknown unit: expected B, kB, MB, GB, TB, PB, EB or KiB, MiB, GiB, TiB, PiB, EiB";
}

static const char *time_unit_hint(const char *u, size_t n)
{
	(void)u;
	if (n == 0)
		return "a time needs a unit: ns, us, ms, s, min or h (e.g. 150us, 1.5s)";
	return "unknown time unit: expected ns, us, ms, s, min or h";
}

static const char *count_unit_hint(const char *u, size_t n)
{
	if (n == 1 && u[0] == 'm')
		return "ambiguous suffix \"m\": write M for a million";
	return "unknown suffix: expected k, M, G, T (powers of 1000) or Ki, Mi, Gi, Ti "
	       "(powers of 1024)";
}

static const struct unit *find_unit(const struct unit *t, const char *u, size_t n)
{
	for (; t->sym; t++)
		if (strlen(t->sym) == n && memcmp(t->sym, u, n) == 0)
			return t;
	return NULL;
}

/* The common grammar: blanks, digits [. digits], blanks, unit, blanks.
 * Only s[0..len) is looked at, so a rate can pass its prefix. */
static int parse_qty(const char *s, size_t len, enum qty_kind kind, uint64_t *out,
		     const char **why)
{
	const struct unit *table = kind == QTY_SIZE ? size_units :
				   kind == QTY_TIME ? time_units : count_units;
	const char *p = s, *end = s + len, *u, *ue, *frac_start = NULL;
	const struct unit *unit;
	u128 ip = 0, fp = 0, pow10 = 1, whole, part;
	unsigned fdigits = 0, i;
	int too_big = 0;

	while (p < end && is_blank(*p))
		p++;
	while (end > p && is_blank(end[-1]))
		end--;
	if (p == end) {
		*why = "empty value";
		return -EINVAL;
	}
	if (*p == '-') {
		*why = "negative values are not allowed";
		return -EINVAL;
	}
	if (*p < '0' || *p > '9') {
		*why = "expected a number";
		return -EINVAL;
	}
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		if (!too_big) {
			ip = ip * 10 + (unsigned)(*p - '0');
			if (ip > UINT64_MAX)
				too_big = 1;
		}
	}
	if (p < end && *p == '.') {
		p++;
		if (p >= end || *p < '0' || *p > '9') {
			*why = "expected digits after the decimal point";
			return -EINVAL;
		}
		frac_start = p;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
		/* Significant digits only: trailing zeros change nothing. */
		for (ue = p; ue > frac_start && ue[-1] == '0'; ue--)
			;
		if (ue - frac_start > MAX_FRAC_DIGITS) {
			*why = "too many decimal places";
			return -EINVAL;
		}
		fdigits = (unsigned)(ue - frac_start);
		for (i = 0; i < fdigits; i++) {
			fp = fp * 10 + (unsigned)(frac_start[i] - '0');
			pow10 *= 10;
		}
	}
	while (p < end && is_blank(*p))
		p++;
	u = p;
	ue = end;
	unit = find_unit(table, u, (size_t)(ue - u));
	if (!unit || (kind == QTY_TIME && ue == u)) {
		if (kind == QTY_SIZE)
			*why = size_unit_hint(u, (size_t)(ue - u));
		else if (kind == QTY_TIME)
			*why = time_unit_hint(u, (size_t)(ue - u));
		else
			*why = count_unit_hint(u, (size_t)(ue - u));
		if (ue > u && (*u == '.' || *u == 'e' || *u == 'E' || *u == 'x') && ue - u > 1 &&
		    u[1] >= '0' && u[1] <= '9')
			*why = "expected a plain decimal number (no exponent, no hex, one decimal point)";
		return -EINVAL;
	}
	if (too_big)
		goto range;
	/* ip <= 2^64 and mult < 2^62, fp < 10^19 < 2^64: both products fit. */
	whole = ip * unit->mult;
	part = fp * unit->mult;
	if (part % pow10) {
		*why = kind == QTY_SIZE ? "not a whole number of bytes" :
		       kind == QTY_TIME ? "not a whole number of nanoseconds" :
					  "not a whole number";
		return -EINVAL;
	}
	whole += part / pow10;
	if (whole > UINT64_MAX)
		goto range;
	*out = (uint64_t)whole;
	return 0;
range:
	*why = kind == QTY_SIZE ? "too large: over 2^64-1 bytes (16 EiB)" :
	       kind == QTY_TIME ? "too long: over 2^64-1 nanoseconds (584 years)" :
				  "too large: over 2^64-1";
	return -ERANGE;
}

int dl_parse_size(const char *s, uint64_t *out, const char **why)
{
	const char *dummy;

	if (!why)
		why = &dummy;
	if (!s) {
		*why = "empty value";
		return -EINVAL;
	}
	return parse_qty(s, strlen(s), QTY_SIZE, out, why);
}

int dl_parse_rate(const char *s, uint64_t *out, const char **why)
{
	const char *dummy;
	size_t n;

	if (!why)
		why = &dummy;
	if (!s) {
		*why = "empty value";
		return -EINVAL;
	}
	n = strlen(s);
	while (n && is_blank(s[n - 1]))
		n--;
	if (n < 2 || s[n - 2] != '/' || s[n - 1] != 's') {
		*why = "a rate needs \"/s\" (e.g. 500MB/s, 1GiB/s)";
		return -EINVAL;
	}
	return parse_qty(s, n - 2, QTY_SIZE, out, why);
}

int dl_parse_time(const char *s, uint64_t *out_ns, const char **why)
{
	const char *dummy;

	if (!why)
		why = &dummy;
	if (!s) {
		*why = "empty value";
		return -EINVAL;
	}
	return parse_qty(s, strlen(s), QTY_TIME, out_ns, why);
}

int dl_parse_count(const char *s, uint64_t *out, const char **why)
{
	const char *dummy;

	if (!why)
		why = &dummy;
	if (!s) {
		*why = "empty value";
		return -EINVAL;
	}
	return parse_qty(s, strlen(s), QTY_COUNT, out, why);
}

char *dl_format_size(uint64_t bytes, char *buf, unsigned buflen)
{
	static const char *const names[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	unsigned i = 0;

	if (!buf || !buflen)
		return buf;
	if (bytes < 1024) {
		snprintf(buf, buflen, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	while (i + 1 < 6 && bytes >= (1ULL << (10 * (i + 2))))
		i++;
	snprintf(buf, buflen, "%.2f %s", (double)bytes / (double)(1ULL << (10 * (i + 1))),
		 names[i]);
	return buf;
}
