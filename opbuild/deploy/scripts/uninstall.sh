#!/bin/bash
# uninstall.sh (vendors/<vendor>/scripts/uninstall.sh, put there by the package's installer):
# removes the vendor directory it is in and the vendor's name from load_priority of
# vendors/config.ini (the file is deleted when nothing is left in it). Needs bash and coreutils.
# The directory is first renamed aside, then deleted: a reader sees the package or nothing.
# Options: --quiet (print nothing but errors), --help.

set -u
me=uninstall.sh
die() { printf '%s: error: %s\n' "$me" "$1" >&2; exit "${2:-1}"; }
quiet=n
for arg in "$@"; do
    case $arg in
        --quiet) quiet=y ;;
        --help|-h) echo "usage: $me [--quiet]: remove this op package (the vendor directory above scripts/)"; exit 0 ;;
        *) printf '%s: warning: unknown option %s ignored\n' "$me" "$arg" >&2 ;;
    esac
done

dest=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P) || die "cannot find the package directory"
vendor=${dest##*/}
vendors_dir=${dest%/*}
[ -d "$dest/scripts" ] && [ -n "$vendor" ] || die "$dest is not an installed op package"

aside=$(mktemp -d "$vendors_dir/.$vendor.uninstall-XXXXXX") || die "cannot write in $vendors_dir"
mv -- "$dest" "$aside/$vendor" || { rmdir -- "$aside"; die "cannot remove $dest"; }
rm -rf -- "$aside" "$vendors_dir"/."$vendor".old-* "$vendors_dir"/."$vendor".install-*

ini=$vendors_dir/config.ini
if [ -f "$ini" ]; then
    out=() found=n
    while IFS= read -r line || [ -n "$line" ]; do
        if [ "$found" = n ] && [[ $line == *priority*=* ]]; then
            found=y
            key=${line%%=*}
            IFS=, read -r -a names <<<"${line#*=}"
            kept=()
            for v in "${names[@]}"; do
                v=${v#"${v%%[![:space:]]*}"} v=${v%"${v##*[![:space:]]}"}
                [ -n "$v" ] && [ "$v" != "$vendor" ] && kept+=("$v")
            done
            [ "${#kept[@]}" = 0 ] && continue  # an empty load_priority line goes
            line="$key=$(IFS=,; echo "${kept[*]}")"
        fi
        out+=("$line")
    done <"$ini"
    content=$(printf '%s\n' "${out[@]}")
    if [ -z "${content//[[:space:]]/}" ]; then
        rm -f -- "$ini"
    elif [ "$content" != "$(cat -- "$ini")" ]; then
        tmp=$(mktemp "$vendors_dir/.config.ini.XXXXXX") || die "cannot write in $vendors_dir"
        printf '%s\n' "${out[@]}" >"$tmp" && chmod --reference="$ini" -- "$tmp" && mv -f -- "$tmp" "$ini" \
            || { rm -f -- "$tmp"; die "cannot update $ini"; }
    fi
fi
[ "$quiet" = y ] || echo "$me: removed $dest"
exit 0
