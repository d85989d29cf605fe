/* SigV4's hashing and signing key chain (sigv4.h), on libcrypto. */
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

#include "sigv4.h"

static void hex(const unsigned char *p, size_t n, char *out)
{
	static const char h[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = h[p[i] >> 4];
		out[2 * i + 1] = h[p[i] & 15];
	}
	out[2 * n] = 0;
}

static void hmac(const void *key, size_t klen, const char *msg, size_t mlen, unsigned char out[32])
{
	unsigned int len = 32;

	HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, mlen, out, &len);
}

void dl_sigv4_sha256_hex(const void *p, size_t n, char out[65])
{
	unsigned char h[32];

	SHA256(p, n, h);
	hex(h, 32, out);
}

int dl_sigv4_signing_key(const char *secret, const char *scope, unsigned char kd[32])
{
	char key0[4 + 128 + 1];
	unsigned char prev[32];
	const char *p = scope;
	int ret = 0;

	if (strlen(secret) > 128)
		return -EINVAL;
	snprintf(key0, sizeof(key0), "AWS4%s", secret);
	/* DATE, REGION, SERVICE, then "aws4_request" (the scope's last part). */
	for (int i = 0; i < 4; i++) {
		const char *e = strchr(p, '/');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if ((i < 3 && !e) || (i == 3 && e) || l == 0) {
			ret = -EINVAL;
			goto out;
		}
		if (i == 0) {
			hmac(key0, strlen(key0), p, l, kd);
		} else {
			memcpy(prev, kd, 32);
			hmac(prev, 32, p, l, kd);
		}
		p = e ? e + 1 : p + l;
	}
out:
	OPENSSL_cleanse(key0, sizeof(key0));
	OPENSSL_cleanse(prev, sizeof(prev));
	if (ret)
		OPENSSL_cleanse(kd, 32);
	return ret;
}

void dl_sigv4_hmac_hex(const unsigned char key[32], const char *msg, char out[65])
{
	unsigned char h[32];

	hmac(key, 32, msg, strlen(msg), h);
	hex(h, 32, out);
}

int dl_sigv4_signature(const char *secret, const char *scope, const char *string_to_sign,
		       char out[65])
{
	unsigned char kd[32];
	int ret = dl_sigv4_signing_key(secret, scope, kd);

	if (!ret)
		dl_sigv4_hmac_hex(kd, string_to_sign, out);
	OPENSSL_cleanse(kd, sizeof(kd));
	return ret;
}

size_t dl_sigv4_encode(const char *s, int keep_slash, char *out, size_t len)
{
	static const char h[] = "0123456789ABCDEF";
	size_t n = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~' ||
			    (keep_slash && c == '/');

		if (plain) {
			if (n + 1 < len)
				out[n] = (char)c;
			n++;
		} else {
			if (n + 3 < len) {
				out[n] = '%';
				out[n + 1] = h[c >> 4];
				out[n + 2] = h[c & 15];
			}
			n += 3;
		}
	}
	if (len)
		out[n < len ? n : len - 1] = 0;
	return n;
}
