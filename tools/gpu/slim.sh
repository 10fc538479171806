#!/usr/bin/env bash
# The working tree that travels with a GPU command may be at most 64 MiB: the tracked files present
# in it, the untracked files that are not ignored and the carried (ignored) folders. The tracked
# files are 85 MB, 77 MB of them the shipped checkpoints' weights, which the GPU job never reads;
# nor does it read the rest of checkpoints/ (but the tokenizer that gpu_run prepare copies), the
# screenshots under docs/ or the records of earlier runs.
#
#   tools/gpu/slim.sh hide [--carry gpu-data]...   # move them out of the tree, then check
#   tools/gpu/slim.sh check [--carry gpu-data]...  # print what travels; status 1 over the limit
#   tools/gpu/slim.sh restore                      # move them back, each checked by its SHA-256
#
# Hidden: the tracked files matching HIDDEN below, moved to $SLIM_STASH (default: a folder beside
# the repository, <repository>.slim), with their SHA-256 list written there before anything moves.
# The limit checked is $SLIM_LIMIT_MIB (default 60, leaving 4 MiB of the 64 to spare). Between
# hide and restore `git status` shows the weights as deleted: commit nothing then.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
STASH=${SLIM_STASH:-$(dirname "$REPO")/$(basename "$REPO").slim}
LIMIT_MIB=${SLIM_LIMIT_MIB:-60}
LIST=hidden.sha256
# git pathspecs: '*' crosses '/', so checkpoints/* is everything under checkpoints/.
HIDDEN=('checkpoints/*' ':(exclude)checkpoints/de-en/tokenizer/*' 'docs/*.png'
        'tools/gpu/runs/*')
CARRY=()

mib() {  # bytes -> "12.3 MiB"
  awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'
}

sizes() {  # NUL-separated paths on stdin -> "bytes files" of those present
  xargs -0 -r stat -c %s -- 2>/dev/null | awk '{ s += $1; n++ } END { print s + 0, n + 0 }' || true
}

row() {  # one line of check's table
  printf '  %-24s %s\n' "$1" "$2"
}

check() {
  local tracked n_tracked untracked n_untracked listed total carried dir
  listed=$(git ls-files -z | tr -cd '\0' | wc -c)
  read -r tracked n_tracked < <(git ls-files -z | sizes)
  read -r untracked n_untracked < <(git ls-files -z --others --exclude-standard | sizes)
  total=$((tracked + untracked))
  echo "what travels:"
  row "tracked, in the tree" \
    "$(mib "$tracked") ($n_tracked files; $((listed - n_tracked)) tracked files not in the tree)"
  row "untracked, not ignored" "$(mib "$untracked") ($n_untracked files)"
  for dir in ${CARRY[@]+"${CARRY[@]}"}; do
    if [ -d "$dir" ]; then
      read -r carried _ < <(du -sb -- "$dir")
      row "carried $dir" "$(mib "$carried")"
      total=$((total + carried))
    else
      row "carried $dir" "ABSENT"
    fi
  done
  row "in all" "$(mib "$total")"
  if [ "$total" -gt $((LIMIT_MIB * 1048576)) ]; then
    echo "over $LIMIT_MIB MiB: do not start the GPU command" >&2
    return 1
  fi
  echo "within $LIMIT_MIB MiB"
}

hide() {
  if [ -e "$STASH/$LIST" ]; then
    echo "$STASH/$LIST exists: files are hidden already (tools/gpu/slim.sh restore first)" >&2
    exit 2
  fi
  local files=() path
  while IFS= read -r -d '' path; do
    [ -f "$path" ] && files+=("$path")
  done < <(git ls-files -z -- "${HIDDEN[@]}")
  if [ ${#files[@]} -eq 0 ]; then
    echo "nothing to hide"
  else
    mkdir -p "$STASH"
    sha256sum -- "${files[@]}" > "$STASH/$LIST.tmp"
    mv "$STASH/$LIST.tmp" "$STASH/$LIST"
    for path in "${files[@]}"; do
      mkdir -p "$STASH/$(dirname "$path")"
      mv -- "$path" "$STASH/$path"
    done
    (cd "$STASH" && sha256sum --quiet -c "$LIST")
    read -r bytes _ < <(printf '%s\0' "${files[@]/#/$STASH/}" | sizes)
    echo "hid ${#files[@]} files ($(mib "$bytes")) in $STASH;" \
      "tools/gpu/slim.sh restore puts them back"
  fi
  check
}

restore() {
  if [ ! -f "$STASH/$LIST" ]; then
    echo "nothing hidden: $STASH/$LIST does not exist"
    return 0
  fi
  local hash path failed=0 n=0
  while read -r hash path; do
    if [ -e "$path" ]; then  # put back by other means (a checkout): keep it only if identical
      if [ "$(sha256sum < "$path" | cut -d' ' -f1)" = "$hash" ]; then
        rm -f -- "$STASH/$path"
      else
        echo "$path is in the tree and differs from the hidden copy: both left in place" >&2
        failed=1
      fi
    elif [ -f "$STASH/$path" ]; then
      mkdir -p "$(dirname "$path")"
      mv -- "$STASH/$path" "$path"
    else
      echo "$path: neither in the tree nor in $STASH" >&2
      failed=1
    fi
    n=$((n + 1))
  done < "$STASH/$LIST"
  if [ "$failed" -ne 0 ] || ! sha256sum --quiet -c "$STASH/$LIST"; then
    echo "not restored completely; $STASH/$LIST kept" >&2
    return 1
  fi
  rm -- "$STASH/$LIST"
  find "$STASH" -depth -type d -empty -delete
  echo "restored $n files, each identical to its SHA-256 before hiding"
}

ACTION=${1:-}
[ $# -gt 0 ] && shift
while [ $# -gt 0 ]; do
  case "$1" in
    --carry) CARRY+=("$2"); shift 2 ;;
    *) echo "unknown flag $1 (see the head of $0)" >&2; exit 2 ;;
  esac
done
[ ${#CARRY[@]} -gt 0 ] || CARRY=(gpu-data)
case "$ACTION" in
  hide) hide ;;
  check) check ;;
  restore) restore ;;
  *) echo "usage: $0 hide|check|restore [--carry DIR]..." >&2; exit 2 ;;
esac
