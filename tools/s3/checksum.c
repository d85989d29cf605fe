/* The body checksums S3 clients send (x-amz-checksum-<alg>, in a header or
 * an aws-chunked trailer; Content-MD5): CRC32, CRC32C and CRC64/NVME by
 * tables kept in the server's context, SHA-1, SHA-256 and MD5 by libcrypto.
 * Values are base64 of the big-endian digest, as S3 writes them. */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "s3_i.h"

static void crc_table32(uint32_t poly, uint32_t t[256])
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ poly : c >> 1;
		t[i] = c;
	}
}

void dl_s3_crc_init(struct dl_s3_crc *t)
{
	crc_table32(0xEDB88320u, t->crc32);	/* reflected 0x04C11DB7 */
	crc_table32(0x82F63B78u, t->crc32c);	/* reflected 0x1EDC6F41 (Castagnoli) */
	for (uint64_t i = 0; i < 256; i++) {
		uint64_t c = i;

		for (int k = 0; k < 8; k++)	/* reflected 0xAD93D23594C93659 */
			c = c & 1 ? (c >> 1) ^ 0x9A6C9329AC4BC9B5ULL : c >> 1;
		t->crc64[i] = c;
	}
}

static const char *const alg_names[] = {
	[DL_S3_SUM_CRC32] = "crc32", [DL_S3_SUM_CRC32C] = "crc32c",
	[DL_S3_SUM_CRC64NVME] = "crc64nvme", [DL_S3_SUM_SHA1] = "sha1",
	[DL_S3_SUM_SHA256] = "sha256", [DL_S3_SUM_MD5] = "md5",
};

int dl_s3_sum_alg(const char *header)
{
	if (strncasecmp(header, "x-amz-checksum-", 15) != 0)
		return -EINVAL;
	for (int a = DL_S3_SUM_CRC32; a <= DL_S3_SUM_SHA256; a++)
		if (strcasecmp(header + 15, alg_names[a]) == 0)
			return a;
	return -EINVAL;
}

const char *dl_s3_sum_name(int alg)
{
	return alg > 0 && alg <= DL_S3_SUM_MD5 ? alg_names[alg] : "";
}

int dl_s3_sum_begin(struct dl_s3_sum *k, const struct dl_s3_crc *t, int alg)
{
	*k = (struct dl_s3_sum){.alg = alg, .t = t};
	if (alg == DL_S3_SUM_CRC32 || alg == DL_S3_SUM_CRC32C)
		k->crc = 0xFFFFFFFFu;
	else if (alg == DL_S3_SUM_CRC64NVME)
		k->crc = ~0ULL;
	else if (alg >= DL_S3_SUM_SHA1) {
		k->md = EVP_MD_CTX_new();
		if (!k->md || !EVP_DigestInit_ex(k->md, alg == DL_S3_SUM_SHA1 ? EVP_sha1()
						  : alg == DL_S3_SUM_SHA256 ? EVP_sha256()
						  : EVP_md5(), NULL))
			return -ENOMEM;
	}
	return 0;
}

void dl_s3_sum_update(struct dl_s3_sum *k, const void *data, size_t n)
{
	const unsigned char *p = data;
	uint64_t c = k->crc;

	switch (k->alg) {
	case DL_S3_SUM_CRC32:
		for (size_t i = 0; i < n; i++)
			c = k->t->crc32[(c ^ p[i]) & 0xff] ^ (c >> 8);
		break;
	case DL_S3_SUM_CRC32C:
		for (size_t i = 0; i < n; i++)
			c = k->t->crc32c[(c ^ p[i]) & 0xff] ^ (c >> 8);
		break;
	case DL_S3_SUM_CRC64NVME:
		for (size_t i = 0; i < n; i++)
			c = k->t->crc64[(c ^ p[i]) & 0xff] ^ (c >> 8);
		break;
	default:
		if (k->md)
			EVP_DigestUpdate(k->md, p, n);
		break;
	}
	k->crc = c;
}

int dl_s3_sum_final(struct dl_s3_sum *k, unsigned char *out)
{
	unsigned int len = 0;
	int n;

	switch (k->alg) {
	case DL_S3_SUM_CRC32:
	case DL_S3_SUM_CRC32C:
		n = 4;
		break;
	case DL_S3_SUM_CRC64NVME:
		n = 8;
		break;
	default:
		if (!k->md || !EVP_DigestFinal_ex(k->md, out, &len))
			return -EIO;
		return (int)len;
	}
	for (int i = 0; i < n; i++)
		out[i] = (unsigned char)(~k->crc >> (8 * (n - 1 - i)));
	return n;
}

void dl_s3_sum_free(struct dl_s3_sum *k)
{
	EVP_MD_CTX_free(k->md);
	k->md = NULL;
}

void dl_s3_base64(const unsigned char *p, size_t n, char *out, size_t len)
{
	if (len < 4 * ((n + 2) / 3) + 1) {
		out[0] = 0;
		return;
	}
	EVP_EncodeBlock((unsigned char *)out, p, (int)n);
}
