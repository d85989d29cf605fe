/* Where the tools' helper files are (tools/common/tool_path.c), shared by
 * dlio-trace and dlio-stall. Nothing here knows the source tree: a helper
 * is found through an environment override, else relative to the running
 * binary, in the build tree (DL_HELPER_BUILD_REL, "tools") or as installed
 * (DL_HELPER_INSTALL_REL, "../share/dliofs" by default); meson.build sets
 * both. */
#ifndef DLIOFS_TOOL_PATH_I_H
#define DLIOFS_TOOL_PATH_I_H

#include <stddef.h>

/* The helper rel ("dlio_trace_plot.py", "stall/sitecustomize.py"):
 *   $env, when set and not empty (used as it is: the user asked for it);
 *   <exe dir>/DL_HELPER_BUILD_REL/rel;
 *   <exe dir>/DL_HELPER_INSTALL_REL/rel.
 * 0 with its path in path; -ENOENT when no candidate is readable, with
 * path holding the places looked at ("A, B") for the message. */
int tool_helper(const char *env, const char *rel, char *path, size_t len);

/* A library installed with the tools (libdlio_cupti.so): <exe dir>/name in
 * the build tree, else <exe dir>/DL_LIB_INSTALL_REL/name. 0 or -ENOENT. */
int tool_library(const char *name, char *path, size_t len);

#endif
