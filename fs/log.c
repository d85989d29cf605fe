/* Escaping client text for the log (see log_i.h). A name or symlink target
 * is whatever bytes a client chose: a newline in it would forge a line of
 * the daemon's own, an ESC a terminal sequence when the log is read. */
#include <stdio.h>
#include <string.h>

#include "log_i.h"

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one
 * (overlong forms, surrogates and values past U+10FFFF are not). */
static size_t utf8_len(const unsigned char *s, unsigned *cp)
{
	unsigned c = s[0], n, min, v;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if ((c & 0xe0) == 0xc0)
		n = 2, min = 0x80, v = c & 0x1f;
	else if ((c & 0xf0) == 0xe0)
		n = 3, min = 0x800, v = c & 0x0f;
	else if ((c & 0xf8) == 0xf0)
		n = 4, min = 0x10000, v = c & 0x07;
	else
		return 0;
	for (unsigned i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n;
}

const char *dl_log_esc(const char *s, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;

	if (len < 4) {
		if (len)
			buf[0] = 0;
		return buf;
	}
	while (*p) {
		char tmp[8];
		size_t n, k;
		unsigned cp;

		n = utf8_len(p, &cp);
		if (n == 0) {
			k = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", *p);
			n = 1;
		} else if (cp == '\n') {
			k = (size_t)snprintf(tmp, sizeof(tmp), "\\n");
		} else if (cp == '\r') {
			k = (size_t)snprintf(tmp, sizeof(tmp), "\\r");
		} else if (cp == '\t') {
			k = (size_t)snprintf(tmp, sizeof(tmp), "\\t");
		} else if (cp == '\\' || cp == '\'') {
			k = (size_t)snprintf(tmp, sizeof(tmp), "\\%c", (char)cp);
		} else if (cp < 0x20 || cp == 0x7f) {
			k = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", cp);
		} else if ((cp >= 0x80 && cp < 0xa0) || cp == 0x2028 || cp == 0x2029) {
			k = (size_t)snprintf(tmp, sizeof(tmp), "\\u%04x", cp);
		} else {
			memcpy(tmp, p, n);
			k = n;
		}
		/* Keep room for "..." and the NUL. */
		if (o + k + 4 > len) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		memcpy(buf + o, tmp, k);
		o += k;
		p += n;
	}
	buf[o] = 0;
	return buf;
}
