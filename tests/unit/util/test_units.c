/* Units as people write them: exact values, overflow, garbage. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dliofs/units.h"

static unsigned passed, failed;

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (cond) {                                                 \
			passed++;                                           \
		} else {                                                    \
			failed++;                                           \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                       \
			fputc('\n', stderr);                                \
		}                                                           \
	} while (0)

typedef int (*parse_fn)(const char *, uint64_t *, const char **);

static void ok(parse_fn f, const char *fname, const char *s, uint64_t want)
{
	uint64_t v = 0xdeadbeef;
	const char *why = NULL;
	int r = f(s, &v, &why);

	CHECK(r == 0 && v == want, "%s(\"%s\") = %d, %" PRIu64 " (%s); want %" PRIu64, fname, s, r,
	      v, why ? why : "-", want);
}

/* An error with the expected code, a reason, and *out left alone. */
static void bad(parse_fn f, const char *fname, const char *s, int want_ret, const char *why_has)
{
	uint64_t v = 12345;
	const char *why = NULL;
	int r = f(s, &v, &why);

	CHECK(r == want_ret && v == 12345 && why && (!why_has || strstr(why, why_has)),
	      "%s(\"%s\") = %d, %" PRIu64 ", why \"%s\"; want %d with \"%s\"", fname, s, r, v,
	      why ? why : "(null)", want_ret, why_has ? why_has : "");
}

#define OK(fn, s, want) ok(fn, #fn, s, want)
#define BAD(fn, s, ret, why) bad(fn, #fn, s, ret, why)

static void test_sizes(void)
{
	OK(dl_parse_size, "0", 0);
	OK(dl_parse_size, "1", 1);
	OK(dl_parse_size, "1B", 1);
	OK(dl_parse_size, "140MB", 140000000ULL);
	OK(dl_parse_size, "140 MB", 140000000ULL);
	OK(dl_parse_size, "  140MB  ", 140000000ULL);
	OK(dl_parse_size, "4KiB", 4096);
	OK(dl_parse_size, "1kB", 1000);
	OK(dl_parse_size, "1KB", 1000);
	OK(dl_parse_size, "2GiB", 2147483648ULL);
	OK(dl_parse_size, "1.5KiB", 1536);
	OK(dl_parse_size, "1.50000KiB", 1536);
	OK(dl_parse_size, "0.5MB", 500000);
	OK(dl_parse_size, "3TB", 3000000000000ULL);
	OK(dl_parse_size, "1PiB", 1ULL << 50);
	OK(dl_parse_size, "1EiB", 1ULL << 60);
	OK(dl_parse_size, "15EiB", 15ULL << 60);
	OK(dl_parse_size, "18EB", 18000000000000000000ULL);
	OK(dl_parse_size, "18446744073709551615", UINT64_MAX);
	OK(dl_parse_size, "18446744073709551615B", UINT64_MAX);
	OK(dl_parse_size, "0018446744073709551615", UINT64_MAX);
	/* Exact where a double would round: 2^64-1 has 20 significant digits. */
	OK(dl_parse_size, "18.446744073709551615EB", UINT64_MAX);
	OK(dl_parse_size, "9007199254740993", 9007199254740993ULL); /* 2^53 + 1 */
	OK(dl_parse_size, "0.0009765625MiB", 1024);
	OK(dl_parse_size, "0.0009765625EiB", 1ULL << 50);
	/* 19 decimals, still exact: 5^19 / 10^19 * 2^60 = 2^41. */
	OK(dl_parse_size, "0.0000019073486328125EiB", 1ULL << 41);
	OK(dl_parse_size, "1.0000019073486328125EiB", (1ULL << 60) + (1ULL << 41));

	BAD(dl_parse_size, "16EiB", -ERANGE, "too large");
	BAD(dl_parse_size, "18446744073709551616", -ERANGE, "too large");
	BAD(dl_parse_size, "1180591620717411303424", -ERANGE, "too large"); /* 2^70 */
	BAD(dl_parse_size, "1024EiB", -ERANGE, "too large");
	BAD(dl_parse_size, "17179869184GiB", -ERANGE, "too large");
	BAD(dl_parse_size, "99999999999999999999999999999999999999999999", -ERANGE, NULL);
	BAD(dl_parse_size, "1.0000001KB", -EINVAL, "whole number of bytes");
	BAD(dl_parse_size, "1.5", -EINVAL, "whole number of bytes");
	BAD(dl_parse_size, "0.3KiB", -EINVAL, "whole number of bytes");
	BAD(dl_parse_size, "1.9999999999999999999EiB", -EINVAL, "whole number of bytes");
	BAD(dl_parse_size, "abc", -EINVAL, "number");
	BAD(dl_parse_size, "", -EINVAL, "empty");
	BAD(dl_parse_size, "   ", -EINVAL, "empty");
	BAD(dl_parse_size, "-1", -EINVAL, "negative");
	BAD(dl_parse_size, "-4KiB", -EINVAL, "negative");
	BAD(dl_parse_size, "+4KiB", -EINVAL, NULL);
	BAD(dl_parse_size, "1e6", -EINVAL, "exponent");
	BAD(dl_parse_size, "0x10", -EINVAL, "hex");
	BAD(dl_parse_size, "1.", -EINVAL, "digits after");
	BAD(dl_parse_size, ".5MB", -EINVAL, "number");
	BAD(dl_parse_size, "1..5MB", -EINVAL, "digits after");
	BAD(dl_parse_size, "5M", -EINVAL, "ambiguous");
	BAD(dl_parse_size, "5K", -EINVAL, "ambiguous");
	BAD(dl_parse_size, "5Gi", -EINVAL, "ambiguous");
	BAD(dl_parse_size, "5Mb", -EINVAL, "bits");
	BAD(dl_parse_size, "5mb", -EINVAL, "bits");
	BAD(dl_parse_size, "5gb", -EINVAL, "bits");
	BAD(dl_parse_size, "5mB", -EINVAL, "case-sensitive");
	BAD(dl_parse_size, "5 parsecs", -EINVAL, "expected B, kB");
	BAD(dl_parse_size, "5KiB/s", -EINVAL, "unknown unit");
	BAD(dl_parse_size, "1 2", -EINVAL, NULL);
	BAD(dl_parse_size, "nan", -EINVAL, NULL);
	BAD(dl_parse_size, "inf", -EINVAL, NULL);
	/* More decimals than can be held exactly. */
	BAD(dl_parse_size, "0.00000000000000000001EiB", -EINVAL, "decimal places");
	BAD(dl_parse_size, NULL, -EINVAL, "empty");
	{
		uint64_t v;

		CHECK(dl_parse_size("4KiB", &v, NULL) == 0 && v == 4096, "why may be NULL");
		CHECK(dl_parse_size("x", &v, NULL) == -EINVAL, "why may be NULL on error");
	}
}

static void test_rates(void)
{
	OK(dl_parse_rate, "500MB/s", 500000000ULL);
	OK(dl_parse_rate, "1GiB/s", 1ULL << 30);
	OK(dl_parse_rate, "1.5 GB/s", 1500000000ULL);
	OK(dl_parse_rate, "1000/s", 1000);
	OK(dl_parse_rate, "0/s", 0);
	BAD(dl_parse_rate, "500MB", -EINVAL, "/s");
	BAD(dl_parse_rate, "500", -EINVAL, "/s");
	BAD(dl_parse_rate, "/s", -EINVAL, "empty");
	BAD(dl_parse_rate, "-1MB/s", -EINVAL, "negative");
	BAD(dl_parse_rate, "5M/s", -EINVAL, "ambiguous");
	BAD(dl_parse_rate, "20EiB/s", -ERANGE, "too large");
	BAD(dl_parse_rate, "500MB/h", -EINVAL, "/s");
}

static void test_times(void)
{
	OK(dl_parse_time, "150us", 150000);
	OK(dl_parse_time, "150\xc2\xb5s", 150000);
	OK(dl_parse_time, "3ms", 3000000);
	OK(dl_parse_time, "1.5s", 1500000000ULL);
	OK(dl_parse_time, "1ns", 1);
	OK(dl_parse_time, "0.001us", 1);
	OK(dl_parse_time, "2min", 120000000000ULL);
	OK(dl_parse_time, "2m", 120000000000ULL);
	OK(dl_parse_time, "1h", 3600000000000ULL);
	OK(dl_parse_time, "1.25 ms", 1250000);
	OK(dl_parse_time, "0s", 0);
	BAD(dl_parse_time, "3", -EINVAL, "needs a unit");
	BAD(dl_parse_time, "1.5ns", -EINVAL, "whole number of nanoseconds");
	BAD(dl_parse_time, "-1s", -EINVAL, "negative");
	BAD(dl_parse_time, "5 days", -EINVAL, "unknown time unit");
	BAD(dl_parse_time, "5S", -EINVAL, "unknown time unit");
	BAD(dl_parse_time, "600000000h", -ERANGE, "too long");
	BAD(dl_parse_time, "ms", -EINVAL, "number");
}

static void test_counts(void)
{
	OK(dl_parse_count, "168", 168);
	OK(dl_parse_count, "2k", 2000);
	OK(dl_parse_count, "2K", 2000);
	OK(dl_parse_count, "1M", 1000000);
	OK(dl_parse_count, "10M", 10000000);
	OK(dl_parse_count, "3G", 3000000000ULL);
	OK(dl_parse_count, "1T", 1000000000000ULL);
	OK(dl_parse_count, "1Ki", 1024);
	OK(dl_parse_count, "2Mi", 2097152);
	OK(dl_parse_count, "1Gi", 1073741824ULL);
	OK(dl_parse_count, "1.5k", 1500);
	OK(dl_parse_count, "0", 0);
	OK(dl_parse_count, "18446744073709551615", UINT64_MAX);
	BAD(dl_parse_count, "1.5", -EINVAL, "whole number");
	BAD(dl_parse_count, "1.0005k", -EINVAL, "whole number");
	BAD(dl_parse_count, "1m", -EINVAL, "ambiguous");
	BAD(dl_parse_count, "1KB", -EINVAL, "unknown suffix");
	BAD(dl_parse_count, "-1", -EINVAL, "negative");
	BAD(dl_parse_count, "two", -EINVAL, "number");
	BAD(dl_parse_count, "18446744073709551616", -ERANGE, "too large");
	BAD(dl_parse_count, "20000000T", -ERANGE, "too large");
}

static void test_format_size(void)
{
	char buf[32];

	CHECK(!strcmp(dl_format_size(0, buf, sizeof(buf)), "0 B"), "0 -> %s", buf);
	CHECK(!strcmp(dl_format_size(1023, buf, sizeof(buf)), "1023 B"), "1023 -> %s", buf);
	CHECK(!strcmp(dl_format_size(1536, buf, sizeof(buf)), "1.50 KiB"), "1536 -> %s", buf);
	CHECK(!strcmp(dl_format_size(1ULL << 31, buf, sizeof(buf)), "2.00 GiB"), "2GiB -> %s",
	      buf);
	CHECK(!strcmp(dl_format_size(140000000ULL, buf, sizeof(buf)), "133.51 MiB"),
	      "140MB -> %s", buf);
	CHECK(!strcmp(dl_format_size(UINT64_MAX, buf, sizeof(buf)), "16.00 EiB"), "max -> %s",
	      buf);
	CHECK(dl_format_size(1536, buf, 4) == buf && strlen(buf) == 3, "truncates: %s", buf);
}

int main(void)
{
	test_sizes();
	test_rates();
	test_times();
	test_counts();
	test_format_size();
	printf("units: %u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
