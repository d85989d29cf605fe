#!/usr/bin/env bash
# The layers, bottom up, and what each may include (docs/design.md 2):
#
#   util/     on nothing of ours: units, generator, checksums, histogram,
#             JSON, clocks, byte order, integer math, suggestions, token substitution
#   formats/  on util: the dataset model and every format
#   pacer/    on util: the storage model
#   trace/    on util: the request trace
#   config/   on formats, pacer, trace, util: YAML to the model
#   ctl/      on util, formats (a name): the control client of a mount
#   tools/common/  what every tool shares: on the libraries and ctl
#   tools/<tool>/  one tool: its own folder, tools/common, ctl and the
#             libraries; never another tool's folder or fs/, and its
#             meson.build compiles no source outside its folder
#   fs/ bench/ tests/: on anything (fs/ sees a tool through its public
#             header only: tools/profile/profile.h, tools/s3/s3.h)
#
# A lower layer that includes a higher layer's header (public in
# include/dliofs/ or private in its folder), or a tool that includes
# another tool's header or compiles its source, or a tool that includes
# <yaml.h> (config/ reads YAML for everyone), fails this check, naming the
# file, the line and the header.
#
#   bash scripts/check-layers.sh [ROOT]     check ROOT (default: the repo)
#   bash scripts/check-layers.sh --self-test
#       also prove the check fails on a planted violation
set -uo pipefail

# Public headers by the layer that owns them.
declare -A OWNER=(
  [units.h]=util [prng.h]=util [crc32.h]=util [crc32c.h]=util [hist.h]=util
  [json.h]=util [clock.h]=util [bytes.h]=util [intmath.h]=util [suggest.h]=util [subst.h]=util
  [htab.h]=util [exepath.h]=util [isotonic.h]=util
  [dataset.h]=formats [format.h]=formats [format_list.h]=formats [naming.h]=formats
  [pacer.h]=pacer
  [trace.h]=trace
  [config.h]=config [dlio_keys.h]=config
  [ctl_client.h]=ctl
)
LIBS="util formats pacer trace config"
# What each layer may use (itself included).
declare -A MAY=(
  [util]="util"
  [formats]="util formats"
  [pacer]="util pacer"
  [trace]="util trace"
  [config]="util formats pacer trace config"
  [ctl]="util formats ctl"
)

# Every quoted include under the folders named, one grep for all of them:
# "FILE:LINE:HEADER" lines, sorted.
includes() {
  grep -rn --include='*.[ch]' '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$@" 2>/dev/null |
    sed 's/^\([^:]*:[0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/' | sort
}

check() {
  local root=$1 bad=0 layer file line hdr owner base dir rest
  # Every public header must have an owner: a new one is placed on purpose.
  for file in "$root"/include/dliofs/*.h; do
    base=${file##*/}
    if [ -z "${OWNER[$base]:-}" ]; then
      echo "check-layers: include/dliofs/$base belongs to no layer (add it to scripts/check-layers.sh)"
      bad=1
    fi
  done
  while IFS= read -r rest; do
    file=${rest%%:*}; rest=${rest#*:}; line=${rest%%:*}; hdr=${rest#*:}
    dir=${file%/*}
    case "$file" in
      "$root"/include/dliofs/*) layer=${OWNER[${file##*/}]:-} ;;
      *) layer=${dir##*/} ;;
    esac
    [ -n "$layer" ] && [ -n "${MAY[$layer]:-}" ] || continue
    case "$hdr" in
      dliofs/*) owner=${OWNER[${hdr#dliofs/}]:-unknown} ;;
      */*) owner=${hdr%/*}; owner=${owner##*/} ;;
      *) [ -e "$dir/$hdr" ] && owner=$layer || owner=unknown ;;
    esac
    if [[ " ${MAY[$layer]} " != *" $owner "* ]]; then
      echo "check-layers: ${file#"$root"/}:$line: $layer/ includes \"$hdr\" ($owner)"
      bad=1
    fi
  done < <(includes "$root"/util "$root"/formats "$root"/pacer "$root"/trace "$root"/config \
             "$root"/ctl "$root"/include/dliofs)
  return $bad
}

# The tools' wing: tools/<tool>/ may include its own headers, tools/common's,
# ctl's and the libraries'; tools/common/ the libraries' and ctl's.
check_tools() {
  local root=$1 bad=0 dir tool file line hdr owner base may rest
  for dir in "$root"/tools/*/; do
    dir=${dir%/}
    tool=${dir##*/}
    may="$LIBS ctl"
    [ "$tool" = common ] || may="$may common"
    while IFS= read -r rest; do
      file=${rest%%:*}; rest=${rest#*:}; line=${rest%%:*}; hdr=${rest#*:}
      case "$hdr" in
        dliofs/*) owner=${OWNER[${hdr#dliofs/}]:-unknown} ;;
        */*) owner="a path outside the folder" ;;
        *) if [ -e "${file%/*}/$hdr" ]; then owner=self
           elif [ -e "$root/tools/common/$hdr" ]; then owner=common
           else
             owner=unknown
             for base in "$root"/tools/*/"$hdr" "$root"/fs/"$hdr"; do
               [ -e "$base" ] && { owner=${base#"$root"/}; owner=${owner%/*}; break; }
             done
           fi ;;
      esac
      if [ "$owner" != self ] && [[ " $may " != *" $owner "* ]]; then
        echo "check-layers: ${file#"$root"/}:$line: tools/$tool/ includes \"$hdr\" ($owner)"
        bad=1
      fi
    done < <(includes "$dir")
    # YAML is config/'s to read: a tool asks it (dliofs/config.h, and a
    # DLIO workload's own keys in dliofs/dlio_keys.h).
    while IFS=: read -r file line; do
      echo "check-layers: ${file#"$root"/}:$line: tools/$tool/ includes <yaml.h> (config/ reads YAML: dliofs/config.h, dliofs/dlio_keys.h)"
      bad=1
    done < <(grep -rn --include='*.[ch]' '^[[:space:]]*#[[:space:]]*include[[:space:]]*<yaml\.h>' "$dir" |
               cut -d: -f1,2)
    # A source of another folder compiled in (what dlio-whatif once did).
    if [ -f "$dir/meson.build" ]; then
      while IFS=: read -r line hdr; do
        echo "check-layers: tools/$tool/meson.build:$line: compiles a source outside tools/$tool/: $hdr"
        bad=1
      done < <(grep -n "'\.\./[^']*\.c'" "$dir/meson.build" | sed "s/^\([0-9]*\):.*\('\.\.\/[^']*\.c'\).*/\1:\2/")
    fi
  done
  return $bad
}

# One options engine: getopt (long or not) is called, and <getopt.h>
# included, by tools/common/tool_opts.c alone; every command line of the
# tree (the tools', dliofs's) is parsed through a table it takes
# (tools/common/tool_opts_i.h, docs/adding-a-tool.md).
check_getopt() {
  local root=$1 bad=0 file line rest dirs=()
  for d in util formats pacer trace config ctl tools fs; do
    [ -d "$root/$d" ] && dirs+=("$root/$d")
  done
  while IFS= read -r rest; do
    file=${rest%%:*}; rest=${rest#*:}; line=${rest%%:*}
    [ "${file#"$root"/}" = tools/common/tool_opts.c ] && continue
    echo "check-layers: ${file#"$root"/}:$line: getopt outside the options engine (tools/common/tool_opts.c): give the command a tool_opts table"
    bad=1
  done < <(grep -rnE --include='*.[ch]' \
             '(^|[^_[:alnum:]])getopt(_long(_only)?)?[[:space:]]*\(|#[[:space:]]*include[[:space:]]*<getopt\.h>' \
             "${dirs[@]}" 2>/dev/null | sort -t: -k1,1 -k2,2n)
  return $bad
}

check_all() {
  local bad=0
  check "$1" || bad=1
  check_tools "$1" || bad=1
  check_getopt "$1" || bad=1
  return $bad
}

if [ "${1:-}" = "--self-test" ]; then
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cp -r "$root"/util "$root"/formats "$root"/pacer "$root"/trace "$root"/config "$root"/ctl \
    "$root"/tools "$tmp"/
  mkdir -p "$tmp"/fs && cp "$root"/fs/*.h "$tmp"/fs/
  mkdir -p "$tmp"/include && cp -r "$root"/include/dliofs "$tmp"/include/
  check_all "$tmp" >/dev/null || { echo "check-layers: the tree itself fails"; exit 1; }
  # Each plant alone: the check must fail and name it.
  plant() { # FILE LINE EXPECTED
    cp "$tmp/$1" "$tmp/$1.orig"
    printf '%s\n' "$2" >>"$tmp/$1"
    out=$(check_all "$tmp") && { echo "check-layers: a planted violation passed: $1: $2"; exit 1; }
    case "$out" in
      *$3*) ;;
      *) echo "check-layers: the planted violation was not named ($3): $out"; exit 1 ;;
    esac
    mv "$tmp/$1.orig" "$tmp/$1"
  }
  plant formats/registry.c '#include "dliofs/config.h"' \
    'formats/registry.c:'*'formats/ includes "dliofs/config.h" (config)'
  plant tools/gen/dlio_gen.c '#include "drive_i.h"' \
    'tools/gen/dlio_gen.c:'*'tools/gen/ includes "drive_i.h" (tools/drive)'
  plant tools/whatif/dlio_whatif.c '#include "stall/stall_i.h"' \
    'tools/whatif/ includes "stall/stall_i.h" (a path outside the folder)'
  plant tools/common/tool_path.c '#include "fs_i.h"' \
    'tools/common/ includes "fs_i.h" (fs)'
  plant tools/drive/drive_config.c '#include <yaml.h>' \
    'tools/drive/drive_config.c:'*'tools/drive/ includes <yaml.h> (config/ reads YAML'
  plant tools/whatif/meson.build "  'sources': files('../stall/records.c')," \
    "tools/whatif/meson.build:"*"compiles a source outside tools/whatif/: '../stall/records.c'"
  plant tools/gen/dlio_gen.c 'static int f(int c, char **v) { return getopt_long(c, v, "", 0, 0); }' \
    'tools/gen/dlio_gen.c:'*': getopt outside the options engine'
  plant tools/stall/dlio_stall.c '#include <getopt.h>' \
    'tools/stall/dlio_stall.c:'*': getopt outside the options engine'
  check_all "$tmp" >/dev/null || { echo "check-layers: the tree fails after the plants were undone"; exit 1; }
  echo "check-layers: self-test passed (each planted violation is caught and named: a layer reaching up, a tool including another tool's header, a path, fs/ or <yaml.h>, a tool compiling another folder's source, getopt outside the options engine)"
  exit 0
fi

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
if check_all "$root"; then
  echo "check-layers: util < formats, pacer, trace < config; ctl; tools/<tool> on tools/common, ctl and the libraries: no layer includes a higher one, no tool another tool, getopt in the options engine alone"
else
  exit 1
fi
