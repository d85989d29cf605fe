/* Subcommands that talk to a running mount, and `formats`. */
#ifndef DLIOFS_FS_CLI_H
#define DLIOFS_FS_CLI_H

int dl_cli_stat(const char *mnt, int watch, double interval, int raw, int all, int reset);
int dl_cli_set(const char *mnt, int npairs, char **pairs);
int dl_cli_cache(const char *mnt, const char *cmd, const char *arg);
int dl_cli_trace(const char *mnt, const char *cmd, const char *file, const char *ops);

/* dliofs formats [--config]: the formats served, or a config of all of them. */
int dl_cli_formats(int argc, char **argv);

#endif
