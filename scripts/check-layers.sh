#!/usr/bin/env bash
# The layers, bottom up, and what each may include (docs/design.md 2):
#
#   util/     on nothing of ours: units, generator, checksums, histogram,
#             JSON, clocks, byte order, integer math, suggestions
#   formats/  on util: the dataset model and every format
#   pacer/    on util: the storage model
#   trace/    on util: the request trace
#   config/   on formats, pacer, trace, util: YAML to the model
#   fs/ tools/ bench/ tests/: on anything
#
# A lower layer that includes a higher layer's header (public in
# include/dliofs/ or private in its folder) fails this check, naming the
# file, the line and the header.
#
#   bash scripts/check-layers.sh [ROOT]     check ROOT (default: the repo)
#   bash scripts/check-layers.sh --self-test
#       also prove the check fails on a planted violation
set -uo pipefail

# Public headers by the layer that owns them.
declare -A OWNER=(
  [units.h]=util [prng.h]=util [crc32.h]=util [crc32c.h]=util [hist.h]=util
  [json.h]=util [clock.h]=util [bytes.h]=util [intmath.h]=util [suggest.h]=util
  [htab.h]=util [exepath.h]=util [isotonic.h]=util
  [dataset.h]=formats [format.h]=formats [format_list.h]=formats [naming.h]=formats
  [pacer.h]=pacer
  [trace.h]=trace
  [config.h]=config
  [ctl_client.h]=ctl
)
# What each layer may use (itself included).
declare -A MAY=(
  [util]="util"
  [formats]="util formats"
  [pacer]="util pacer"
  [trace]="util trace"
  [config]="util formats pacer trace config"
)

check() {
  local root=$1 bad=0 layer file line hdr owner base
  # Every public header must have an owner: a new one is placed on purpose.
  for file in "$root"/include/dliofs/*.h; do
    base=$(basename "$file")
    if [ -z "${OWNER[$base]:-}" ]; then
      echo "check-layers: include/dliofs/$base belongs to no layer (add it to scripts/check-layers.sh)"
      bad=1
    fi
  done
  while IFS= read -r file; do
    case "$file" in
      "$root"/include/dliofs/*) layer=${OWNER[$(basename "$file")]:-} ;;
      *) layer=$(basename "$(dirname "$file")") ;;
    esac
    [ -n "$layer" ] && [ -n "${MAY[$layer]:-}" ] || continue
    while IFS=: read -r line hdr; do
      hdr=${hdr#*\"}
      hdr=${hdr%\"*}
      case "$hdr" in
        dliofs/*) owner=${OWNER[${hdr#dliofs/}]:-unknown} ;;
        */*) owner=$(basename "$(dirname "$hdr")") ;;
        *) [ -e "$(dirname "$file")/$hdr" ] && owner=$layer || owner=unknown ;;
      esac
      if [[ " ${MAY[$layer]} " != *" $owner "* ]]; then
        echo "check-layers: ${file#"$root"/}:$line: $layer/ includes \"$hdr\" ($owner)"
        bad=1
      fi
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" | sed 's/:.*#[[:space:]]*include[[:space:]]*/:/')
  done < <(find "$root"/util "$root"/formats "$root"/pacer "$root"/trace "$root"/config \
             "$root"/include/dliofs -name '*.[ch]' 2>/dev/null | sort)
  return $bad
}

if [ "${1:-}" = "--self-test" ]; then
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cp -r "$root"/util "$root"/formats "$root"/pacer "$root"/trace "$root"/config "$tmp"/
  mkdir -p "$tmp"/include && cp -r "$root"/include/dliofs "$tmp"/include/
  check "$tmp" >/dev/null || { echo "check-layers: the tree itself fails"; exit 1; }
  printf '#include "dliofs/config.h"\n' >>"$tmp"/formats/registry.c
  out=$(check "$tmp") && { echo "check-layers: a planted violation passed"; exit 1; }
  case "$out" in
    *"formats/registry.c:"*'formats/ includes "dliofs/config.h" (config)'*) ;;
    *) echo "check-layers: the planted violation was not named: $out"; exit 1 ;;
  esac
  echo "check-layers: self-test passed (a planted violation is caught and named)"
  exit 0
fi

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
if check "$root"; then
  echo "check-layers: util < formats, pacer, trace < config: no layer includes a higher one"
else
  exit 1
fi
