/* A write's body as libmicrohttpd hands it over: aws-chunked bodies are
 * decoded, and what the client promised about the bytes is checked before
 * the write is acknowledged: the signed payload hash (x-amz-content-sha256),
 * each chunk's and the trailer's signature when keys are configured, the
 * x-amz-checksum-* (header or trailer), Content-MD5, and the decoded
 * length. The first failure sticks; the rest of the body is read and
 * dropped so the reply can be an S3 error on a connection kept alive. */
#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "s3_i.h"

static const char *hdr(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

void dl_s3_body_fail(struct dl_s3_body *bd, unsigned status, const char *code, const char *msg)
{
	if (!bd->status) {
		bd->status = status;
		bd->code = code;
		bd->msg = msg;
	}
}

enum MHD_Result dl_s3_body_reply_error(struct dl_s3_body *bd, struct MHD_Connection *c,
				       const char *resource)
{
	return dl_s3_reply_error(c, bd->status, bd->code, bd->msg, resource);
}

static int is_hex64(const char *s)
{
	if (strlen(s) != 64)
		return 0;
	for (int i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* The decoded bytes: into every running digest, then the file or memory. */
static int put_data(struct dl_s3_body *bd, const char *p, size_t n)
{
	if (bd->status)
		return 0;	/* failed already: drop */
	if (bd->sigs)
		dl_s3_sum_update(&bd->chunk_sha, p, n);
	if (bd->payload_want[0])
		dl_s3_sum_update(&bd->payload_sha, p, n);
	dl_s3_sum_update(&bd->md5, p, n);
	if (bd->sum.alg)
		dl_s3_sum_update(&bd->sum, p, n);
	bd->n += n;
	if (bd->discard)
		return 0;	/* a sink: checked and counted, not kept */
	if (bd->fd >= 0) {
		while (n) {
			ssize_t w = write(bd->fd, p, n);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				dl_s3_body_fail(bd, errno == ENOSPC || errno == EDQUOT ? 507 : 500,
						errno == ENOSPC || errno == EDQUOT ? "InsufficientStorage"
										  : "InternalError",
						"The object could not be written to the backing directory.");
				return 0;
			}
			p += w;
			n -= (size_t)w;
		}
		return 0;
	}
	if (bd->mem.len + n > bd->mem_max) {
		dl_s3_body_fail(bd, 400, "MaxMessageLengthExceeded",
				"Your request was too big.");
		return 0;
	}
	dl_s3_buf_put(&bd->mem, p, n);
	return 0;
}

static int on_chunk(void *cls, uint64_t size, const char *sig)
{
	struct dl_s3_body *bd = cls;

	(void)size;
	if (!bd->sigs)
		return 0;
	if (!sig[0]) {
		dl_s3_body_fail(bd, 403, "SignatureDoesNotMatch",
				"A chunk of a signed aws-chunked body has no chunk-signature.");
		return 0;
	}
	memcpy(bd->chunk_sig, sig, 65);
	dl_s3_sum_free(&bd->chunk_sha);
	if (dl_s3_sum_begin(&bd->chunk_sha, &bd->s->crc, DL_S3_SUM_SHA256))
		dl_s3_body_fail(bd, 500, "InternalError", "Out of memory.");
	return 0;
}

static int on_data(void *cls, const char *p, size_t n)
{
	return put_data(cls, p, n);
}

static int on_chunk_end(void *cls)
{
	struct dl_s3_body *bd = cls;
	unsigned char h[64];
	char hx[65], want[65];
	int n;

	if (!bd->sigs || bd->status)
		return 0;
	n = dl_s3_sum_final(&bd->chunk_sha, h);
	if (n != 32) {
		dl_s3_body_fail(bd, 500, "InternalError", "Out of memory.");
		return 0;
	}
	for (int i = 0; i < 32; i++)
		snprintf(hx + 2 * i, 3, "%02x", h[i]);
	dl_s3_chunk_sig(&bd->sv, bd->prev_sig, "AWS4-HMAC-SHA256-PAYLOAD", hx, want);
	if (CRYPTO_memcmp(want, bd->chunk_sig, 64) != 0) {
		dl_s3_body_fail(bd, 403, "SignatureDoesNotMatch",
				"The chunk signature we calculated does not match the one you provided.");
		return 0;
	}
	memcpy(bd->prev_sig, want, 65);
	return 0;
}

static int on_trailer(void *cls, const char *name, const char *value)
{
	struct dl_s3_body *bd = cls;
	int alg;

	if (strcasecmp(name, "x-amz-trailer-signature") == 0) {
		snprintf(bd->trailer_sig_got, sizeof(bd->trailer_sig_got), "%s", value);
		return 0;
	}
	dl_s3_buf_printf(&bd->trailers, "%s:%s\n", name, value);
	alg = dl_s3_sum_alg(name);
	if (alg > 0 && alg == bd->sum.alg)
		snprintf(bd->sum_want, sizeof(bd->sum_want), "%s", value);
	return 0;
}

static const struct dl_s3_chunked_ops chunk_ops = {
	.chunk = on_chunk, .data = on_data, .chunk_end = on_chunk_end, .trailer = on_trailer,
};

struct sum_pick {
	int alg;
	const char *value;
};

static enum MHD_Result pick_sum(void *cls, enum MHD_ValueKind kind, const char *key,
				const char *value)
{
	struct sum_pick *sp = cls;
	int alg = dl_s3_sum_alg(key);

	(void)kind;
	if (alg > 0) {
		sp->alg = alg;
		sp->value = value;
	}
	return MHD_YES;
}

int dl_s3_body_begin(struct dl_s3_body *bd, struct dl_s3 *s, struct MHD_Connection *c,
		     const struct dl_s3_sigv4 *sv, int fd, size_t mem_max)
{
	const char *payload = hdr(c, "x-amz-content-sha256"), *md5 = hdr(c, "Content-MD5");
	const char *trailer = hdr(c, "x-amz-trailer"), *dlen = hdr(c, "x-amz-decoded-content-length");
	struct sum_pick sp = {0};
	char *end;

	*bd = (struct dl_s3_body){.s = s, .fd = fd, .mem_max = mem_max, .want_len = ~0ULL};
	if (sv)
		bd->sv = *sv;
	if (dl_s3_sum_begin(&bd->md5, &s->crc, DL_S3_SUM_MD5))
		goto oom;
	/* A signed request without the header was signed as an empty body
	 * (auth.c's canonical request): hold the body to that. */
	if (!payload && bd->sv.have)
		payload = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
	if (payload && strncmp(payload, "STREAMING-", 10) == 0) {
		bd->chunked = 1;
		if (!strcmp(payload, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER")) {
			bd->trailer_sig = bd->sv.have;
		} else if (strcmp(payload, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD") != 0 &&
			   strcmp(payload, "STREAMING-UNSIGNED-PAYLOAD-TRAILER") != 0) {
			dl_s3_body_fail(bd, 501, "NotImplemented",
					"This x-amz-content-sha256 streaming mode is not implemented.");
			return -EINVAL;
		}
		/* Signed chunks are checked when the request's signature was. */
		bd->sigs = bd->sv.have && strncmp(payload, "STREAMING-AWS4-HMAC-SHA256-", 27) == 0;
		memcpy(bd->prev_sig, bd->sv.seed, 65);
		if (!dlen) {
			dl_s3_body_fail(bd, 411, "MissingContentLength",
					"An aws-chunked body needs x-amz-decoded-content-length.");
			return -EINVAL;
		}
	} else if (payload && is_hex64(payload)) {
		snprintf(bd->payload_want, sizeof(bd->payload_want), "%s", payload);
		if (dl_s3_sum_begin(&bd->payload_sha, &s->crc, DL_S3_SUM_SHA256))
			goto oom;
	} else if (payload && strcmp(payload, "UNSIGNED-PAYLOAD") != 0) {
		dl_s3_body_fail(bd, 400, "InvalidArgument",
				"x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-..., or a SHA-256.");
		return -EINVAL;
	}
	if (dlen) {
		errno = 0;
		bd->want_len = strtoull(dlen, &end, 10);
		if (*dlen < '0' || *dlen > '9' || *end || errno) {
			dl_s3_body_fail(bd, 400, "InvalidArgument",
					"x-amz-decoded-content-length must be a number.");
			return -EINVAL;
		}
	}
	if (md5)
		snprintf(bd->md5_want, sizeof(bd->md5_want), "%s", md5);
	/* A checksum: a header's value now, or the trailer x-amz-trailer names. */
	MHD_get_connection_values(c, MHD_HEADER_KIND, pick_sum, &sp);
	if (trailer) {
		int alg = dl_s3_sum_alg(trailer);

		if (alg < 0 || !bd->chunked) {
			dl_s3_body_fail(bd, 400, "InvalidRequest",
					"x-amz-trailer must name an x-amz-checksum-* of an aws-chunked body.");
			return -EINVAL;
		}
		sp.alg = alg;
		sp.value = NULL;
	}
	if (sp.alg) {
		if (dl_s3_sum_begin(&bd->sum, &s->crc, sp.alg))
			goto oom;
		if (sp.value)
			snprintf(bd->sum_want, sizeof(bd->sum_want), "%s", sp.value);
	}
	return 0;
oom:
	dl_s3_body_fail(bd, 500, "InternalError", "Out of memory.");
	return -ENOMEM;
}

void dl_s3_body_feed(struct dl_s3_body *bd, const char *p, size_t n)
{
	int ret;

	if (!bd->chunked) {
		put_data(bd, p, n);
		return;
	}
	if (bd->status == 400 && bd->code && !strcmp(bd->code, "IncompleteBody"))
		return;	/* the decoder stopped: the rest is not parsed */
	ret = dl_s3_chunked_feed(&bd->dec, p, n, &chunk_ops, bd);
	if (ret == -EINVAL)
		dl_s3_body_fail(bd, 400, "IncompleteBody",
				"The aws-chunked body is malformed.");
}

int dl_s3_body_end(struct dl_s3_body *bd)
{
	unsigned char d[64];
	char b64[128], hx[65];
	int n;

	if (bd->status)
		goto out;
	if (bd->chunked && !dl_s3_chunked_done(&bd->dec)) {
		dl_s3_body_fail(bd, 400, "IncompleteBody",
				"The aws-chunked body ended before its last chunk.");
		goto out;
	}
	if (bd->want_len != ~0ULL && bd->n != bd->want_len) {
		dl_s3_body_fail(bd, 400, "IncompleteBody",
				"The body's length is not x-amz-decoded-content-length.");
		goto out;
	}
	if (bd->payload_want[0]) {
		n = dl_s3_sum_final(&bd->payload_sha, d);
		for (int i = 0; i < 32 && n == 32; i++)
			snprintf(hx + 2 * i, 3, "%02x", d[i]);
		if (n != 32 || strcmp(hx, bd->payload_want) != 0) {
			dl_s3_body_fail(bd, 400, "XAmzContentSHA256Mismatch",
					"The provided 'x-amz-content-sha256' header does not match what was computed.");
			goto out;
		}
	}
	if (bd->trailer_sig) {
		char want[65];

		dl_s3_sha256_hex(bd->trailers.p ? bd->trailers.p : "", bd->trailers.len, hx);
		dl_s3_chunk_sig(&bd->sv, bd->prev_sig, "AWS4-HMAC-SHA256-TRAILER", hx, want);
		if (strlen(bd->trailer_sig_got) != 64 ||
		    CRYPTO_memcmp(want, bd->trailer_sig_got, 64) != 0) {
			dl_s3_body_fail(bd, 403, "SignatureDoesNotMatch",
					"The trailer signature we calculated does not match the one you provided.");
			goto out;
		}
	}
	n = dl_s3_sum_final(&bd->md5, bd->md5_raw);
	if (n != 16) {
		dl_s3_body_fail(bd, 500, "InternalError", "Out of memory.");
		goto out;
	}
	if (bd->md5_want[0]) {
		dl_s3_base64(bd->md5_raw, 16, b64, sizeof(b64));
		if (strcmp(b64, bd->md5_want) != 0) {
			dl_s3_body_fail(bd, 400, "BadDigest",
					"The Content-MD5 you specified did not match what we received.");
			goto out;
		}
	}
	if (bd->sum.alg) {
		n = dl_s3_sum_final(&bd->sum, d);
		if (n > 0)
			dl_s3_base64(d, (size_t)n, b64, sizeof(b64));
		if (!bd->sum_want[0]) {
			dl_s3_body_fail(bd, 400, "InvalidRequest",
					"The checksum named by x-amz-trailer did not come.");
		} else if (n <= 0 || strcmp(b64, bd->sum_want) != 0) {
			dl_s3_body_fail(bd, 400, "BadDigest",
					"The checksum you specified did not match the calculated checksum.");
		}
	}
out:
	return bd->status ? -EINVAL : 0;
}

void dl_s3_body_free(struct dl_s3_body *bd)
{
	dl_s3_sum_free(&bd->chunk_sha);
	dl_s3_sum_free(&bd->payload_sha);
	dl_s3_sum_free(&bd->md5);
	dl_s3_sum_free(&bd->sum);
	dl_s3_buf_free(&bd->mem);
	dl_s3_buf_free(&bd->trailers);
}
