#!/bin/bash
# uninstall.sh (vendors/<vendor>/scripts/uninstall.sh, put there by the package's installer):
# removes the vendor's package it is in and the vendor's name from load_priority of
# vendors/config.ini (the file is deleted when nothing is left in it). Needs bash and coreutils.
# vendors/<vendor> is a symbolic link to the package (vendors/.<vendor>.pkg-XXXXXX, install.sh):
# the link goes first (one unlink), then the package; an older installer's real directory is
# renamed aside, then deleted: a reader sees the package or nothing. It takes turns with
# installs (the lock directory vendors/.opbuild.lock, as install.sh: the same few lines).
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

real=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P) || die "cannot find the package directory"
vendors_dir=${real%/*}
name=${real##*/}
case $name in
    .*.pkg-??????) vendor=${name#.} vendor=${vendor%.pkg-*} ;;
    *) vendor=$name ;;
esac
dest=$vendors_dir/$vendor
[ -d "$real/scripts" ] && [ -n "$vendor" ] || die "$real is not an installed op package"
if [ "$name" != "$vendor" ] && { [ ! -L "$dest" ] || [ "$(readlink -- "$dest")" != "$name" ]; }; then
    die "$real is not the package $dest links to"
fi

lock_dir=$vendors_dir/.opbuild.lock
locked=n
take_lock() {  # one install or uninstall at a time in vendors/: the lock directory holds its pid,
    # made whole aside and renamed into place (atomic; bash + coreutils only); a dead holder's is broken
    local owner waited=0 mine=$lock_dir.$$ p
    running() {  # PID -> true while it runs; a killed one its parent has not reaped yet (a zombie) does not
        local stat
        read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
        stat=${stat##*) }
        [[ ${stat%% *} != [ZX] ]]
    }
    rm -rf -- "$mine"
    mkdir -- "$mine" && printf '%s\n' "$$" >"$mine/pid" || die "cannot write in $vendors_dir"
    until mv -T -- "$mine" "$lock_dir" 2>/dev/null; do
        owner=$(cat -- "$lock_dir/pid" 2>/dev/null)
        if [ -z "$owner" ] || ! running "$owner"; then
            if mv -T -- "$lock_dir" "$lock_dir.stale-$$" 2>/dev/null; then rm -rf -- "$lock_dir.stale-$$"; fi
            continue
        fi
        waited=$((waited + 1))
        [ "$waited" -lt 6000 ] || { rm -rf -- "$mine"; die "another install or uninstall into $vendors_dir has held $lock_dir for 5 minutes (pid $owner)"; }
        sleep 0.05
    done
    locked=y
    for p in "$lock_dir".[0-9]*; do  # (killed waiters')
        running "${p##*.}" || rm -rf -- "$p"
    done
}
trap 'rm -rf -- "$lock_dir.$$"; [ "$locked" = y ] && rm -rf -- "$lock_dir"' EXIT
trap 'exit 130' INT TERM HUP
take_lock

if [ "$name" != "$vendor" ]; then
    rm -f -- "$dest" || die "cannot remove $dest"
    rm -rf -- "$real"
else
    aside=$(mktemp -d "$vendors_dir/.$vendor.uninstall-XXXXXX") || die "cannot write in $vendors_dir"
    mv -- "$dest" "$aside/$vendor" || { rmdir -- "$aside"; die "cannot remove $dest"; }
    rm -rf -- "$aside"
fi
rm -rf -- "$vendors_dir"/."$vendor".old-* "$vendors_dir"/."$vendor".install-* "$vendors_dir"/."$vendor".pkg-* \
    "$vendors_dir"/."$vendor".link-*

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
