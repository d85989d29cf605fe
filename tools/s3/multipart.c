/* Multipart uploads into a backing directory: an upload is a folder
 * .dliofs.uploads/<32 hex> at the bucket's root holding the key it is for
 * (file "key") and its parts ("<5-digit number>.<MD5 hex>", so a part's
 * ETag is its name and a re-sent part replaces the old one). Complete
 * concatenates the listed parts into a temporary file beside the key's
 * place, renames it there and removes the upload; Abort removes it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "s3_i.h"

#define UPLOADS ".dliofs.uploads"

static int id_ok(const char *id)
{
	if (!id || strlen(id) != 32)
		return 0;
	for (int i = 0; i < 32; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return 0;
	return 1;
}

int dl_s3_mp_create(const struct dl_s3_bucket *b, const char *key, char id[33])
{
	unsigned char r[16];
	int ufd = -1, dfd = -1, kfd = -1, ret;
	size_t len = strlen(key);

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -EIO;
	for (int i = 0; i < 16; i++)
		snprintf(id + 2 * i, 3, "%02x", r[i]);
	/* The uploads folder goes with its last upload: made again here, and
	 * again if another request's Abort removed it in between. */
	for (int tries = 0; ; tries++) {
		if (mkdirat(b->dirfd, UPLOADS, 0700) && errno != EEXIST)
			return -errno;
		ufd = openat(b->dirfd, UPLOADS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (ufd < 0)
			return -errno;
		ret = mkdirat(ufd, id, 0700) ? -errno : 0;
		if (ret != -ENOENT || tries == 3)
			break;
		close(ufd);
	}
	if (!ret)
		dfd = openat(ufd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (!ret && dfd < 0)
		ret = -errno;
	if (!ret)
		kfd = openat(dfd, "key", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (!ret && kfd < 0)
		ret = -errno;
	if (!ret && write(kfd, key, len) != (ssize_t)len)
		ret = -EIO;
	if (kfd >= 0)
		close(kfd);
	if (dfd >= 0)
		close(dfd);
	close(ufd);
	return ret;
}

int dl_s3_mp_open(const struct dl_s3_bucket *b, const char *id, const char *key)
{
	char path[64], got[DL_S3_KEY_MAX + 1];
	int dfd, kfd;
	ssize_t n;

	if (!id_ok(id))
		return -ENOENT;
	snprintf(path, sizeof(path), UPLOADS "/%s", id);
	/* Both components are ours (fixed, hex): no symlink to follow there. */
	dfd = openat(b->dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -ENOENT;
	kfd = openat(dfd, "key", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	n = kfd >= 0 ? read(kfd, got, sizeof(got) - 1) : -1;
	if (kfd >= 0)
		close(kfd);
	if (n < 0 || (size_t)n != strlen(key) || memcmp(got, key, (size_t)n) != 0) {
		close(dfd);
		return -ENOENT;
	}
	return dfd;
}

/* The part's file name: number and MD5, parsed back. */
static int part_name(const char *name, unsigned *num, char md5[33])
{
	char *end;
	unsigned long v;

	if (strlen(name) != 5 + 1 + 32 || name[5] != '.')
		return -EINVAL;
	v = strtoul(name, &end, 10);
	if (end != name + 5 || v < 1 || v > 10000)
		return -EINVAL;
	*num = (unsigned)v;
	memcpy(md5, name + 6, 33);
	return 0;
}

int dl_s3_mp_part_commit(int dfd, const char *tmp, unsigned num, const unsigned char md5[16])
{
	char name[48], old[33];
	DIR *d;
	struct dirent *e;
	unsigned n;
	int fd;

	snprintf(name, sizeof(name), "%05u.", num);
	for (int i = 0; i < 16; i++)
		snprintf(name + 6 + 2 * i, 3, "%02x", md5[i]);
	/* A part sent again replaces the one before. */
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	while (d && (e = readdir(d)))
		if (!part_name(e->d_name, &n, old) && n == num && strcmp(e->d_name, name) != 0)
			unlinkat(dfd, e->d_name, 0);
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	return renameat(dfd, tmp, dfd, name) ? -errno : 0;
}

static int rm_upload(int ufd, const char *id)
{
	int dfd = openat(ufd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *e;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return -ENOENT;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	return unlinkat(ufd, id, AT_REMOVEDIR) ? -errno : 0;
}

int dl_s3_mp_abort(const struct dl_s3_bucket *b, const char *id, const char *key)
{
	int dfd = dl_s3_mp_open(b, id, key), ufd, ret;

	if (dfd < 0)
		return dfd;
	close(dfd);
	ufd = openat(b->dirfd, UPLOADS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ufd < 0)
		return -errno;
	ret = rm_upload(ufd, id);
	close(ufd);
	/* The last upload gone: no folder of ours is left in the directory. */
	(void)unlinkat(b->dirfd, UPLOADS, AT_REMOVEDIR);
	return ret;
}

static int copy_part(int dst, int src)
{
	for (;;) {
		ssize_t n = copy_file_range(src, NULL, dst, NULL, 1 << 30, 0);
		char buf[65536];

		if (n > 0)
			continue;
		if (n == 0)
			return 0;
		if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
			return -errno;
		/* No copy_file_range here: plain reads and writes. */
		while ((n = read(src, buf, sizeof(buf))) > 0)
			if (write(dst, buf, (size_t)n) != n)
				return -EIO;
		return n < 0 ? -errno : 0;
	}
}

int dl_s3_mp_complete(const struct dl_s3_bucket *b, const char *id, const char *key,
		      const struct dl_s3_xmlbody *x, char *etag, size_t etaglen, const char **code)
{
	char leaf[256], tmp[48], name[128];
	unsigned char md5s[16], digest[EVP_MAX_MD_SIZE];
	unsigned dlen = 0;
	EVP_MD_CTX *md = NULL;
	int dfd, pfd = -1, tfd = -1, ret = 0;

	*code = "NoSuchUpload";
	dfd = dl_s3_mp_open(b, id, key);
	if (dfd < 0)
		return dfd;
	*code = "InvalidPartOrder";
	for (size_t i = 1; i < x->n; i++)
		if (x->parts[i].num <= x->parts[i - 1].num) {
			ret = -EINVAL;
			goto out;
		}
	*code = "InvalidPart";
	md = EVP_MD_CTX_new();
	if (!md || !EVP_DigestInit_ex(md, EVP_md5(), NULL)) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < x->n; i++) {
		/* The listed ETag is the part's MD5: the part's name. Only hex
		 * digits may go into it: a '/' would walk out of the upload. */
		if (strlen(x->parts[i].etag) != 32 ||
		    strspn(x->parts[i].etag, "0123456789abcdefABCDEF") != 32) {
			ret = -EINVAL;
			goto out;
		}
		snprintf(name, sizeof(name), "%05u.%s", x->parts[i].num, x->parts[i].etag);
		for (char *p = name; *p; p++)
			if (*p >= 'A' && *p <= 'F')
				*p = (char)(*p - 'A' + 'a');
		if (faccessat(dfd, name, F_OK, AT_SYMLINK_NOFOLLOW)) {
			ret = -EINVAL;
			goto out;
		}
		for (int k = 0; k < 16; k++) {
			unsigned v;

			sscanf(name + 6 + 2 * k, "%2x", &v);
			md5s[k] = (unsigned char)v;
		}
		EVP_DigestUpdate(md, md5s, 16);
	}
	*code = NULL;
	pfd = dl_s3_store_parent(b, key, 1, leaf, sizeof(leaf));
	if (pfd < 0) {
		ret = pfd;
		goto out;
	}
	tfd = dl_s3_store_tmp(pfd, tmp, sizeof(tmp));
	if (tfd < 0) {
		ret = tfd;
		goto out;
	}
	for (size_t i = 0; i < x->n && !ret; i++) {
		int sfd;

		snprintf(name, sizeof(name), "%05u.%s", x->parts[i].num, x->parts[i].etag);
		for (char *p = name; *p; p++)
			if (*p >= 'A' && *p <= 'F')
				*p = (char)(*p - 'A' + 'a');
		sfd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		ret = sfd < 0 ? -errno : copy_part(tfd, sfd);
		if (sfd >= 0)
			close(sfd);
	}
	if (!ret && !EVP_DigestFinal_ex(md, digest, &dlen))
		ret = -ENOMEM;
	if (!ret) {
		char hx[33];

		for (int k = 0; k < 16; k++)
			snprintf(hx + 2 * k, 3, "%02x", digest[k]);
		snprintf(etag, etaglen, "\"%s-%zu\"", hx, x->n);
		dl_s3_store_set_etag(tfd, etag);
		if (renameat(pfd, tmp, pfd, leaf))
			ret = -errno;
	}
	if (ret)
		unlinkat(pfd, tmp, 0);
	else
		dl_s3_mp_abort(b, id, key);	/* the parts are in the object now */
out:
	EVP_MD_CTX_free(md);
	if (tfd >= 0)
		close(tfd);
	if (pfd >= 0)
		close(pfd);
	close(dfd);
	return ret;
}

static int part_cmp(const void *a, const void *b)
{
	const struct dl_s3_part_ref *x = a, *y = b;

	return x->num < y->num ? -1 : x->num > y->num;
}

enum MHD_Result dl_s3_mp_list_parts(const struct dl_s3_bucket *b, const char *key,
				    const char *id, struct MHD_Connection *c)
{
	struct dl_s3_part_ref *parts = NULL;
	size_t n = 0, cap = 0;
	struct dl_s3_buf x = {0};
	int dfd = dl_s3_mp_open(b, id, key), fd;
	DIR *d;
	struct dirent *e;

	if (dfd < 0)
		return dl_s3_reply_error(c, MHD_HTTP_NOT_FOUND, "NoSuchUpload",
					 "The specified upload does not exist.", id);
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	while (d && (e = readdir(d))) {
		unsigned num;
		char md5[33];

		if (part_name(e->d_name, &num, md5))
			continue;
		if (n == cap) {
			struct dl_s3_part_ref *np;

			cap = cap ? cap * 2 : 64;
			np = realloc(parts, cap * sizeof(*np));
			if (!np)
				break;
			parts = np;
		}
		parts[n].num = num;
		strcpy(parts[n].etag, md5);
		n++;
	}
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	if (n)
		qsort(parts, n, sizeof(*parts), part_cmp);
	dl_s3_buf_printf(&x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListPartsResult xmlns="
			 "\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>");
	dl_s3_buf_xml(&x, b->name);
	dl_s3_buf_printf(&x, "</Bucket><Key>");
	dl_s3_buf_xml(&x, key);
	dl_s3_buf_printf(&x, "</Key><UploadId>%s</UploadId><MaxParts>10000</MaxParts>"
			 "<IsTruncated>false</IsTruncated><StorageClass>STANDARD</StorageClass>", id);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		char name[128];

		snprintf(name, sizeof(name), "%05u.%s", parts[i].num, parts[i].etag);
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		dl_s3_buf_printf(&x, "<Part><PartNumber>%u</PartNumber><ETag>&quot;%s&quot;</ETag>"
				 "<Size>%lld</Size></Part>", parts[i].num, parts[i].etag,
				 (long long)st.st_size);
	}
	dl_s3_buf_printf(&x, "</ListPartsResult>");
	free(parts);
	close(dfd);
	return dl_s3_reply_buf(c, MHD_HTTP_OK, &x);
}
