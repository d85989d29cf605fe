/* Output helpers: loading a trace with its messages, CSV strings (file
 * names can hold anything but NUL and '/'), and human-readable sizes and
 * times. JSON is dl_jw's (json.h). */
#include <string.h>

#include "dlio_trace_i.h"

int dt_load(const char *path, struct dl_trace_file *t)
{
	char why[256];
	int ret = dl_trace_load(path, t, why, sizeof(why));

	if (ret) {
		fprintf(stderr, "dlio-trace: %s: %s\n", path, why);
		return ret;
	}
	if (dl_trace_file_warning(t))
		fprintf(stderr, "dlio-trace: %s: %s\n", path, dl_trace_file_warning(t));
	return 0;
}

const char *dt_op_name(unsigned op)
{
	return op ? dl_trace_op_name(op) : "unknown";
}

unsigned dt_size_bucket(uint64_t size)
{
	unsigned b = 0;
	while (size) {
		b++;
		size >>= 1;
	}
	return b < DT_HBUCKETS ? b : DT_HBUCKETS - 1;
}

uint64_t dt_bucket_lo(unsigned b)
{
	return b ? 1ULL << (b - 1) : 0;
}


void dt_csv_str(FILE *fp, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, fp);
		return;
	}
	fputc('"', fp);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', fp);
		fputc(*s, fp);
	}
	fputc('"', fp);
}

void dt_fmt_bytes(double b, char *buf, size_t len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	unsigned u = 0;
	while (b >= 1024 && u < 5) {
		b /= 1024;
		u++;
	}
	if (u == 0 || b == (double)(uint64_t)b)
		snprintf(buf, len, "%.0f %s", b, units[u]);
	else
		snprintf(buf, len, "%.1f %s", b, units[u]);
}

void dt_fmt_ns(double ns, char *buf, size_t len)
{
	if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", ns / 1e9);
}
