#!/bin/sh
# metalog.sh DESTDIR PREFIX: the mtree(5) METALOG of what `make install`
# put under DESTDIR/PREFIX, each entry owned by root:wheel with the mode it
# has there: FreeBSD's NO_ROOT convention, so that an unprivileged build of
# an image keeps the owners and modes the image needs (makefs -F METALOG,
# pkg create -M). Folders first, then files, sorted.
set -eu
destdir=$1
prefix=$2
[ -d "${destdir}${prefix}" ] || { echo "metalog.sh: ${destdir}${prefix} is not a folder" >&2; exit 1; }
echo "#mtree 2.0"
cd "${destdir}"
find ".${prefix}" -type d | sort | while read -r d; do
	printf '%s type=dir uname=root gname=wheel mode=%s\n' "$d" "$(stat -c %a "$d" 2>/dev/null || stat -f %Lp "$d")"
done
find ".${prefix}" -type f | sort | while read -r f; do
	printf '%s type=file uname=root gname=wheel mode=%s\n' "$f" "$(stat -c %a "$f" 2>/dev/null || stat -f %Lp "$f")"
done
