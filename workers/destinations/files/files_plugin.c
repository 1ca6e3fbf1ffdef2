/*
 * files_plugin.c — the plug-in files: destination files: CSV, JSON lines
 * or Parquet files in a folder (dest_files.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.c.
 * Its option rows still live in conf/options.c (issue 19 moves them here).
 */
#include "conf/plugin.h"
#include "workers/destinations/dest.h"

extern const zx_dest zx_dest_files;   /* dest_files.c */

const zx_plugin zx_plugin_dest_files = {
    .name = "files",
    .role = ZX_PLUGIN_DESTINATION,
    .dest = &zx_dest_files,
    .doc = "files in a folder: `csv`, `json` or `parquet`, each run written under a "
     "temporary name and renamed into place.",
};
