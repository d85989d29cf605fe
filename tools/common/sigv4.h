/* AWS Signature Version 4 (AWS4-HMAC-SHA256), the part both ends share:
 * the endpoint checks a request's signature with it (tools/s3/auth.c) and
 * dlio-drive --storage s3 signs its GETs with it (tools/drive/drive_s3.c). */
#ifndef DLIOFS_SIGV4_H
#define DLIOFS_SIGV4_H

#include <stddef.h>

#define DL_SIGV4_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* Lower-case hex of SHA-256(p[0, n)). */
void dl_sigv4_sha256_hex(const void *p, size_t n, char out[65]);

/* The signature (lower-case hex) of string_to_sign under secret, for
 * scope "DATE/REGION/SERVICE/aws4_request":
 * HMAC(HMAC(HMAC(HMAC(HMAC("AWS4" secret, DATE), REGION), SERVICE),
 * "aws4_request"), string_to_sign). 0, or -EINVAL for a malformed scope or
 * a secret over 128 bytes. */
int dl_sigv4_signature(const char *secret, const char *scope, const char *string_to_sign,
		       char out[65]);

/* The signing key of scope under secret (the HMAC chain above, without the
 * last step): kept by the endpoint to check an aws-chunked body's chunk
 * signatures. 0, or -EINVAL as dl_sigv4_signature. */
int dl_sigv4_signing_key(const char *secret, const char *scope, unsigned char kd[32]);
/* Lower-case hex of HMAC-SHA256(key, msg). */
void dl_sigv4_hmac_hex(const unsigned char key[32], const char *msg, char out[65]);

/* SigV4's encoding of s (every byte but A-Z a-z 0-9 - _ . ~ as %XX; '/'
 * kept when keep_slash) into out; the length it needs (without the NUL),
 * written only when that is < len, as snprintf. */
size_t dl_sigv4_encode(const char *s, int keep_slash, char *out, size_t len);

#endif
