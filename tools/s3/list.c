/* ListBuckets and ListObjects (v1 with marker, v2 with continuation tokens
 * and start-after): pages walk the computed key space in order, seeking by
 * bisection, so no listing holds more than one page. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/clock.h"
#include "s3_i.h"

#define XML_HEAD "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define S3_NS "http://s3.amazonaws.com/doc/2006-03-01/"

enum MHD_Result dl_s3_list_buckets(struct dl_s3 *s, struct MHD_Connection *c)
{
	struct dl_s3_buf b = {0};
	char date[64];

	dl_s3_iso_date(s->start_real_s, date, sizeof(date));
	dl_s3_buf_printf(&b, XML_HEAD "<ListAllMyBucketsResult xmlns=\"" S3_NS "\">"
			 "<Owner><ID>dliofs</ID><DisplayName>dliofs</DisplayName></Owner><Buckets>");
	for (unsigned i = 0; i < s->nbuckets; i++) {
		dl_s3_buf_printf(&b, "<Bucket><Name>");
		dl_s3_buf_xml(&b, s->buckets[i].name);
		dl_s3_buf_printf(&b, "</Name><CreationDate>%s</CreationDate></Bucket>", date);
	}
	dl_s3_buf_printf(&b, "</Buckets></ListAllMyBucketsResult>");
	return dl_s3_reply_buf(c, MHD_HTTP_OK, &b);
}

static const char *arg(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

/* A key or prefix as the request asked: percent-encoded with encoding-type=url. */
static void put_key(struct dl_s3_buf *b, const char *s, int url)
{
	if (url)
		dl_s3_buf_url(b, s);
	else
		dl_s3_buf_xml(b, s);
}

void dl_s3_list_elem(struct dl_s3_buf *b, const char *tag, const char *v, int url)
{
	dl_s3_buf_printf(b, "<%s>", tag);
	put_key(b, v, url);
	dl_s3_buf_printf(b, "</%s>", tag);
}

void dl_s3_list_head(struct dl_s3_buf *b, const char *bucket, const char *prefix,
		     const char *delim, uint64_t max_keys, int url, int v2, const char *marker,
		     const char *after, const char *token)
{
	dl_s3_buf_printf(b, XML_HEAD "<ListBucketResult xmlns=\"" S3_NS "\"><Name>");
	dl_s3_buf_xml(b, bucket);
	dl_s3_buf_printf(b, "</Name>");
	dl_s3_list_elem(b, "Prefix", prefix, url);
	if (delim)
		dl_s3_list_elem(b, "Delimiter", delim, url);
	dl_s3_buf_printf(b, "<MaxKeys>%" PRIu64 "</MaxKeys>", max_keys);
	if (url)
		dl_s3_buf_printf(b, "<EncodingType>url</EncodingType>");
	if (!v2)
		dl_s3_list_elem(b, "Marker", marker ? marker : "", url);
	else if (after)
		dl_s3_list_elem(b, "StartAfter", after, url);
	if (v2 && token) {
		dl_s3_buf_printf(b, "<ContinuationToken>");
		dl_s3_buf_xml(b, token);
		dl_s3_buf_printf(b, "</ContinuationToken>");
	}
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

enum MHD_Result dl_s3_list_objects(struct dl_s3 *s, const struct dl_s3_bucket *bk,
				   struct MHD_Connection *c)
{
	const char *lt = arg(c, "list-type"), *prefix = arg(c, "prefix"), *delim = arg(c, "delimiter");
	const char *mk = arg(c, "max-keys"), *token = arg(c, "continuation-token");
	const char *after = arg(c, "start-after"), *marker = arg(c, "marker"), *enc = arg(c, "encoding-type");
	uint64_t max_keys = 1000, o = 0, n = 0;
	size_t plen, dlen;
	int v2, url, truncated = 0;
	char key[DL_S3_KEY_MAX], etag[40], date[64], last[DL_S3_KEY_MAX] = "";
	struct dl_s3_buf b = {0};

	v2 = lt && strcmp(lt, "2") == 0;
	if (lt && !v2 && strcmp(lt, "1") != 0)
		return dl_s3_reply_error(c, 400, "InvalidArgument", "list-type must be 1 or 2", lt);
	if (enc && strcmp(enc, "url") != 0)
		return dl_s3_reply_error(c, 400, "InvalidArgument",
					 "encoding-type must be url", enc);
	url = enc != NULL;
	if (mk && parse_u64(mk, &max_keys))
		return dl_s3_reply_error(c, 400, "InvalidArgument",
					 "max-keys must be a non-negative integer", mk);
	if (max_keys > 1000)
		max_keys = 1000;
	prefix = prefix ? prefix : "";
	delim = delim && *delim ? delim : NULL;
	plen = strlen(prefix);
	dlen = delim ? strlen(delim) : 0;

	/* Where the page starts: the token is the ordinal of the next key. */
	if (v2 && token) {
		if (parse_u64(token, &o) || o > bk->total)
			return dl_s3_reply_error(c, 400, "InvalidArgument",
						 "The continuation token provided is incorrect",
						 token);
	} else if (v2 ? after != NULL : marker != NULL) {
		o = dl_s3_key_seek(s, bk, v2 ? after : marker, 0, 0);
	}
	if (plen) {
		uint64_t p = dl_s3_key_seek(s, bk, prefix, 1, 0);

		o = p > o ? p : o;
	}

	/* A page is one metadata request to the storage. */
	struct dl_pacer_req preq = {.cls = DL_OP_META};
	struct dl_pacer_result pres;

	if (dl_s3_pace(s, c, &preq, &pres))
		dl_pacer_complete(s->pacer, &preq, &pres, dl_mono_ns());
	dl_s3_iso_date(s->start_real_s, date, sizeof(date));
	dl_s3_list_head(&b, bk->name, prefix, delim, max_keys, url, v2, marker, after, token);

	struct dl_s3_buf items = {0};
	while (o < bk->total) {
		struct dl_file f;
		const char *d;

		if (dl_s3_key_at(s, bk, o, key, sizeof(key), &f))
			break;
		if (strncmp(key, prefix, plen) != 0)
			break;	/* the keys with the prefix are contiguous */
		if (n >= max_keys) {
			/* max-keys=0 asks for no keys: a page that is not truncated,
			 * or a paginator would ask again forever. */
			truncated = max_keys > 0;
			break;
		}
		d = delim ? strstr(key + plen, delim) : NULL;
		if (d) {
			/* One CommonPrefix stands for every key under it. */
			size_t cplen = (size_t)(d - key) + dlen;

			key[cplen] = 0;
			dl_s3_buf_printf(&items, "<CommonPrefixes>");
			dl_s3_list_elem(&items, "Prefix", key, url);
			dl_s3_buf_printf(&items, "</CommonPrefixes>");
			snprintf(last, sizeof(last), "%s", key);
			o = dl_s3_key_seek(s, bk, key, 0, 1);
			n++;
			continue;
		}
		dl_s3_etag(&f, etag, sizeof(etag));
		dl_s3_buf_printf(&items, "<Contents>");
		dl_s3_list_elem(&items, "Key", key, url);
		dl_s3_buf_printf(&items, "<LastModified>%s</LastModified><ETag>&quot;%.32s&quot;</ETag>"
				 "<Size>%" PRIu64 "</Size><StorageClass>STANDARD</StorageClass>"
				 "</Contents>", date, etag + 1, f.size);
		snprintf(last, sizeof(last), "%s", key);
		o++;
		n++;
	}
	if (v2) {
		dl_s3_buf_printf(&b, "<KeyCount>%" PRIu64 "</KeyCount>", n);
		if (truncated)
			dl_s3_buf_printf(&b, "<NextContinuationToken>%" PRIu64
					 "</NextContinuationToken>", o);
	} else if (truncated && delim) {
		/* v1 gives the next marker only with a delimiter; the last key otherwise. */
		dl_s3_list_elem(&b, "NextMarker", last, url);
	}
	dl_s3_buf_printf(&b, "<IsTruncated>%s</IsTruncated>", truncated ? "true" : "false");
	if (items.oom)
		b.oom = 1;
	else if (items.len)
		dl_s3_buf_printf(&b, "%s", items.p);
	dl_s3_buf_free(&items);
	dl_s3_buf_printf(&b, "</ListBucketResult>");
	return dl_s3_reply_buf(c, MHD_HTTP_OK, &b);
}
