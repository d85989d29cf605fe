/* Loading a config: the file or buffer, bounded; libyaml's own errors with
 * their place; then parse.c and validate.c (a DLIO workload translated by
 * dlio.c first). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_i.h"

/* ---- the raw text and libyaml's own errors ---- */

/* 1-based line and column of byte `off`, counting characters as libyaml does. */
static struct dl_loc loc_of_offset(const char *buf, size_t len, size_t off)
{
	struct dl_loc l = { 1, 1 };

	for (size_t i = 0; i < off && i < len; i++) {
		unsigned char ch = (unsigned char)buf[i];

		if (ch == '\n' || (ch == '\r' && !(i + 1 < len && buf[i + 1] == '\n'))) {
			l.line++;
			l.col = 1;
		} else if ((ch & 0xc0) != 0x80 && ch != '\r') {
			l.col++;
		}
	}
	return l;
}

/* Does line `line` (0-based) hold a tab at or before character `col`? */
static int tab_near(const char *buf, size_t len, size_t line, size_t col)
{
	size_t i = 0, l = 0, c = 0;

	while (i < len && l < line) {
		if (buf[i] == '\n' || (buf[i] == '\r' && !(i + 1 < len && buf[i + 1] == '\n')))
			l++;
		i++;
	}
	for (; i < len && buf[i] != '\n' && buf[i] != '\r' && c <= col; i++) {
		if (buf[i] == '\t')
			return 1;
		if (((unsigned char)buf[i] & 0xc0) != 0x80)
			c++;
	}
	return 0;
}

static int report_yaml_error(struct cfg_ctx *c, const yaml_parser_t *p, const char *buf,
			     size_t len)
{
	struct dl_loc loc, end;
	const char *problem = p->problem ? p->problem : "malformed YAML", *utf8;
	char ctx[160] = "";
	size_t off;

	switch (p->error) {
	case YAML_MEMORY_ERROR:
		cfg_error(c, (struct dl_loc){ 0, 0 }, NULL, "out of memory while reading YAML");
		return -ENOMEM;
	case YAML_READER_ERROR:
		off = p->problem_offset;
		/* A bad continuation byte: point at the character it breaks. */
		if (p->problem && strstr(p->problem, "trailing")) {
			for (unsigned back = 1; back <= 3 && back <= off && off <= len; back++) {
				if (((unsigned char)buf[off - back] & 0xc0) == 0xc0) {
					off -= back;
					break;
				}
			}
		}
		loc = loc_of_offset(buf, len, off);
		utf8 = strstr(problem, "UTF") ? "; a config must be UTF-8 text" : "";
		if (p->problem_value != -1)
			cfg_error(c, loc, NULL, "invalid input: %s (byte 0x%02x)%s", problem,
				  (unsigned)p->problem_value & 0xff, utf8);
		else
			cfg_error(c, loc, NULL, "invalid input: %s%s", problem, utf8);
		return -EINVAL;
	default:
		loc.line = (unsigned)p->problem_mark.line + 1;
		loc.col = (unsigned)p->problem_mark.column + 1;
		/* At end of input libyaml points one line past the last: point at
		 * where the text really ends. */
		end = loc_of_offset(buf, len, len);
		if (loc.line > end.line || (loc.line == end.line && loc.col > end.col))
			loc = end;
		if (p->context)
			snprintf(ctx, sizeof(ctx), " (%s at line %u, column %u)", p->context,
				 (unsigned)p->context_mark.line + 1,
				 (unsigned)p->context_mark.column + 1);
		cfg_error(c, loc, NULL, "YAML syntax error: %s%s%s", problem, ctx,
			  tab_near(buf, len, p->problem_mark.line, p->problem_mark.column) ?
			  "; tabs cannot indent YAML, use spaces" : "");
		return -EINVAL;
	}
}

/* Walk the event stream once before libyaml builds a tree: syntax errors,
 * a second document and absurd nesting or size are caught without memory
 * growing with them. */
static int prescan(struct cfg_ctx *c, const char *buf, size_t len)
{
	yaml_parser_t p;
	yaml_event_t ev;
	unsigned depth = 0, nodes = 0, docs = 0;
	int ret = 0;

	if (!yaml_parser_initialize(&p))
		return -ENOMEM;
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	for (;;) {
		yaml_event_type_t type;
		struct dl_loc at;

		if (!yaml_parser_parse(&p, &ev)) {
			ret = report_yaml_error(c, &p, buf, len);
			break;
		}
		type = ev.type;
		at.line = (unsigned)ev.start_mark.line + 1;
		at.col = (unsigned)ev.start_mark.column + 1;
		switch (type) {
		case YAML_DOCUMENT_START_EVENT:
			if (++docs == 2) {
				cfg_error(c, at, NULL,
					  "a second YAML document starts here; a config is one "
					  "document (remove the '---' or split the file)");
				ret = -EINVAL;
			}
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			nodes++;
			if (++depth > CFG_MAX_DEPTH) {
				cfg_error(c, at, NULL, "nested more than %u levels deep",
					  CFG_MAX_DEPTH);
				ret = -EINVAL;
			}
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_SCALAR_EVENT:
		case YAML_ALIAS_EVENT:
			nodes++;
			break;
		default:
			break;
		}
		if (!ret && nodes > CFG_MAX_NODES) {
			cfg_error(c, at, NULL, "more than %u YAML nodes; a config has a few hundred",
				  CFG_MAX_NODES);
			ret = -EINVAL;
		}
		yaml_event_delete(&ev);
		if (ret || type == YAML_STREAM_END_EVENT)
			break;
	}
	if (!ret && docs == 0) {
		cfg_error(c, (struct dl_loc){ 1, 1 }, NULL,
			  "empty config: expected a mapping with a 'datasets' list");
		ret = -EINVAL;
	}
	yaml_parser_delete(&p);
	return ret;
}

/* ---- loading ---- */

void dl_config_free(struct dl_config *cfg)
{
	if (!cfg)
		return;
	dl_pacer_cfg_free(&cfg->pacer);
	free(cfg->backing);
	free(cfg->datasets);
	free(cfg);
}

int dl_config_load_buf(const char *name, const char *yaml, size_t len, FILE *err,
		       struct dl_config **out)
{
	struct cfg_ctx c = { .name = name ? name : "<config>", .err = err };
	struct cfg_src src = { 0 };
	struct dl_config *cfg = NULL;
	struct cfg_dlio *dlio = NULL;
	yaml_parser_t parser;
	yaml_document_t doc, *model_doc = &doc;
	int have_parser = 0, have_doc = 0, ret;

	if (out)
		*out = NULL;
	if (!yaml)
		yaml = "";
	if (len > CFG_MAX_BYTES) {
		cfg_error(&c, (struct dl_loc){ 0, 0 }, NULL,
			  "too large (%zu bytes, at most %u); a config is a few kB", len,
			  CFG_MAX_BYTES);
		ret = -EINVAL;
		goto out;
	}
	ret = prescan(&c, yaml, len);
	if (ret)
		goto out;
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg || !yaml_parser_initialize(&parser)) {
		ret = -ENOMEM;
		goto out;
	}
	dl_pacer_cfg_init(&cfg->pacer);
	have_parser = 1;
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	if (!yaml_parser_load(&parser, &doc)) {
		ret = report_yaml_error(&c, &parser, yaml, len);
		goto out;
	}
	have_doc = 1;
	cfg_copy_text(cfg->path, sizeof(cfg->path), c.name);
	if (cfg_dlio_detect(&doc)) {
		/* A DLIO workload: checked as the native document it stands for. */
		ret = cfg_dlio_translate(&c, &doc, &dlio, &model_doc);
		if (ret || !model_doc) {
			ret = ret ? ret : -EINVAL;
			goto out;
		}
	}
	ret = cfg_parse(&c, model_doc, cfg, &src);
	if (!ret && !cfg_too_many(&c))
		ret = cfg_validate(&c, cfg, &src);
	if (!ret && c.nerr)
		ret = -EINVAL;
	if (!ret && dlio)
		cfg_dlio_report_ignored(&c, dlio);
out:
	cfg_dlio_free(dlio);
	if (ret == -ENOMEM && err)
		fprintf(err, "%s: out of memory\n", c.name);
	free(src.ds);
	if (have_doc)
		yaml_document_delete(&doc);
	if (have_parser)
		yaml_parser_delete(&parser);
	if (ret || !out)
		dl_config_free(cfg);
	else
		*out = cfg;
	return ret;
}

static int errno_class(int e)
{
	if (e == ENOENT || e == ENOTDIR)
		return -ENOENT;
	if (e == EACCES || e == EPERM)
		return -EACCES;
	return -EIO;
}

/* The whole file in memory (configs are small; the cap keeps it so). */
static int read_all(const char *path, FILE *err, char **bufp, size_t *lenp)
{
	size_t len = 0, cap = 4096;
	char *buf = NULL, *nb;
	struct stat st;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = errno;
		if (err)
			fprintf(err, "%s: cannot open: %s\n", path, strerror(ret));
		return errno_class(ret);
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (err)
			fprintf(err, "%s: cannot open: %s\n", path, strerror(EISDIR));
		ret = -EIO;
		goto out;
	}
	buf = malloc(cap);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (len == cap) {
			if (cap > CFG_MAX_BYTES) {
				if (err)
					fprintf(err, "%s: too large (over %u bytes); a config is a "
						"few kB\n", path, CFG_MAX_BYTES);
				ret = -EINVAL;
				goto out;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				ret = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			if (err)
				fprintf(err, "%s: cannot read: %s\n", path, strerror(e));
			ret = errno_class(e) == -EACCES ? -EACCES : -EIO;
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	*bufp = buf;
	*lenp = len;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return ret;
}

int dl_config_load(const char *path, FILE *err, struct dl_config **out)
{
	char *buf = NULL;
	size_t len = 0;
	int ret;

	if (out)
		*out = NULL;
	if (!path || !*path) {
		if (err)
			fprintf(err, "config: cannot open: %s\n", strerror(ENOENT));
		return -ENOENT;
	}
	ret = read_all(path, err, &buf, &len);
	if (ret)
		return ret;
	ret = dl_config_load_buf(path, buf, len, err, out);
	free(buf);
	return ret;
}
