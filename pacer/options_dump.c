/* The pacer's options as text: a value as the config writes it, the
 * effective model as YAML, and the help, all from the options table. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "dliofs/units.h"
#include "options_i.h"


const char *pacer_scope_prefix(enum opt_scope s)
{
	switch (s) {
	case S_DEV:
		return "{read,write,meta}.";
	case S_PHASE:
		return "phases.N.";
	case S_RULE:
		return "share.jobs.N.";
	default:
		return "";
	}
}


void pacer_fmt_size(uint64_t b, char *buf, size_t len, const char *suffix)
{
	static const char *const dec[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
	static const char *const bin[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	uint64_t bestv = b, m;
	const char *bests = "";

	if (!b) {
		snprintf(buf, len, "0%s", suffix[0] ? "B/s" : "");
		return;
	}
	/* The exact spelling with the smallest number: 2GB/s, not 2000000000B/s. */
	m = 1;
	for (unsigned i = 1; i < 7; i++) {
		m *= 1000;
		if (b % m == 0 && b / m < bestv) {
			bestv = b / m;
			bests = dec[i];
		}
	}
	for (unsigned i = 1; i < 7; i++) {
		m = 1ULL << (10 * i);
		if (b % m == 0 && b / m < bestv) {
			bestv = b / m;
			bests = bin[i];
		}
	}
	if (suffix[0] && !bests[0])
		bests = "B";
	snprintf(buf, len, "%llu%s%s", (unsigned long long)bestv, bests, suffix);
}

static void fmt_count(uint64_t c, char *buf, size_t len)
{
	if (c && c % 1000000 == 0)
		snprintf(buf, len, "%lluM", (unsigned long long)(c / 1000000));
	else if (c && c % 1000 == 0)
		snprintf(buf, len, "%lluk", (unsigned long long)(c / 1000));
	else
		snprintf(buf, len, "%llu", (unsigned long long)c);
}

void pacer_fmt_val(const struct opt *o, const void *field, char *buf, size_t len)
{
	uint64_t u;

	switch (o->type) {
	case T_BOOL:
		snprintf(buf, len, "%s", *(const int *)field ? "true" : "false");
		break;
	case T_STR: {
		const char *s = field;
		size_t j = 0;

		/* YAML double-quoted scalar. */
		buf[j++] = '"';
		for (; *s && j + 3 < len; s++) {
			if (*s == '"' || *s == '\\')
				buf[j++] = '\\';
			buf[j++] = *s;
		}
		buf[j++] = '"';
		buf[j] = '\0';
		break;
	}
	case T_RATE:
		u = *(const uint64_t *)field;
		if (!u)
			snprintf(buf, len, "unlimited");
		else
			pacer_fmt_size(u, buf, len, "/s");
		break;
	case T_SIZE:
		u = *(const uint64_t *)field;
		/* The effective value: 0 means the default here. */
		if (!u && o->off == offsetof(struct dl_dev_model, burst) && o->scope == S_DEV)
			u = PACER_DEFAULT_BURST;
		pacer_fmt_size(u, buf, len, "");
		break;
	case T_COUNT:
		u = *(const uint64_t *)field;
		/* iops_burst 0 is not "unlimited": the bucket's least depth. */
		if (!u && o->scope == S_DEV && o->off == offsetof(struct dl_dev_model, iops_burst))
			snprintf(buf, len, "0");
		else if (!u)
			snprintf(buf, len, "unlimited");
		else
			fmt_count(u, buf, len);
		break;
	case T_QD:
		u = *(const uint32_t *)field;
		if (!u)
			snprintf(buf, len, "unlimited");
		else
			fmt_count(u, buf, len);
		break;
	case T_TIME:
		pacer_fmt_time(*(const uint64_t *)field, buf, len);
		break;
	case T_LAT:
		pacer_lat_format(field, buf, len);
		break;
	case T_LATSIZE:
		pacer_sizes_format(field, buf, len);
		break;
	case T_CONC:
		pacer_conc_format(field, buf, len);
		break;
	case T_POLICY:
		u = (uint64_t) * (const enum dl_cache_policy *)field;
		snprintf(buf, len, "%s", u < 4 ? pacer_policy_names[u] : "?");
		break;
	case T_NPHASES:
	case T_NRULES:
		snprintf(buf, len, "%u", *(const unsigned *)field);
		break;
	case T_PER:
		snprintf(buf, len, "%.4g", (double)*(const uint64_t *)field / 1e6);
		break;
	case T_FACTOR:
		u = *(const uint64_t *)field;
		if (!u)
			snprintf(buf, len, "none");
		else
			snprintf(buf, len, "%.4g", (double)u / 1e6);
		break;
	case T_SHARE:
		u = (uint64_t) * (const enum dl_share_policy *)field;
		snprintf(buf, len, "%s", u < 2 ? pacer_share_names[u] : "?");
		break;
	}
}


/* ---- dump and help, from the same table ---- */

/* The keys only a device model has (transfer > 0): a plain model's dump
 * stays as it was. */
static int device_only(const struct opt *o)
{
	size_t off = o->off;

	return o->scope == S_DEV && (off == offsetof(struct dl_dev_model, transfer) ||
				     off == offsetof(struct dl_dev_model, refill_ns) ||
				     off == offsetof(struct dl_dev_model, iops_burst) ||
				     off == offsetof(struct dl_dev_model, noise_ppm) ||
				     off == offsetof(struct dl_dev_model, lanes) ||
				     off == offsetof(struct dl_dev_model, serial_ns) ||
				     off == offsetof(struct dl_dev_model, stall_every) ||
				     off == offsetof(struct dl_dev_model, stall_ns) ||
				     off == offsetof(struct dl_dev_model, max_request));
}

/* The keys only metadata has, dumped where set. */
static int meta_only(const struct opt *o)
{
	return o->scope == S_DEV && (o->off == offsetof(struct dl_dev_model, device_ios_ppm) ||
				     o->off == offsetof(struct dl_dev_model, readdir_ios_ppm));
}

/* A device model in words, as YAML comment lines: what each key is. */
static void describe(const struct dl_dev_model *m, const char *cls, FILE *out, int indent)
{
	char ch[32], lat[320];

	if (!m->transfer)
		return;
	if (m->latency.kind == DL_LAT_CONST)
		snprintf(lat, sizeof(lat), "%.1fus", (double)m->latency.a_ns / 1e3);
	else
		pacer_lat_format(&m->latency, lat, sizeof(lat));
	snprintf(ch, sizeof(ch), "%u", m->queue_depth);
	fprintf(out,
		"%*s# a device model: a request leaves the throttle, then holds one of %s channels "
		"(%s.queue_depth)\n",
		indent, "", m->queue_depth ? ch : "unlimited", cls);
	fprintf(out, "%*s# for its fixed cost %s (%s.latency) and its bytes at %.1f MB/s (%s.transfer)",
		indent, "", lat, cls, (double)m->transfer / 1e6, cls);
	if (m->lanes)
		fprintf(out, " on one of %llu data paths (%s.lanes)", (unsigned long long)m->lanes, cls);
	else
		fprintf(out, " on a data path of its own (%s.lanes unlimited)", cls);
	if (m->serial_ns)
		fprintf(out, " after %.1fus there (%s.serial)", (double)m->serial_ns / 1e3, cls);
	if (m->noise_ppm)
		fprintf(out, ", times a noise of p99 x%.3g (%s.noise)", (double)m->noise_ppm / 1e6, cls);
	if (m->stall_every && m->stall_ns)
		fprintf(out, ", one in %llu stalling %.2f ms on average (%s.stall_every, %s.stall)",
			(unsigned long long)m->stall_every, (double)m->stall_ns / 1e6, cls, cls);
	fprintf(out, "; the pieces of one read in flight together are one request of at most %llu "
		"KiB (%s.max_request)\n",
		(unsigned long long)((m->max_request ? m->max_request : 4ULL << 20) >> 10), cls);
	if (!m->bandwidth && !m->iops) {
		fprintf(out, "%*s# throttle: none (%s.bandwidth and %s.iops unlimited)\n", indent, "",
			cls, cls);
		return;
	}
	fprintf(out, "%*s# throttle:", indent, "");
	if (m->bandwidth)
		fprintf(out, " a byte bucket of %.1f MB/s (%s.bandwidth)", (double)m->bandwidth / 1e6,
			cls);
	if (m->iops)
		fprintf(out, "%s an IO bucket of %llu/s (%s.iops)", m->bandwidth ? " and" : "",
			(unsigned long long)m->iops, cls);
	if (m->refill_ns)
		fprintf(out, ", refilled in lumps every %.0f ms (%s.refill; blk-throttle: 100 ms)\n",
			(double)m->refill_ns / 1e6, cls);
	else
		fprintf(out, ", refilled continuously (%s.refill 0)\n", cls);
}

static void dump_models(const struct dl_dev_model *m, FILE *out, int indent)
{
	char buf[8192];

	for (int c = 0; c < DL_OP__COUNT; c++) {
		fprintf(out, "%*s%s:\n", indent, "", pacer_class_names[c]);
		describe(&m[c], pacer_class_names[c], out, indent + 2);
		for (unsigned i = 0; i < pacer_nopts; i++) {
			if (pacer_opts[i].scope != S_DEV || (device_only(&pacer_opts[i]) && !m[c].transfer))
				continue;
			if (meta_only(&pacer_opts[i]) &&
			    (c != DL_OP_META ||
			     !*(const uint64_t *)((const char *)&m[c] + pacer_opts[i].off)))
				continue;
			pacer_fmt_val(&pacer_opts[i], (const char *)&m[c] + pacer_opts[i].off, buf, sizeof(buf));
			fprintf(out, "%*s%s: %s\n", indent + 2, "", pacer_opts[i].name, buf);
		}
	}
}

/* Where the cache policy came from, as a YAML comment (the dump reads back). */
static void dump_cache_note(const struct dl_cache_cfg *c, FILE *out, int indent)
{
	fprintf(out, "%*s# ", indent, "");
	for (const char *s = c->origin[0] ? c->origin : "?"; *s; s++)
		fputc((unsigned char)*s < 0x20 ? '?' : *s, out);
	fputc('\n', out);
}

void dl_pacer_cfg_dump(const struct dl_pacer_cfg *cfg, FILE *out, int indent)
{
	const char *section = NULL, *dot;
	char buf[512];
	unsigned i, p;

	/* Plain top-level keys, the constant model, the phases, then the
	 * dotted top-level keys grouped under their section. */
	for (i = 0; i < pacer_nopts; i++) {
		if (pacer_opts[i].scope != S_TOP || pacer_opts[i].nodump || strchr(pacer_opts[i].name, '.'))
			continue;
		/* An empty name is left out: `profile: ""` would name a profile. */
		if (pacer_opts[i].type == T_STR && !*((const char *)cfg + pacer_opts[i].off))
			continue;
		pacer_fmt_val(&pacer_opts[i], (const char *)cfg + pacer_opts[i].off, buf, sizeof(buf));
		fprintf(out, "%*s%s: %s\n", indent, "", pacer_opts[i].name, buf);
	}
	dump_models(cfg->m, out, indent);
	fprintf(out, "%*sphases:%s\n", indent, "", cfg->nphases ? "" : " []");
	for (p = 0; p < cfg->nphases && p < DL_PACER_MAX_PHASES; p++) {
		int first = 1;

		for (i = 0; i < pacer_nopts; i++) {
			if (pacer_opts[i].scope != S_PHASE)
				continue;
			pacer_fmt_val(&pacer_opts[i], (const char *)&cfg->phases[p] + pacer_opts[i].off, buf,
				sizeof(buf));
			fprintf(out, "%*s%s%s: %s\n", indent + 2, "", first ? "- " : "  ",
				pacer_opts[i].name, buf);
			first = 0;
		}
		dump_models(cfg->phases[p].m, out, indent + 4);
	}
	for (i = 0; i < pacer_nopts; i++) {
		if (pacer_opts[i].scope != S_TOP || pacer_opts[i].nodump || !(dot = strchr(pacer_opts[i].name, '.')))
			continue;
		if (!section || strncmp(section, pacer_opts[i].name, (size_t)(dot - pacer_opts[i].name) + 1)) {
			section = pacer_opts[i].name;
			fprintf(out, "%*s%.*s:\n", indent, "", (int)(dot - pacer_opts[i].name),
				pacer_opts[i].name);
			if (!strncmp(section, "cache.", 6))
				dump_cache_note(&cfg->cache, out, indent + 2);
		}
		pacer_fmt_val(&pacer_opts[i], (const char *)cfg + pacer_opts[i].off, buf, sizeof(buf));
		fprintf(out, "%*s%s: %s\n", indent + 2, "", dot + 1, buf);
	}
	fprintf(out, "%*sjobs:%s\n", indent + 2, "", cfg->share.nrules ? "" : " []");
	for (p = 0; p < cfg->share.nrules && p < DL_PACER_MAX_RULES; p++) {
		int first = 1;

		for (i = 0; i < pacer_nopts; i++) {
			if (pacer_opts[i].scope != S_RULE)
				continue;
			pacer_fmt_val(&pacer_opts[i], (const char *)&cfg->share.rules[p] + pacer_opts[i].off, buf,
				sizeof(buf));
			fprintf(out, "%*s%s%s: %s\n", indent + 4, "", first ? "- " : "  ",
				pacer_opts[i].name, buf);
			first = 0;
		}
	}
}

void dl_pacer_cfg_help(FILE *out)
{
	char forms[512];

	dl_lat_forms(forms, sizeof(forms));
	fprintf(out,
		"pacer keys (the YAML pacer: section, flattened with dots, and live changes):\n");
	for (unsigned i = 0; i < pacer_nopts; i++) {
		fprintf(out, "  %s%s\n      %s%s\n", pacer_scope_prefix(pacer_opts[i].scope), pacer_opts[i].name,
			pacer_opts[i].help, pacer_opts[i].type == T_LAT ? forms : "");
	}
	fprintf(out,
		"  phases.N.{read,write,meta}.KEY\n"
		"      the device keys above for phase N only; a request uses the phase current\n"
		"      when it is submitted. Device keys of the constant model also apply to\n"
		"      the phases that did not set them.\n"
		"empirical(FILE): a text file of measured latencies, one per line: a time with\n"
		"  its unit (\"153us\", \"1.2ms\", \"153 us\"), optionally followed by a weight\n"
		"  (\"153us 40\": 40 times as likely as a weight of 1; default 1). Fields may be\n"
		"  separated by blanks, commas or semicolons; # starts a comment. A line\n"
		"  \"unit us\" lets the following bare numbers (\"153\") be read in that unit.\n"
		"  Requests draw the listed values with their frequencies (at most 16Mi lines).\n"
		"Model, per class: a request waits for one of queue_depth slots (arrival\n"
		"  order), then for an IOPS slot (1/iops apart), then takes its latency draw,\n"
		"  then moves its bytes through the class's bandwidth (a token bucket of\n"
		"  `burst` bytes, empty at start). Its slot is held until it completes.\n"
		"  Reads first look in the emulated cache: hit bytes cost size/hit_bandwidth,\n"
		"  miss bytes go through the model; the request completes when both are done.\n"
		"  A device model (transfer above 0; what dliofs profile fits): a request\n"
		"  leaves the throttle when the byte bucket (bandwidth, burst) and the IO\n"
		"  bucket (iops, iops_burst), refilled every `refill` (0: continuously), hold\n"
		"  enough, then holds one of queue_depth channels for latency x noise, then\n"
		"  serial x noise + size / transfer on one of `lanes` data paths. A what-if\n"
		"  key changes its part only: bandwidth the byte bucket, iops the IO bucket,\n"
		"  latency the fixed cost. Older profiles give latency_by_size, drawn for the\n"
		"  request's size,\n"
		"  and bandwidth_by_concurrency, which stretches that latency by\n"
		"  k bw(1) / bw(k) when k requests of the class are in service.\n");
}

