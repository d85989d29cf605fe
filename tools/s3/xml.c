/* S3's XML replies: a growing buffer, escaping, error documents, dates, ETags. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "s3_i.h"

void dl_s3_buf_put(struct dl_s3_buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

void dl_s3_buf_printf(struct dl_s3_buf *b, const char *fmt, ...)
{
	char tmp[512], *big = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = 1;
		return;
	}
	if ((size_t)n < sizeof(tmp)) {
		dl_s3_buf_put(b, tmp, (size_t)n);
		return;
	}
	big = malloc((size_t)n + 1);
	if (!big) {
		b->oom = 1;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	dl_s3_buf_put(b, big, (size_t)n);
	free(big);
}

void dl_s3_buf_xml(struct dl_s3_buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': dl_s3_buf_put(b, "&lt;", 4); break;
		case '>': dl_s3_buf_put(b, "&gt;", 4); break;
		case '&': dl_s3_buf_put(b, "&amp;", 5); break;
		case '"': dl_s3_buf_put(b, "&quot;", 6); break;
		case '\'': dl_s3_buf_put(b, "&apos;", 6); break;
		default: dl_s3_buf_put(b, s, 1); break;
		}
	}
}

void dl_s3_buf_url(struct dl_s3_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
			dl_s3_buf_put(b, s, 1);
		} else {
			char e[3] = {'%', hex[c >> 4], hex[c & 15]};

			dl_s3_buf_put(b, e, 3);
		}
	}
}

void dl_s3_buf_free(struct dl_s3_buf *b)
{
	free(b->p);
	*b = (struct dl_s3_buf){0};
}

enum MHD_Result dl_s3_reply_buf(struct MHD_Connection *c, unsigned status, struct dl_s3_buf *b)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (b->oom) {
		dl_s3_buf_free(b);
		return MHD_NO;	/* closes the connection: nothing else to say */
	}
	r = MHD_create_response_from_buffer(b->len, b->p ? b->p : (char *)"",
					    b->p ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!r) {
		dl_s3_buf_free(b);
		return MHD_NO;
	}
	*b = (struct dl_s3_buf){0};
	MHD_add_response_header(r, "Content-Type", "application/xml");
	MHD_add_response_header(r, "Server", "dliofs");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result dl_s3_reply_error(struct MHD_Connection *c, unsigned status, const char *code,
				  const char *msg, const char *resource)
{
	return dl_s3_reply_error_hdr(c, status, code, msg, resource, NULL, NULL);
}

enum MHD_Result dl_s3_reply_error_hdr(struct MHD_Connection *c, unsigned status,
				      const char *code, const char *msg, const char *resource,
				      const char *hname, const char *hvalue)
{
	struct dl_s3_buf b = {0};
	struct MHD_Response *r;
	enum MHD_Result ret;

	dl_s3_buf_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code>"
			 "<Message>", code);
	dl_s3_buf_xml(&b, msg);
	dl_s3_buf_printf(&b, "</Message>");
	if (resource) {
		dl_s3_buf_printf(&b, "<Resource>");
		dl_s3_buf_xml(&b, resource);
		dl_s3_buf_printf(&b, "</Resource>");
	}
	dl_s3_buf_printf(&b, "<RequestId>0</RequestId></Error>");
	if (!hname)
		return dl_s3_reply_buf(c, status, &b);
	if (b.oom) {
		dl_s3_buf_free(&b);
		return MHD_NO;
	}
	r = MHD_create_response_from_buffer(b.len, b.p, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		dl_s3_buf_free(&b);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/xml");
	MHD_add_response_header(r, "Server", "dliofs");
	MHD_add_response_header(r, hname, hvalue);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

void dl_s3_http_date(uint64_t secs, char *buf, size_t len)
{
	time_t t = (time_t)secs;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

void dl_s3_iso_date(uint64_t secs, char *buf, size_t len)
{
	time_t t = (time_t)secs;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The content key already hashes seed, dataset, split and index: with the
 * part and the size it names the bytes, so the tag is stable across runs. */
void dl_s3_etag(const struct dl_file *f, char *buf, size_t len)
{
	uint64_t a = mix64(f->key ^ mix64(f->part + 0x9e3779b97f4a7c15ULL));
	uint64_t b = mix64(a ^ mix64(f->size));

	snprintf(buf, len, "\"%016llx%016llx\"", (unsigned long long)a, (unsigned long long)b);
}
