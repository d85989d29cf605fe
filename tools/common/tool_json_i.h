/* `--json FILE|-` for every tool (tools/common/tool_json.c): "-" is stdout,
 * and then the human table goes to stderr so that the JSON stays parseable. */
#ifndef DLIOFS_TOOL_JSON_I_H
#define DLIOFS_TOOL_JSON_I_H

#include <stdio.h>

/* The report's stream: stdout for "-", else FILE opened for writing; NULL
 * with errno set. */
FILE *tool_json_open(const char *path);
/* Close what tool_json_open gave (stdout is flushed, not closed): 0 or
 * -errno. */
int tool_json_close(FILE *f);
/* Where the table goes when --json is json (NULL: none): stderr for "-". */
FILE *tool_table_stream(const char *json);

#endif
