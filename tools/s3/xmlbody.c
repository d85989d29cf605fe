/* The XML bodies clients send: CompleteMultipartUpload (<Part> with
 * <PartNumber> and <ETag>) and DeleteObjects (<Object><Key>, <Quiet>),
 * parsed with expat. A document type declaration (and so any entity
 * of one) is refused; element names are matched without namespace. */
#include <errno.h>
#include <expat.h>
#include <stdlib.h>
#include <string.h>

#include "s3_i.h"

#define DEPTH_MAX 8

struct px {
	XML_Parser p;
	int depth;
	char path[DEPTH_MAX][32];	/* element names from the root */
	struct dl_s3_buf text;		/* the innermost element's text */
	struct dl_s3_xmlbody *out;
	const char *root;
	int kind, bad;
	unsigned cur_num;
	int have_num;
	char cur_etag[DL_S3_ETAG_MAX];
	char *cur_key;
};

static const char *local(const char *name)
{
	const char *sp = strrchr(name, ' ');	/* expat's "ns name" with a separator */

	return sp ? sp + 1 : name;
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	struct px *x = ud;

	(void)attrs;
	if (x->depth >= DEPTH_MAX || strlen(local(name)) >= sizeof(x->path[0]) ||
	    (x->depth == 0 && strcmp(local(name), x->root) != 0)) {
		x->bad = 1;
		XML_StopParser(x->p, XML_FALSE);
		return;
	}
	strcpy(x->path[x->depth++], local(name));
	dl_s3_buf_free(&x->text);
	if (x->depth == 2 && !strcmp(x->path[1], "Part")) {
		x->have_num = 0;
		x->cur_etag[0] = 0;
	}
}

static int add_part(struct px *x)
{
	struct dl_s3_xmlbody *o = x->out;
	struct dl_s3_part_ref *np;

	if (!x->have_num || !x->cur_etag[0] || o->n >= 10000)
		return -EINVAL;
	if (o->n == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 64;
		np = realloc(o->parts, o->cap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		o->parts = np;
	}
	o->parts[o->n].num = x->cur_num;
	strcpy(o->parts[o->n].etag, x->cur_etag);
	o->n++;
	return 0;
}

static int add_key(struct px *x)
{
	struct dl_s3_xmlbody *o = x->out;
	char **nk;

	if (!x->cur_key || o->n >= 1000)
		return -EINVAL;
	if (o->n == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 64;
		nk = realloc(o->keys, o->cap * sizeof(*nk));
		if (!nk)
			return -ENOMEM;
		o->keys = nk;
	}
	o->keys[o->n++] = x->cur_key;
	x->cur_key = NULL;
	return 0;
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
	struct px *x = ud;
	const char *t = x->text.p ? x->text.p : "";
	const char *top = x->depth ? x->path[x->depth - 1] : "";
	int ret = 0;

	(void)name;
	if (x->text.oom)
		ret = -ENOMEM;
	else if (x->kind == DL_S3_XML_COMPLETE && x->depth == 3 && !strcmp(x->path[1], "Part")) {
		if (!strcmp(top, "PartNumber")) {
			char *end;
			unsigned long v = strtoul(t, &end, 10);

			ret = *t < '0' || *t > '9' || *end || v < 1 || v > 10000 ? -EINVAL : 0;
			x->cur_num = (unsigned)v;
			x->have_num = 1;
		} else if (!strcmp(top, "ETag")) {
			/* "\"hex\"" or hex: kept without the quotes. */
			size_t n = strlen(t);

			if (n >= 2 && t[0] == '"' && t[n - 1] == '"') {
				t++;
				n -= 2;
			}
			if (n == 0 || n >= sizeof(x->cur_etag))
				ret = -EINVAL;
			else {
				memcpy(x->cur_etag, t, n);
				x->cur_etag[n] = 0;
			}
		}
	} else if (x->kind == DL_S3_XML_COMPLETE && x->depth == 2 && !strcmp(top, "Part")) {
		ret = add_part(x);
	} else if (x->kind == DL_S3_XML_DELETE && x->depth == 3 && !strcmp(x->path[1], "Object") &&
		   !strcmp(top, "Key")) {
		free(x->cur_key);
		x->cur_key = strdup(t);
		ret = x->cur_key ? 0 : -ENOMEM;
	} else if (x->kind == DL_S3_XML_DELETE && x->depth == 2 && !strcmp(top, "Object")) {
		ret = add_key(x);
	} else if (x->kind == DL_S3_XML_DELETE && x->depth == 2 && !strcmp(top, "Quiet")) {
		x->out->quiet = !strcmp(t, "true");
	}
	dl_s3_buf_free(&x->text);
	x->depth--;
	if (ret) {
		x->bad = 1;
		XML_StopParser(x->p, XML_FALSE);
	}
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
	struct px *x = ud;

	if (x->text.len + (size_t)len > 4096) {
		x->bad = 1;
		XML_StopParser(x->p, XML_FALSE);
		return;
	}
	dl_s3_buf_put(&x->text, s, (size_t)len);
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
			       const XML_Char *pubid, int internal)
{
	struct px *x = ud;

	(void)name;
	(void)sysid;
	(void)pubid;
	(void)internal;
	x->bad = 1;
	XML_StopParser(x->p, XML_FALSE);
}

int dl_s3_xmlbody_parse(const char *xml, size_t len, int kind, struct dl_s3_xmlbody *out)
{
	struct px x = {.out = out, .kind = kind};
	int ret = 0;

	*out = (struct dl_s3_xmlbody){0};
	x.root = kind == DL_S3_XML_COMPLETE ? "CompleteMultipartUpload" : "Delete";
	x.p = XML_ParserCreateNS(NULL, ' ');
	if (!x.p)
		return -ENOMEM;
	XML_SetUserData(x.p, &x);
	XML_SetElementHandler(x.p, on_start, on_end);
	XML_SetCharacterDataHandler(x.p, on_text);
	XML_SetStartDoctypeDeclHandler(x.p, on_doctype);
	if (len > INT32_MAX || XML_Parse(x.p, xml, (int)len, XML_TRUE) != XML_STATUS_OK || x.bad)
		ret = -EINVAL;
	XML_ParserFree(x.p);
	dl_s3_buf_free(&x.text);
	free(x.cur_key);
	if (!ret && out->n == 0)
		ret = -EINVAL;
	if (ret)
		dl_s3_xmlbody_free(out);
	return ret;
}

void dl_s3_xmlbody_free(struct dl_s3_xmlbody *o)
{
	for (size_t i = 0; o->keys && i < o->n; i++)
		free(o->keys[i]);
	free(o->keys);
	free(o->parts);
	*o = (struct dl_s3_xmlbody){0};
}
