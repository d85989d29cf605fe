/* dlio-drive --storage s3: every unit is an object of an S3 endpoint
 * (`dliofs s3 serve`, or any S3), read whole in range GETs the way the
 * object readers of MLPerf Storage read it, whatever the format:
 *
 *   s3torchconnector  its CRT client splits every GetObject into parts of
 *                     S3ClientConfig.part_size (8 MiB), the first one
 *                     ranged too, fetched in parallel;
 *   s3dlio            one plain GET for an object below its range
 *                     threshold (32 MiB), ranges of its range engine's
 *                     chunk (64 MiB) in parallel above.
 *
 * Each reader thread has its own libcurl multi handle with --s3-connections
 * keep-alive connections, an object's ranges spread over them. A request is
 * SigV4-signed (tools/common/sigv4.c, the endpoint's own signer) when an access
 * key is given; the secret comes from $AWS_SECRET_ACCESS_KEY only, never the
 * command line (other users can read a process's arguments). Bytes are what
 * the bodies held; --s3-verify compares each with the generator's. */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dliofs/format.h"
#include "dliofs/naming.h"
#include "drive_read_i.h"
#include "sigv4.h"

#define S3TORCH_PART (8ull << 20)      /* s3torchconnector's S3ClientConfig.part_size */
#define S3DLIO_THRESHOLD (32ull << 20) /* s3dlio: one GET below (DEFAULT_RANGE_ENGINE_THRESHOLD) */
#define S3DLIO_CHUNK (64ull << 20)     /* s3dlio: DEFAULT_RANGE_ENGINE_CHUNK_SIZE */
#define SIGNED_HEADERS "host;x-amz-content-sha256;x-amz-date"

/* The run's endpoint, made once. */
struct s3_run {
	char base[600];	     /* http://HOST:PORT, no trailing slash */
	char host[300];	     /* HOST:PORT, sent as Host and signed */
	const char *secret;  /* $AWS_SECRET_ACCESS_KEY; NULL: unsigned */
	uint64_t range;	     /* bytes per range; 0: whole objects */
	uint64_t threshold;  /* objects below it in one plain GET */
	int curl_up;
};

/* One connection's request in flight. */
struct xfer {
	CURL *h;
	struct drv_worker *w;
	uint64_t off, len, got; /* the object's bytes [off, off + len) */
	int busy, bad;		/* bad: a byte differs from the generator's */
	struct curl_slist *hdrs;
	char err[CURL_ERROR_SIZE];
};

struct s3w {
	CURLM *m;
	struct xfer *x;
	unsigned n;
	struct dl_file f; /* the object being read (--s3-verify) */
	uint8_t *vbuf;	  /* the generator's bytes to compare with */
	size_t vcap;
};

static size_t on_body(char *p, size_t size, size_t nmemb, void *cls)
{
	struct xfer *x = cls;
	struct s3w *s = x->w->state;
	size_t n = size * nmemb;

	if (x->got + n > x->len)
		return 0; /* more than asked for: a write error ends it */
	if (x->w->c->p->s3.verify) {
		if (drv_grow(&s->vbuf, &s->vcap, n) ||
		    dl_file_read(x->w->c->fmt, &s->f, s->vbuf, x->off + x->got, n) ||
		    memcmp(s->vbuf, p, n)) {
			x->bad = 1;
			return 0;
		}
	}
	x->got += n;
	return n;
}

/* Authorization for GET /path at now, into hdr. 0 or -EINVAL. */
static int sign(const struct s3_run *r, const struct drv_s3_params *sp, const char *path,
		const char *amzdate, char *hdr, size_t len)
{
	char canon[8192], sts[512], scope[160], digest[65], sig[65];
	int n;

	snprintf(scope, sizeof(scope), "%.8s/%s/s3/aws4_request", amzdate, sp->region);
	n = snprintf(canon, sizeof(canon),
		     "GET\n%s\n\nhost:%s\nx-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:%s\n\n"
		     SIGNED_HEADERS "\nUNSIGNED-PAYLOAD",
		     path, r->host, amzdate);
	if (n < 0 || (size_t)n >= sizeof(canon))
		return -ENAMETOOLONG;
	dl_sigv4_sha256_hex(canon, (size_t)n, digest);
	snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256\n%s\n%s\n%s", amzdate, scope, digest);
	if (dl_sigv4_signature(r->secret, scope, sts, sig))
		return -EINVAL;
	n = snprintf(hdr, len,
		     "Authorization: AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=" SIGNED_HEADERS
		     ", Signature=%s",
		     sp->access_key, scope, sig);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Set x up for bytes [off, off + len) of the object at path (ranged when
 * `ranged`). 0 or -errno. */
static int prepare(struct xfer *x, const char *path, uint64_t off, uint64_t len, int ranged)
{
	const struct s3_run *r = x->w->c->rd_state;
	const struct drv_s3_params *sp = &x->w->c->p->s3;
	char url[8192], rng[64], h[512], amzdate[32];
	struct curl_slist *l = NULL;
	time_t now = time(NULL);
	struct tm tm;
	int ret = 0;

	if (snprintf(url, sizeof(url), "%s%s", r->base, path) >= (int)sizeof(url))
		return -ENAMETOOLONG;
	gmtime_r(&now, &tm);
	strftime(amzdate, sizeof(amzdate), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(h, sizeof(h), "Host: %s", r->host);
	l = curl_slist_append(l, h);
	if (r->secret) {
		snprintf(h, sizeof(h), "x-amz-date: %s", amzdate);
		l = l ? curl_slist_append(l, h) : NULL;
		l = l ? curl_slist_append(l, "x-amz-content-sha256: UNSIGNED-PAYLOAD") : NULL;
		if (l && (ret = sign(r, sp, path, amzdate, h, sizeof(h))) == 0)
			l = curl_slist_append(l, h);
	}
	if (!l || ret) {
		curl_slist_free_all(l);
		return ret ? ret : -ENOMEM;
	}
	curl_slist_free_all(x->hdrs);
	x->hdrs = l;
	x->off = off;
	x->len = len;
	x->got = 0;
	x->bad = 0;
	x->err[0] = 0;
	snprintf(rng, sizeof(rng), "%" PRIu64 "-%" PRIu64, off, off + len - 1);
	curl_easy_setopt(x->h, CURLOPT_URL, url);
	curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdrs);
	curl_easy_setopt(x->h, CURLOPT_RANGE, ranged ? rng : NULL);
	return 0;
}

/* A finished request: 0 when it brought exactly its bytes with the status
 * its Range asks for, else -EIO said with the URL. */
static int finish(struct xfer *x, CURLcode rc, int ranged, const char *path)
{
	const struct s3_run *r = x->w->c->rd_state;
	long status = 0;

	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
	if (x->bad) {
		fprintf(stderr, "dlio-drive: %s%s bytes %" PRIu64 "-%" PRIu64 ": not the bytes the "
			"config generates (another seed or config?)\n", r->base, path, x->off,
			x->off + x->len - 1);
		return -EIO;
	}
	if (rc != CURLE_OK) {
		fprintf(stderr, "dlio-drive: %s%s: %s\n", r->base, path,
			x->err[0] ? x->err : curl_easy_strerror(rc));
		return -EIO;
	}
	if (status != (ranged ? 206 : 200) || x->got != x->len) {
		fprintf(stderr, "dlio-drive: %s%s: HTTP %ld with %" PRIu64 " bytes, expected %d with %"
			PRIu64 "\n", r->base, path, status, x->got, ranged ? 206 : 200, x->len);
		return -EIO;
	}
	return 0;
}

/* The object at path (size bytes) in parts over the worker's connections;
 * the bytes into io. 0 or -errno (said). */
static int get_object(struct drv_worker *w, const char *path, uint64_t size, struct drv_io *io)
{
	const struct s3_run *r = w->c->rd_state;
	struct s3w *s = w->state;
	int ranged = r->range && size >= r->threshold && size > 0;
	uint64_t part = ranged ? r->range : size, nparts = ranged ? (size + part - 1) / part : 1;
	uint64_t next = 0;
	unsigned inflight = 0;
	int ret = 0;

	while (!ret && (next < nparts || inflight)) {
		CURLMsg *msg;
		int still = 0, left, done = 0;

		for (unsigned i = 0; i < s->n && inflight < s->n && next < nparts && !ret; i++) {
			struct xfer *x = &s->x[i];
			uint64_t off = next * part, len = size - off < part ? size - off : part;

			if (x->busy)
				continue;
			if ((ret = prepare(x, path, off, len, ranged)))
				break;
			if (curl_multi_add_handle(s->m, x->h) != CURLM_OK) {
				ret = -ENOMEM;
				break;
			}
			x->busy = 1;
			inflight++;
			next++;
			io->reads++;
		}
		if (ret)
			break;
		if (curl_multi_perform(s->m, &still) != CURLM_OK) {
			ret = -EIO;
			break;
		}
		while ((msg = curl_multi_info_read(s->m, &left))) {
			struct xfer *x = NULL;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
			curl_multi_remove_handle(s->m, x->h);
			x->busy = 0;
			inflight--;
			done++;
			io->bytes += x->got;
			if (!ret)
				ret = finish(x, msg->data.result, ranged, path);
		}
		if (!ret && !done && still)
			curl_multi_poll(s->m, NULL, 0, 1000, NULL);
	}
	for (unsigned i = 0; i < s->n; i++) {
		if (s->x[i].busy) {
			curl_multi_remove_handle(s->m, s->x[i].h);
			s->x[i].busy = 0;
		}
	}
	return ret;
}

static enum drv_unit_kind s3_plan(enum drv_amp amp, int iterative)
{
	/* As the whole-file reader: DLIO's PyTorch reader fetches per sample. */
	return amp == DRV_AMP_DLIO && !iterative ? DRV_U_SAMPLE : DRV_U_FILE;
}

static int split_endpoint(struct s3_run *r, const char *ep, FILE *err)
{
	const char *h = strncmp(ep, "http://", 7) == 0 ? ep + 7 : NULL;
	size_t hl;

	if (!h || !*h) {
		fprintf(err, "dlio-drive: --endpoint '%s': expected http://HOST[:PORT] (https is "
			"not used: the endpoint is a local test server)\n", ep);
		return -EINVAL;
	}
	hl = strcspn(h, "/");
	if (hl == 0 || hl >= sizeof(r->host) || (h[hl] && strcmp(h + hl, "/") != 0)) {
		fprintf(err, "dlio-drive: --endpoint '%s': expected http://HOST[:PORT] with no "
			"path (the bucket is --bucket)\n", ep);
		return -EINVAL;
	}
	memcpy(r->host, h, hl);
	r->host[hl] = 0;
	snprintf(r->base, sizeof(r->base), "http://%s", r->host);
	return 0;
}

/* The first object, HEAD: the endpoint answers and holds the config's data. */
static int check_first_object(struct drv_ctx *c, FILE *err)
{
	struct s3_run *r = c->rd_state;
	char rel[2048], path[4096], url[4800];
	struct dl_file f;
	CURL *h;
	CURLcode rc;
	curl_off_t cl = -1;
	long status = 0;
	int ret = dl_name_relpath(c->ds, DL_SPLIT_TRAIN, 0, 0, rel, sizeof(rel));

	if (ret < 0 || (ret = dl_file_init(c->fmt, c->ds, DL_SPLIT_TRAIN, 0, 0, &f)))
		return ret < 0 ? ret : -EINVAL;
	if (snprintf(path, sizeof(path), "/%s/%s", c->root, rel) >= (int)sizeof(path) ||
	    snprintf(url, sizeof(url), "%s%s", r->base, path) >= (int)sizeof(url))
		return -ENAMETOOLONG;
	if (!(h = curl_easy_init()))
		return -ENOMEM;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "dlio-drive");
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
	curl_easy_cleanup(h);
	if (rc != CURLE_OK) {
		fprintf(err, "dlio-drive: %s: %s (is the endpoint up? dliofs s3 serve CONFIG)\n",
			url, curl_easy_strerror(rc));
		return -EIO;
	}
	/* Signed endpoints refuse an unsigned HEAD: 403 says it is there. */
	if (status == 403 && r->secret)
		return 0;
	if (status != 200) {
		fprintf(err, "dlio-drive: %s: HTTP %ld (%s)\n", url, status,
			status == 404 ? "no such bucket or key: another config, or --bucket?"
				      : "the endpoint refused the first object");
		return -EIO;
	}
	if (cl >= 0 && (uint64_t)cl != f.size)
		drv_note(c->p, "%s is %lld bytes, the config says %llu: objects not made from this "
			 "config?", path, (long long)cl, (unsigned long long)f.size);
	return 0;
}

static int s3_setup(struct drv_ctx *c, FILE *err)
{
	struct drv_s3_params *sp = &c->p->s3;
	struct s3_run *r = calloc(1, sizeof(*r));
	const char *env;
	int ret;

	if (!r)
		return -ENOMEM;
	c->rd_state = r;
	if (!sp->endpoint[0]) {
		fprintf(err, "dlio-drive: --storage s3 needs --endpoint http://HOST:PORT\n");
		return -EINVAL;
	}
	if ((ret = split_endpoint(r, sp->endpoint, err)))
		return ret;
	if (!sp->access_key[0] && (env = getenv("AWS_ACCESS_KEY_ID")))
		snprintf(sp->access_key, sizeof(sp->access_key), "%s", env);
	if (sp->access_key[0]) {
		r->secret = getenv("AWS_SECRET_ACCESS_KEY");
		if (!r->secret || strlen(r->secret) > 128) {
			fprintf(err, "dlio-drive: access key %s: set its secret (at most 128 bytes) in "
				"$AWS_SECRET_ACCESS_KEY\n", sp->access_key);
			return -EINVAL;
		}
	}
	r->range = sp->range ? sp->range : sp->client == DRV_S3C_S3DLIO ? S3DLIO_CHUNK : S3TORCH_PART;
	r->threshold = sp->client == DRV_S3C_S3DLIO ? S3DLIO_THRESHOLD : 0;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return -ENOMEM;
	r->curl_up = 1;
	if ((ret = check_first_object(c, err)))
		return ret;
	if (sp->client == DRV_S3C_S3DLIO)
		drv_note(c->p, "S3 %s/%s: s3dlio's reads: one GET per object below 32 MiB, ranges "
			 "of %llu bytes%s above; %u connection%s per reader thread; %s", r->base,
			 c->root, (unsigned long long)r->range, sp->range ? " (--range-size)" : "",
			 sp->conns, sp->conns == 1 ? "" : "s", r->secret ? "SigV4-signed" : "unsigned");
	else
		drv_note(c->p, "S3 %s/%s: s3torchconnector's reads: every object in ranges of %llu "
			 "bytes%s; %u connection%s per reader thread; %s", r->base, c->root,
			 (unsigned long long)r->range, sp->range ? " (--range-size)" : " (its part size)",
			 sp->conns, sp->conns == 1 ? "" : "s", r->secret ? "SigV4-signed" : "unsigned");
	if (c->p->odirect || c->p->dontneed)
		drv_note(c->p, "--odirect and --fadvise-dontneed do not apply to S3");
	return 0;
}

static void s3_teardown(struct drv_ctx *c)
{
	struct s3_run *r = c->rd_state;

	if (r && r->curl_up)
		curl_global_cleanup();
	free(r);
	c->rd_state = NULL;
}

static void s3_close(struct drv_worker *w)
{
	struct s3w *s = w->state;

	for (unsigned i = 0; s->x && i < s->n; i++) {
		if (s->x[i].h) {
			if (s->x[i].busy)
				curl_multi_remove_handle(s->m, s->x[i].h);
			curl_easy_cleanup(s->x[i].h);
		}
		curl_slist_free_all(s->x[i].hdrs);
	}
	if (s->m)
		curl_multi_cleanup(s->m);
	free(s->x);
	free(s->vbuf);
}

static int s3_open(struct drv_worker *w)
{
	struct s3w *s = w->state;
	unsigned n = w->c->p->s3.conns ? w->c->p->s3.conns : 1;

	if (!(s->m = curl_multi_init()) || !(s->x = calloc(n, sizeof(*s->x))))
		return -ENOMEM;
	s->n = n;
	/* n keep-alive connections, reused from object to object. */
	curl_multi_setopt(s->m, CURLMOPT_MAXCONNECTS, (long)n);
	curl_multi_setopt(s->m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)n);
	for (unsigned i = 0; i < n; i++) {
		struct xfer *x = &s->x[i];

		if (!(x->h = curl_easy_init()))
			return -ENOMEM;
		x->w = w;
		curl_easy_setopt(x->h, CURLOPT_PRIVATE, (char *)x);
		curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
		curl_easy_setopt(x->h, CURLOPT_ERRORBUFFER, x->err);
		curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(x->h, CURLOPT_FAILONERROR, 1L);
		curl_easy_setopt(x->h, CURLOPT_TCP_NODELAY, 1L);
		curl_easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT, 10L);
		curl_easy_setopt(x->h, CURLOPT_USERAGENT, "dlio-drive");
	}
	return 0;
}

static int s3_read(struct drv_worker *w, struct drv_loader *l, uint32_t split, uint64_t epoch,
		   uint64_t seq, const struct drv_unit *u, struct drv_io *io)
{
	struct s3w *s = w->state;
	int64_t sample = w->c->kind == DRV_U_SAMPLE ? (int64_t)u->sample : -1;
	char rel[2048], path[4096];
	uint64_t b0 = io->bytes;
	int ret = dl_name_relpath(w->c->ds, split, u->file, 0, rel, sizeof(rel));

	(void)l;
	if (ret < 0)
		return ret;
	if ((ret = dl_file_init(w->c->fmt, w->c->ds, split, u->file, 0, &s->f)))
		return ret;
	if (snprintf(path, sizeof(path), "/%s/%s", w->c->root, rel) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	io->opens++;
	if ((ret = get_object(w, path, s->f.size, io)))
		return ret;
	if (w->c->trace)
		drv_trace_line(w->c, epoch, split, seq, path + 1, sample, 0, io->bytes - b0);
	return 0;
}

const struct drv_reader_ops drv_read_s3_ops = {
    .name = "s3",
    .plan = s3_plan,
    .setup = s3_setup,
    .teardown = s3_teardown,
    .state_size = sizeof(struct s3w),
    .open = s3_open,
    .close = s3_close,
    .read = s3_read,
};
