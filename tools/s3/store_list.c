/* ListObjects (v1 and v2) of a backing directory or a sink: the tree
 * under the request's prefix is walked (a sink's table read) (no symlinks, none of the endpoint's own
 * .dliofs* names; an empty folder is its marker key "dir/"), its keys
 * sorted as S3 sorts them (bytes), and one page cut out. A continuation
 * token is the last key (or common prefix) of the page before, in hex. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dliofs/clock.h"
#include "s3_i.h"

/* A listing holds the tree's keys at once: beyond this many, refuse. */
#define WALK_MAX 1000000

struct walk {
	char **keys;
	size_t n, cap;
	const char *prefix;
	size_t plen;
	int err;
};

static int add_key(struct walk *w, const char *k)
{
	char **nk;

	if (strncmp(k, w->prefix, w->plen) != 0)
		return 0;
	if (w->n >= WALK_MAX)
		return -E2BIG;
	if (w->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 256;
		nk = realloc(w->keys, w->cap * sizeof(*nk));
		if (!nk)
			return -ENOMEM;
		w->keys = nk;
	}
	w->keys[w->n] = strdup(k);
	if (!w->keys[w->n])
		return -ENOMEM;
	w->n++;
	return 0;
}

/* Could a key under folder `path` (ending in '/') have the prefix? */
static int may_match(const struct walk *w, const char *path, size_t len)
{
	size_t m = len < w->plen ? len : w->plen;

	return strncmp(path, w->prefix, m) == 0;
}

static int walk_dir(struct walk *w, int fd, char *path, size_t len, int depth)
{
	DIR *d;
	struct dirent *e;
	int any = 0, ret = 0;

	if (depth > 128)
		return 0;	/* deeper than any key can be */
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while (!ret && (e = readdir(d))) {
		size_t nl = strlen(e->d_name);
		struct stat st;

		if (!dl_s3_store_name_ok(e->d_name, nl))
			continue;
		if (len + nl + 2 >= DL_S3_KEY_MAX)
			continue;	/* no key can name it */
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		memcpy(path + len, e->d_name, nl + 1);
		if (S_ISREG(st.st_mode)) {
			any = 1;
			ret = add_key(w, path);
		} else if (S_ISDIR(st.st_mode)) {
			int sub;

			any = 1;
			path[len + nl] = '/';
			path[len + nl + 1] = 0;
			if (!may_match(w, path, len + nl + 1))
				continue;
			sub = openat(dirfd(d), e->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				ret = walk_dir(w, sub, path, len + nl + 1, depth + 1);
		}
	}
	closedir(d);
	path[len] = 0;
	/* An empty folder shows as its marker, as s3fs made it. */
	if (!ret && !any && len > 0)
		ret = add_key(w, path);
	return ret;
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static const char *arg(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

/* Token: 'k' (after a key) or 'p' (after a common prefix), then hex. */
static int token_decode(const char *t, char *out, size_t len, int *cp)
{
	size_t n = strlen(t);

	if (n < 1 || (t[0] != 'k' && t[0] != 'p') || (n - 1) % 2 || (n - 1) / 2 >= len)
		return -EINVAL;
	*cp = t[0] == 'p';
	for (size_t i = 0; i < (n - 1) / 2; i++) {
		unsigned v;

		if (sscanf(t + 1 + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		out[i] = (char)v;
		if (!v)
			return -EINVAL;
	}
	out[(n - 1) / 2] = 0;
	return 0;
}

static void token_put(struct dl_s3_buf *b, const char *last, int cp)
{
	dl_s3_buf_printf(b, "%c", cp ? 'p' : 'k');
	for (const unsigned char *p = (const unsigned char *)last; *p; p++)
		dl_s3_buf_printf(b, "%02x", *p);
}

enum MHD_Result dl_s3_store_list(struct dl_s3 *s, const struct dl_s3_bucket *bk,
				 struct MHD_Connection *c)
{
	const char *lt = arg(c, "list-type"), *prefix = arg(c, "prefix"), *delim = arg(c, "delimiter");
	const char *mk = arg(c, "max-keys"), *token = arg(c, "continuation-token");
	const char *after = arg(c, "start-after"), *marker = arg(c, "marker");
	const char *enc = arg(c, "encoding-type");
	char *path = NULL, from[DL_S3_KEY_MAX] = "", last[DL_S3_KEY_MAX] = "";
	uint64_t max_keys = 1000, n = 0;
	struct walk w = {0};
	struct dl_s3_buf b = {0}, items = {0};
	size_t i = 0, dlen;
	int v2, url, truncated = 0, from_cp = 0, last_cp = 0, fd, ret;
	char *end;

	v2 = lt && strcmp(lt, "2") == 0;
	if (lt && !v2 && strcmp(lt, "1") != 0)
		return dl_s3_reply_error(c, 400, "InvalidArgument", "list-type must be 1 or 2", lt);
	if (enc && strcmp(enc, "url") != 0)
		return dl_s3_reply_error(c, 400, "InvalidArgument", "encoding-type must be url",
					 enc);
	url = enc != NULL;
	if (mk) {
		errno = 0;
		max_keys = strtoull(mk, &end, 10);
		if (*mk < '0' || *mk > '9' || *end || errno)
			return dl_s3_reply_error(c, 400, "InvalidArgument",
						 "max-keys must be a non-negative integer", mk);
	}
	if (max_keys > 1000)
		max_keys = 1000;
	prefix = prefix ? prefix : "";
	delim = delim && *delim ? delim : NULL;
	dlen = delim ? strlen(delim) : 0;
	if (v2 && token) {
		if (token_decode(token, from, sizeof(from), &from_cp))
			return dl_s3_reply_error(c, 400, "InvalidArgument",
						 "The continuation token provided is incorrect",
						 token);
	} else if ((v2 ? after : marker) && strlen(v2 ? after : marker) < sizeof(from)) {
		snprintf(from, sizeof(from), "%s", v2 ? after : marker);
		/* v1's NextMarker may be a common prefix: resume past all of it. */
		from_cp = delim && strlen(from) > strlen(prefix) && strlen(from) >= dlen &&
			  strcmp(from + strlen(from) - dlen, delim) == 0;
	}

	path = malloc(DL_S3_KEY_MAX + 2);
	if (!path)
		return MHD_NO;
	path[0] = 0;
	w.prefix = prefix;
	w.plen = strlen(prefix);
	if (bk->sink) {
		ret = dl_s3_sink_keys(bk->sink, prefix, &w.keys, &w.n);
	} else {
		fd = openat(bk->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ret = fd < 0 ? -errno : walk_dir(&w, fd, path, 0, 0);
	}
	if (ret) {
		enum MHD_Result r = dl_s3_reply_error(
			c, MHD_HTTP_INTERNAL_SERVER_ERROR, "InternalError",
			ret == -E2BIG ? "The directory holds more objects than a listing walks "
					"(1,000,000)" : strerror(-ret), bk->name);

		for (size_t k = 0; k < w.n; k++)
			free(w.keys[k]);
		free(w.keys);
		free(path);
		return r;
	}
	if (w.n)
		qsort(w.keys, w.n, sizeof(*w.keys), key_cmp);

	/* A page is one metadata request to the storage. */
	struct dl_pacer_req preq = {.cls = DL_OP_META};
	struct dl_pacer_result pres;

	if (dl_s3_pace(s, c, &preq, &pres))
		dl_pacer_complete(s->pacer, &preq, &pres, dl_mono_ns());

	for (i = 0; i < w.n; i++) {
		const char *key = w.keys[i], *d;
		struct stat st;
		char etag[80], date[64];
		int ofd;

		if (from[0] && (strcmp(key, from) <= 0 ||
				(from_cp && strncmp(key, from, strlen(from)) == 0)))
			continue;
		if (n >= max_keys) {
			/* max-keys=0 asks for no keys and gets a page that is not
			 * truncated, or a paginator would loop forever. */
			truncated = max_keys > 0;
			break;
		}
		d = delim ? strstr(key + w.plen, delim) : NULL;
		if (d) {
			size_t cplen = (size_t)(d - key) + dlen;

			snprintf(last, sizeof(last), "%.*s", (int)cplen, key);
			last_cp = 1;
			dl_s3_buf_printf(&items, "<CommonPrefixes>");
			dl_s3_list_elem(&items, "Prefix", last, url);
			dl_s3_buf_printf(&items, "</CommonPrefixes>");
			while (i + 1 < w.n && strncmp(w.keys[i + 1], last, cplen) == 0)
				i++;
			n++;
			continue;
		}
		if (bk->sink) {
			uint64_t size, mtime;

			if (dl_s3_sink_stat(bk->sink, key, &size, &mtime, etag, sizeof(etag)))
				continue;	/* deleted since */
			st.st_size = (off_t)size;
			st.st_mtim.tv_sec = (time_t)mtime;
		} else {
			ofd = dl_s3_store_open_obj(bk, key, &st);
			if (ofd < 0)
				continue;	/* gone since the walk */
			dl_s3_store_etag(ofd, &st, etag, sizeof(etag));
			close(ofd);
		}
		dl_s3_iso_date((uint64_t)st.st_mtim.tv_sec, date, sizeof(date));
		dl_s3_buf_printf(&items, "<Contents>");
		dl_s3_list_elem(&items, "Key", key, url);
		dl_s3_buf_printf(&items, "<LastModified>%s</LastModified><ETag>", date);
		dl_s3_buf_xml(&items, etag);
		dl_s3_buf_printf(&items, "</ETag><Size>%lld</Size><StorageClass>STANDARD"
				 "</StorageClass></Contents>", (long long)st.st_size);
		snprintf(last, sizeof(last), "%s", key);
		last_cp = 0;
		n++;
	}

	dl_s3_list_head(&b, bk->name, prefix, delim, max_keys, url, v2, marker, after, token);
	if (v2) {
		dl_s3_buf_printf(&b, "<KeyCount>%" PRIu64 "</KeyCount>", n);
		if (truncated) {
			dl_s3_buf_printf(&b, "<NextContinuationToken>");
			token_put(&b, last, last_cp);
			dl_s3_buf_printf(&b, "</NextContinuationToken>");
		}
	} else if (truncated) {
		dl_s3_list_elem(&b, "NextMarker", last, url);
	}
	dl_s3_buf_printf(&b, "<IsTruncated>%s</IsTruncated>", truncated ? "true" : "false");
	if (items.oom)
		b.oom = 1;
	else if (items.len)
		dl_s3_buf_printf(&b, "%s", items.p);
	dl_s3_buf_printf(&b, "</ListBucketResult>");
	dl_s3_buf_free(&items);
	for (size_t k = 0; k < w.n; k++)
		free(w.keys[k]);
	free(w.keys);
	free(path);
	return dl_s3_reply_buf(c, MHD_HTTP_OK, &b);
}
