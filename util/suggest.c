/* "Did you mean": the nearest of a list of names to a misspelled one
 * (suggest.h). */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "dliofs/suggest.h"

/* Edit distance, case-insensitive, on short strings only (callers cut). */
static unsigned edit_distance(const char *a, size_t na, const char *b, size_t nb)
{
	unsigned row[33], prev, tmp;
	size_t i, j;

	for (j = 0; j <= nb; j++)
		row[j] = (unsigned)j;
	for (i = 1; i <= na; i++) {
		prev = row[0];
		row[0] = (unsigned)i;
		for (j = 1; j <= nb; j++) {
			unsigned cost = tolower((unsigned char)a[i - 1]) !=
					tolower((unsigned char)b[j - 1]);
			unsigned best = prev + cost;

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			tmp = row[j];
			row[j] = best;
			prev = tmp;
		}
	}
	return row[nb];
}

const char *dl_suggest(const char *s, const char *const *cands, size_t ncands)
{
	const char *best = NULL;
	unsigned best_d = ~0u;
	size_t n = strlen(s);

	if (n == 0 || n > 32)
		return NULL;
	for (size_t i = 0; i < ncands; i++) {
		size_t m = strlen(cands[i]);
		unsigned d, limit;

		if (m > 32)
			continue;
		d = edit_distance(s, n, cands[i], m);
		/* A typo, not a different word: allow about one edit per 3 letters. */
		limit = m <= 3 ? 1 : m <= 6 ? 2 : 3;
		if (d <= limit && d < best_d) {
			best = cands[i];
			best_d = d;
		}
	}
	/* A prefix or a dropped/added "s" is also a typo worth naming. */
	if (!best) {
		for (size_t i = 0; i < ncands; i++) {
			size_t m = strlen(cands[i]);

			if (n >= 3 && m > n && strncasecmp(s, cands[i], n) == 0)
				return cands[i];
		}
	}
	return best;
}
