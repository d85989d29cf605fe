/* The storage model for the endpoint: each request (a GET or one range, a
 * HEAD, a listing page) is submitted to the pacer, and the reply is held
 * until its decision (this connection's thread waits; libmicrohttpd runs
 * one per connection). Requests are counted per job: the x-dliofs-job
 * header, else the client's product (User-Agent's first word) and access
 * key, so `stats.json` separates two jobs as the mount's does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dliofs/clock.h"
#include "obs.h"
#include "s3_i.h"

/* The access key a request names (Authorization's or a presigned URL's
 * Credential), or "". */
static void access_key(struct MHD_Connection *c, char *out, size_t len)
{
	const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	const char *cred = a ? strstr(a, "Credential=") : NULL;
	size_t n;

	if (cred)
		cred += 11;
	else
		cred = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "X-Amz-Credential");
	if (!cred) {
		out[0] = 0;
		return;
	}
	n = strcspn(cred, "/, ");
	snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), cred);
}

uint32_t dl_s3_job(struct MHD_Connection *c, char *name, size_t len)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-dliofs-job");
	const char *ua = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "User-Agent");
	char key[128];
	uint64_t hsh = 1469598103934665603ULL;

	if (h && *h) {
		snprintf(name, len, "%s", h);
	} else {
		access_key(c, key, sizeof(key));
		snprintf(name, len, "%.*s%s%s", ua ? (int)strcspn(ua, " ") : 2, ua ? ua : "s3",
			 key[0] ? " " : "", key);
	}
	/* The id is the name's hash: the same job on every connection, no table. */
	for (const char *p = name; *p; p++)
		hsh = (hsh ^ (unsigned char)*p) * 1099511628211ULL;
	return (uint32_t)(hsh % 0x7ffffffeu) + 1;
}

int dl_s3_pace(struct dl_s3 *s, struct MHD_Connection *c, struct dl_pacer_req *req,
	       struct dl_pacer_result *res)
{
	char name[256];
	struct timespec ts;
	uint64_t now = dl_mono_ns();

	if (!s->pacer)
		return 0;
	req->job = dl_s3_job(c, name, sizeof(name));
	if (dl_pacer_submit(s->pacer, req, now, res))
		return 0;
	if (res->flags & DL_PRES_NEW_JOB)
		dl_pacer_job_info(s->pacer, req->job, name, 0, 0);
	if (res->due_ns > now) {
		ts.tv_sec = (time_t)(res->due_ns / 1000000000ULL);
		ts.tv_nsec = (long)(res->due_ns % 1000000000ULL);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	return 1;
}

enum MHD_Result dl_s3_stats(struct dl_s3 *s, struct MHD_Connection *c)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	char *buf = NULL;
	size_t len = 0;

	if (dl_s3_obs_stats_json(s, &buf, &len))
		return dl_s3_reply_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "InternalError",
					 "No statistics.", "/.dliofs/stats.json");
	r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(buf);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}
