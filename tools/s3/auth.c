/* SigV4 (AWS4-HMAC-SHA256), header and presigned-query forms: with the
 * config's key pair the request's canonical form is rebuilt from what came
 * on the wire (the raw URI, the signed headers) and its signature compared.
 * Without keys every request is accepted, whatever it carries. */
#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "s3_i.h"
#include "sigv4.h"

/* Percent-decode s[0, n) into out (NUL-terminated); -EINVAL on a bad escape. */
static int pct_decode(const char *s, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '%') {
			if (i + 2 >= n || dl_s3_hexval(s[i + 1]) < 0 || dl_s3_hexval(s[i + 2]) < 0)
				return -EINVAL;
			c = (char)(dl_s3_hexval(s[i + 1]) * 16 + dl_s3_hexval(s[i + 2]));
			i += 2;
		}
		if (o + 1 >= outlen)
			return -EINVAL;
		out[o++] = c;
	}
	out[o] = 0;
	return 0;
}

/* SigV4's encoding: every byte but the unreserved ones as %XX. */
static void sig_encode(struct dl_s3_buf *b, const char *s)
{
	static const char h[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~')
			dl_s3_buf_printf(b, "%c", c);
		else
			dl_s3_buf_printf(b, "%%%c%c", h[c >> 4], h[c & 15]);
	}
}

struct qpair {
	char *k, *v;	/* canonical (encoded) */
};

static int qcmp(const void *a, const void *b)
{
	const struct qpair *x = a, *y = b;
	int c = strcmp(x->k, y->k);

	return c ? c : strcmp(x->v, y->v);
}

/* The canonical query string of the raw query, without X-Amz-Signature. */
int dl_s3_canon_query(const char *q, struct dl_s3_buf *out)
{
	struct qpair *pairs = NULL;
	size_t n = 0, cap = 0;
	int ret = 0;

	while (q && *q) {
		const char *amp = strchr(q, '&'), *end = amp ? amp : q + strlen(q);
		const char *eq = memchr(q, '=', (size_t)(end - q));
		size_t kl = (size_t)((eq ? eq : end) - q);
		char k[1024], v[4096];
		struct dl_s3_buf kb = {0}, vb = {0};

		if (end > q) {
			if (pct_decode(q, kl, k, sizeof(k)) ||
			    pct_decode(eq ? eq + 1 : end, eq ? (size_t)(end - eq - 1) : 0, v,
				       sizeof(v))) {
				ret = -EINVAL;
				goto out;
			}
			if (strcmp(k, "X-Amz-Signature") != 0) {
				if (n == cap) {
					struct qpair *np;

					cap = cap ? cap * 2 : 16;
					np = realloc(pairs, cap * sizeof(*pairs));
					if (!np) {
						ret = -ENOMEM;
						goto out;
					}
					pairs = np;
				}
				sig_encode(&kb, k);
				sig_encode(&vb, v);
				dl_s3_buf_printf(&kb, "%s", "");
				dl_s3_buf_printf(&vb, "%s", "");
				if (kb.oom || vb.oom) {
					dl_s3_buf_free(&kb);
					dl_s3_buf_free(&vb);
					ret = -ENOMEM;
					goto out;
				}
				pairs[n].k = kb.p ? kb.p : strdup("");
				pairs[n].v = vb.p ? vb.p : strdup("");
				n++;
			}
		}
		q = amp ? amp + 1 : end;
	}
	if (n)
		qsort(pairs, n, sizeof(*pairs), qcmp);
	for (size_t i = 0; i < n; i++)
		dl_s3_buf_printf(out, "%s%s=%s", i ? "&" : "", pairs[i].k, pairs[i].v);
out:
	for (size_t i = 0; i < n; i++) {
		free(pairs[i].k);
		free(pairs[i].v);
	}
	free(pairs);
	return ret;
}

/* A header's value trimmed, inner runs of spaces as one. */
static void put_trimmed(struct dl_s3_buf *b, const char *v)
{
	int space = 0;

	while (*v == ' ' || *v == '\t')
		v++;
	for (; *v; v++) {
		if (*v == ' ' || *v == '\t') {
			space = 1;
			continue;
		}
		if (space)
			dl_s3_buf_printf(b, " ");
		space = 0;
		dl_s3_buf_printf(b, "%c", *v);
	}
}

/* `name=value` out of Authorization's comma-separated list. */
static int auth_field(const char *h, const char *name, char *out, size_t len)
{
	size_t nl = strlen(name);

	for (const char *p = h; (p = strstr(p, name)); p += nl) {
		if ((p == h || p[-1] == ' ' || p[-1] == ',') && p[nl] == '=') {
			const char *v = p + nl + 1, *e = strchr(v, ',');
			size_t vl = e ? (size_t)(e - v) : strlen(v);

			while (vl && v[vl - 1] == ' ')
				vl--;
			if (vl >= len)
				return -EINVAL;
			memcpy(out, v, vl);
			out[vl] = 0;
			return 0;
		}
	}
	return -ENOENT;
}

static const char *arg(struct MHD_Connection *c, const char *k)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}

/* A signed request is good for a while only: S3's 15 minutes of clock
 * skew for a header signature, X-Amz-Expires (at most 7 days) for a
 * presigned URL, so a captured request cannot be replayed forever. */
static int check_time(struct MHD_Connection *c, const char *amzdate, int presigned,
		      const char **code)
{
	struct tm tm = {0};
	const char *end = strptime(amzdate, "%Y%m%dT%H%M%SZ", &tm);
	int64_t t, now = (int64_t)time(NULL);

	if (!end || *end) {
		*code = "AccessDenied";
		return -EACCES;
	}
	t = (int64_t)timegm(&tm);
	if (presigned) {
		const char *e = arg(c, "X-Amz-Expires");
		char *ep;
		long exp = e ? strtol(e, &ep, 10) : -1;

		if (!e || *ep || exp < 1 || exp > 604800 || now > t + exp || t > now + 900) {
			*code = "AccessDenied";	/* S3: "Request has expired" */
			return -EACCES;
		}
		return 0;
	}
	if (t > now + 900 || t < now - 900) {
		*code = "RequestTimeTooSkewed";
		return -EACCES;
	}
	return 0;
}

void dl_s3_sha256_hex(const void *p, size_t n, char out[65])
{
	dl_sigv4_sha256_hex(p, n, out);
}

void dl_s3_chunk_sig(const struct dl_s3_sigv4 *sv, const char *prev, const char *kind,
		     const char *hash_hex, char out[65])
{
	char sts[512];

	/* aws-chunked: each chunk signs its data's hash after the signature
	 * before it (the first after the request's); the trailer its lines'. */
	if (strcmp(kind, "AWS4-HMAC-SHA256-PAYLOAD") == 0)
		snprintf(sts, sizeof(sts), "%s\n%s\n%s\n%s\n" DL_SIGV4_EMPTY_SHA256 "\n%s", kind, sv->date,
			 sv->scope, prev, hash_hex);
	else
		snprintf(sts, sizeof(sts), "%s\n%s\n%s\n%s\n%s", kind, sv->date, sv->scope, prev,
			 hash_hex);
	dl_sigv4_hmac_hex(sv->key, sts, out);
}

int dl_s3_auth(const struct dl_s3 *s, struct MHD_Connection *c, const char *method,
	       const char *raw_uri, const char **code)
{
	return dl_s3_auth_sig(s, c, method, raw_uri, code, NULL);
}

int dl_s3_auth_sig(const struct dl_s3 *s, struct MHD_Connection *c, const char *method,
		   const char *raw_uri, const char **code, struct dl_s3_sigv4 *sv)
{
	const struct dl_s3_cfg *k = &s->cfg->s3;
	const char *authz = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	const char *q, *payload, *amzdate;
	char cred[512], signed_h[1024], sig[128], scope[512], want[65], digest[65];
	unsigned char kd[32] = {0};
	struct dl_s3_buf cr = {0}, sts = {0};
	char *slash, *list;
	int presigned, ret = -EACCES;

	if (!k->access_key[0])
		return 0;
	*code = "AccessDenied";
	presigned = !authz && arg(c, "X-Amz-Signature");
	if (presigned) {
		const char *alg = arg(c, "X-Amz-Algorithm"), *cr_ = arg(c, "X-Amz-Credential");
		const char *sh = arg(c, "X-Amz-SignedHeaders"), *sg = arg(c, "X-Amz-Signature");

		if (!alg || strcmp(alg, "AWS4-HMAC-SHA256") || !cr_ || !sh ||
		    strlen(cr_) >= sizeof(cred) || strlen(sh) >= sizeof(signed_h) ||
		    strlen(sg) >= sizeof(sig))
			return -EACCES;
		strcpy(cred, cr_);
		strcpy(signed_h, sh);
		strcpy(sig, sg);
		amzdate = arg(c, "X-Amz-Date");
		payload = "UNSIGNED-PAYLOAD";
	} else {
		if (!authz || strncmp(authz, "AWS4-HMAC-SHA256 ", 17) ||
		    auth_field(authz, "Credential", cred, sizeof(cred)) ||
		    auth_field(authz, "SignedHeaders", signed_h, sizeof(signed_h)) ||
		    auth_field(authz, "Signature", sig, sizeof(sig)))
			return -EACCES;
		amzdate = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-amz-date");
		payload = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-amz-content-sha256");
		if (!payload)
			payload = DL_SIGV4_EMPTY_SHA256;
	}
	/* Credential = KEY/DATE/REGION/SERVICE/aws4_request */
	slash = strchr(cred, '/');
	if (!slash || !amzdate)
		return -EACCES;
	*slash = 0;
	if (strcmp(cred, k->access_key) != 0) {
		*code = "InvalidAccessKeyId";
		return -EACCES;
	}
	snprintf(scope, sizeof(scope), "%s", slash + 1);
	*code = "SignatureDoesNotMatch";

	q = strchr(raw_uri, '?');
	dl_s3_buf_printf(&cr, "%s\n%.*s\n", method, (int)(q ? q - raw_uri : (long)strlen(raw_uri)),
			 raw_uri);
	if (dl_s3_canon_query(q ? q + 1 : NULL, &cr))
		goto out;
	dl_s3_buf_printf(&cr, "\n");
	list = signed_h;
	while (list && *list) {
		char *semi = strchr(list, ';');
		const char *v;

		if (semi)
			*semi = 0;
		v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, list);
		dl_s3_buf_printf(&cr, "%s:", list);
		put_trimmed(&cr, v ? v : "");
		dl_s3_buf_printf(&cr, "\n");
		if (semi)
			*semi = ';';
		list = semi ? semi + 1 : NULL;
	}
	dl_s3_buf_printf(&cr, "\n%s\n%s", signed_h, payload);
	if (cr.oom)
		goto out;
	dl_sigv4_sha256_hex(cr.p, cr.len, digest);
	dl_s3_buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s\n%s", amzdate, scope, digest);
	/* kd stays past the check: the chunks of an aws-chunked body are signed with it. */
	if (sts.oom || dl_sigv4_signing_key(k->secret_key, scope, kd))
		goto out;
	dl_sigv4_hmac_hex(kd, sts.p, want);
	if (strlen(sig) != 64 || CRYPTO_memcmp(want, sig, 64) != 0)
		goto out;
	ret = check_time(c, amzdate, presigned, code);
	if (!ret && sv && !presigned && strlen(amzdate) < sizeof(sv->date) &&
	    strlen(scope) < sizeof(sv->scope)) {
		sv->have = 1;
		memcpy(sv->key, kd, 32);
		memcpy(sv->seed, want, 65);
		strcpy(sv->date, amzdate);
		strcpy(sv->scope, scope);
	}
out:
	OPENSSL_cleanse(kd, sizeof(kd));
	dl_s3_buf_free(&cr);
	dl_s3_buf_free(&sts);
	return ret;
}
