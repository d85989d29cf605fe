/* Quantities written the way people write them: 140MB, 4KiB, 500MB/s, 150us, 2k. */
#ifndef DLIOFS_UNITS_H
#define DLIOFS_UNITS_H

#include <stdint.h>

/* Bytes: plain integer, or with B, kB/KB, MB, GB, TB, PB, EB (10^3k) or
 * KiB, MiB, GiB, TiB, PiB, EiB (2^10k), optional space before the unit,
 * decimals allowed when the result is a whole number of bytes ("1.5KiB").
 * Returns 0, or -EINVAL (syntax; *why says what) or -ERANGE (over 2^64-1). */
int dl_parse_size(const char *s, uint64_t *out, const char **why);

/* Rate in bytes per second: a size followed by "/s" ("500MB/s", "1GiB/s"). */
int dl_parse_rate(const char *s, uint64_t *out, const char **why);

/* Duration in nanoseconds: number with ns, us, ms, s, m(in), h ("150us", "1.5s").
 * A bare number is rejected: a unit is required so "3" is never ambiguous. */
int dl_parse_time(const char *s, uint64_t *out_ns, const char **why);

/* Count: integer with optional k, M, G, T (10^3k) or Ki, Mi, Gi (2^10k) suffix. */
int dl_parse_count(const char *s, uint64_t *out, const char **why);

/* Human-readable size into buf ("1.50 GiB"); returns buf. */
char *dl_format_size(uint64_t bytes, char *buf, unsigned buflen);

#endif
