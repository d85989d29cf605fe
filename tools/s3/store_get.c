/* HeadObject and GetObject of a backing directory's file: the file itself
 * is the response (libmicrohttpd sends it from the descriptor), over the
 * requested range, after the pacer's decision as for a dataset's object. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dliofs/clock.h"
#include "s3_i.h"

enum MHD_Result dl_s3_store_get(struct dl_s3 *s, const struct dl_s3_bucket *b, const char *key,
				struct MHD_Connection *c, int head)
{
	struct dl_pacer_req req;
	struct dl_pacer_result res;
	struct MHD_Response *r;
	enum MHD_Result ret;
	char etag[80], date[64], cr[96];
	uint64_t off = 0, len, size;
	struct stat st;
	int fd, rr, paced;

	fd = dl_s3_store_open_obj(b, key, &st);
	if (fd < 0)
		return dl_s3_reply_error(c, MHD_HTTP_NOT_FOUND, "NoSuchKey",
					 "The specified key does not exist.", key);
	size = (uint64_t)st.st_size;
	len = size;
	rr = dl_s3_parse_range(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Range"), size,
			       &off, &len);
	if (rr < 0) {
		close(fd);
		snprintf(cr, sizeof(cr), "bytes */%" PRIu64, size);
		return dl_s3_reply_error_hdr(c, MHD_HTTP_RANGE_NOT_SATISFIABLE, "InvalidRange",
					     "The requested range is not satisfiable", key,
					     "Content-Range", cr);
	}
	dl_s3_store_etag(fd, &st, etag, sizeof(etag));
	dl_s3_http_date((uint64_t)st.st_mtim.tv_sec, date, sizeof(date));
	req = (struct dl_pacer_req){.cls = head ? DL_OP_META : DL_OP_READ,
				    .file_id = ((uint64_t)st.st_dev << 40) ^ (uint64_t)st.st_ino,
				    .off = head ? 0 : off, .len = head ? 0 : len,
				    .file_size = size};
	paced = dl_s3_pace(s, c, &req, &res);
	if (S_ISDIR(st.st_mode) || len == 0) {
		close(fd);
		fd = -1;
		r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	} else {
		r = MHD_create_response_from_fd_at_offset64(len, fd, off);
	}
	if (paced)
		dl_pacer_complete(s->pacer, &req, &res, dl_mono_ns());
	if (!r) {
		if (fd >= 0)
			close(fd);
		return MHD_NO;
	}
	MHD_add_response_header(r, "ETag", etag);
	MHD_add_response_header(r, "Last-Modified", date);
	MHD_add_response_header(r, "Accept-Ranges", "bytes");
	MHD_add_response_header(r, "Content-Type", S_ISDIR(st.st_mode) ? "application/x-directory"
								 : "application/octet-stream");
	MHD_add_response_header(r, "Server", "dliofs");
	if (rr > 0) {
		snprintf(cr, sizeof(cr), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, off,
			 off + len - 1, size);
		MHD_add_response_header(r, "Content-Range", cr);
	}
	ret = MHD_queue_response(c, rr > 0 ? MHD_HTTP_PARTIAL_CONTENT : MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}
