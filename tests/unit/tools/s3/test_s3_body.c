/* The S3 endpoint's body parsers (tools/s3/): the aws-chunked decoder fed
 * in pieces of every size (the same chunks, data and trailers whatever the
 * split; malformed framing refused), the checksums' check values from the
 * CRC catalogue ("123456789"), the XML bodies of CompleteMultipartUpload
 * and DeleteObjects (entities, namespaces, refused DOCTYPE and bad
 * numbers), and the backing directory's key check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3_i.h"
#include "tap.h"

struct seen {
	char data[256];
	size_t len;
	unsigned chunks, ends;
	char sigs[4][65];
	char trailer[128];
};

static int on_chunk(void *cls, uint64_t n, const char *sig)
{
	struct seen *s = cls;

	(void)n;
	if (s->chunks < 4)
		snprintf(s->sigs[s->chunks], 65, "%s", sig);
	s->chunks++;
	return 0;
}

static int on_data(void *cls, const char *p, size_t n)
{
	struct seen *s = cls;

	if (s->len + n <= sizeof(s->data)) {
		memcpy(s->data + s->len, p, n);
	}
	s->len += n;
	return 0;
}

static int on_end(void *cls)
{
	((struct seen *)cls)->ends++;
	return 0;
}

static int on_trailer(void *cls, const char *name, const char *value)
{
	struct seen *s = cls;

	snprintf(s->trailer, sizeof(s->trailer), "%s=%s", name, value);
	return 0;
}

static const struct dl_s3_chunked_ops ops = {on_chunk, on_data, on_end, on_trailer};

/* Feed `body` in pieces of `piece` bytes: 0, or the decoder's error. */
static int feed(const char *body, size_t piece, struct seen *s, int *done)
{
	struct dl_s3_chunked d = {0};
	size_t len = strlen(body);
	int ret = 0;

	memset(s, 0, sizeof(*s));
	for (size_t off = 0; off < len && !ret; off += piece)
		ret = dl_s3_chunked_feed(&d, body + off, len - off < piece ? len - off : piece, &ops, s);
	*done = dl_s3_chunked_done(&d);
	return ret;
}

static void check_chunked(void)
{
	char sig_a[65], sig_b[65], body[512];
	struct seen s;
	int done;

	memset(sig_a, 'a', 64);
	sig_a[64] = 0;
	memset(sig_b, '0', 64);
	sig_b[64] = 0;
	snprintf(body, sizeof(body), "5;chunk-signature=%s\r\nhello\r\n10;chunk-signature=%s\r\n"
		 " world, in two!\r\r\n0;chunk-signature=%s\r\n\r\n", sig_a, sig_b, sig_a);
	/* "10" is hex: sixteen bytes, one of them a CR inside the data. */
	for (size_t piece = 1; piece <= strlen(body); piece++) {
		int ret = feed(body, piece, &s, &done);

		CHECK(ret == 0 && done && s.len == 21 && memcmp(s.data, "hello world, in two!\r", 21) == 0 &&
			      s.chunks == 3 && s.ends == 3 && !strcmp(s.sigs[1], sig_b),
		      "signed, pieces of %zu: ret %d done %d len %zu chunks %u", piece, ret, done, s.len,
		      s.chunks);
		if (ret)
			break;
	}
	CHECK(feed("3\r\nabc\r\n0\r\nx-amz-checksum-crc32: NSRBwg==\r\n\r\n", 2, &s, &done) == 0 &&
		      done && !strcmp(s.trailer, "x-amz-checksum-crc32=NSRBwg==") && s.len == 3,
	      "unsigned with a trailer: %s", s.trailer);
	/* Malformed: refused, never more data than declared. */
	static const char *const bad[] = {
		"3\nabc\r\n0\r\n\r\n",			/* LF without CR */
		"3\r\nabcd\r\n0\r\n\r\n",		/* data longer than its size */
		"g\r\n",				/* not hex */
		"\r\n",					/* no size */
		"3;chunk-signature=abc\r\nabc\r\n",	/* short signature */
		"3;other=1\r\nabc\r\n",			/* unknown extension */
		"ffffffffffffffffff\r\n",		/* too large */
		"0\r\n\r\nmore",			/* bytes after the end */
		"0\r\nnocolon\r\n\r\n",			/* a trailer line without ':' */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(feed(bad[i], 1, &s, &done) != 0 && s.len <= 3, "bad[%zu] refused", i);
	CHECK(feed("3\r\nabc\r\n", 4, &s, &done) == 0 && !done, "no last chunk: not done");
}

static void check_sums(void)
{
	static const struct {
		int alg;
		const char *hex;
	} v[] = {
		{DL_S3_SUM_CRC32, "cbf43926"},
		{DL_S3_SUM_CRC32C, "e3069283"},
		{DL_S3_SUM_CRC64NVME, "ae8b14860a799888"},
		{DL_S3_SUM_SHA1, "f7c3bc1d808e04732adf679965ccc34ca7ae3441"},
		{DL_S3_SUM_MD5, "25f9e794323b453885f5181f1b624d0b"},
	};
	struct dl_s3_crc *t = malloc(sizeof(*t));

	if (!t)
		return;
	dl_s3_crc_init(t);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct dl_s3_sum k;
		unsigned char d[64];
		char hex[129] = "";
		int n;

		CHECK(dl_s3_sum_begin(&k, t, v[i].alg) == 0, "begin %d", v[i].alg);
		/* In two pieces: the state carries over. */
		dl_s3_sum_update(&k, "1234", 4);
		dl_s3_sum_update(&k, "56789", 5);
		n = dl_s3_sum_final(&k, d);
		for (int j = 0; j < n; j++)
			snprintf(hex + 2 * j, 3, "%02x", d[j]);
		CHECK(strcmp(hex, v[i].hex) == 0, "%s: %s", dl_s3_sum_name(v[i].alg), hex);
		dl_s3_sum_free(&k);
	}
	CHECK(dl_s3_sum_alg("x-amz-checksum-CRC32C") == DL_S3_SUM_CRC32C, "header names");
	CHECK(dl_s3_sum_alg("x-amz-checksum-md4") < 0 && dl_s3_sum_alg("content-md5") < 0,
	      "other headers");
	free(t);
}

static int parse(const char *xml, int kind, struct dl_s3_xmlbody *x)
{
	return dl_s3_xmlbody_parse(xml, strlen(xml), kind, x);
}

static void check_xml(void)
{
	struct dl_s3_xmlbody x;

	CHECK(parse("<?xml version=\"1.0\"?><CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/"
		    "doc/2006-03-01/\"><Part><PartNumber>1</PartNumber><ETag>&quot;00ff&quot;</ETag>"
		    "</Part>\n <Part><ETag>ab</ETag><PartNumber>10000</PartNumber></Part>"
		    "</CompleteMultipartUpload>", DL_S3_XML_COMPLETE, &x) == 0 &&
		      x.n == 2 && x.parts[0].num == 1 && !strcmp(x.parts[0].etag, "00ff") &&
		      x.parts[1].num == 10000 && !strcmp(x.parts[1].etag, "ab"),
	      "complete: 2 parts");
	dl_s3_xmlbody_free(&x);
	CHECK(parse("<Delete><Quiet>true</Quiet><Object><Key>a &amp; b/&#233;</Key></Object>"
		    "<Object><Key>c</Key><VersionId>1</VersionId></Object></Delete>",
		    DL_S3_XML_DELETE, &x) == 0 &&
		      x.n == 2 && x.quiet && !strcmp(x.keys[0], "a & b/\xc3\xa9") &&
		      !strcmp(x.keys[1], "c"),
	      "delete: 2 keys, quiet");
	dl_s3_xmlbody_free(&x);
	static const char *const bad_complete[] = {
		"<CompleteMultipartUpload></CompleteMultipartUpload>",	/* no parts */
		"<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>a</ETag></Part>"
		"</CompleteMultipartUpload>",
		"<CompleteMultipartUpload><Part><PartNumber>10001</PartNumber><ETag>a</ETag></Part>"
		"</CompleteMultipartUpload>",
		"<CompleteMultipartUpload><Part><PartNumber>1x</PartNumber><ETag>a</ETag></Part>"
		"</CompleteMultipartUpload>",
		"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part>"
		"</CompleteMultipartUpload>",				/* no ETag */
		"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>a</ETag></Part>",
		"<Delete><Part><PartNumber>1</PartNumber><ETag>a</ETag></Part></Delete>",
		"<!DOCTYPE d [<!ENTITY a \"aaaa\">]><CompleteMultipartUpload><Part><PartNumber>1"
		"</PartNumber><ETag>&a;</ETag></Part></CompleteMultipartUpload>",
		"",
	};
	for (size_t i = 0; i < sizeof(bad_complete) / sizeof(bad_complete[0]); i++) {
		CHECK(parse(bad_complete[i], DL_S3_XML_COMPLETE, &x) != 0 && x.n == 0 && !x.parts,
		      "bad complete[%zu] refused", i);
	}
	CHECK(parse("<Delete><Object></Object></Delete>", DL_S3_XML_DELETE, &x) != 0,
	      "an Object without a Key");
}

static void check_keys(void)
{
	static const char *const good[] = {"a", "a/b", "a/b/", "x.y", "..a", "a/.b", "d\xc3\xa9"};
	static const char *const bad[] = {"", "/a", "a//b", "./a", "a/./b", "a/..", "../a",
					  ".dliofs.tmp.1", "a/.dliofs.uploads/x", "a/../b"};
	int dir;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK(dl_s3_store_key_ok(good[i], &dir) == 0 && dir == (good[i][strlen(good[i]) - 1] == '/'),
		      "key '%s' usable", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(dl_s3_store_key_ok(bad[i], &dir) != 0, "key '%s' refused", bad[i]);
}

int main(void)
{
	check_chunked();
	check_sums();
	check_xml();
	check_keys();
	return tap_done("s3_body");
}
