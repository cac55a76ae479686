#!/bin/sh
# Self-extracting installer of the op package of vendor @VENDOR@, written by `opbuild pack`.
# Laid out like a makeself archive: this POSIX sh header of $skip lines, then the payload, a
# tar.gz of install.sh, uninstall.sh, help.info and packages/vendors/@VENDOR@/. The payload is
# sha256-checked before anything is extracted; then install.sh (bash) is run with the options
# this header does not take. Run with --help.
label="@LABEL@"
script="./install.sh"
scriptargs=""
targetdir="@TARGETDIR@"
filesizes="@FILESIZES@"
totalsize="@TOTALSIZE@"
keep="n"
SHA="@SHA256@"
skip=@SKIP@

me=$(basename "$0")
TMPROOT=${TMPDIR:-/tmp}
quiet=n noexec=n target= tmp= payload=

say() { [ "$quiet" = y ] || printf '%s\n' "$*"; }
die() { printf '%s: error: %s\n' "$me" "$1" >&2; exit "${2:-1}"; }

help() {
    cat <<'HELP'
usage: custom_opp_<os>_<arch>.run [options] [--] [installer options]
Archive options (makeself's):
  --help              this text
  --info              what the archive holds (label, sizes, checksum, the script it runs)
  --list              list the files of the payload
  --check             verify the payload's SHA256 checksum
  --noexec            do not run the installer (extract only; with --keep or --target DIR to keep it)
  --keep              keep the directory the payload is extracted into (its path is printed)
  --target DIR        extract into DIR (kept) instead of a temporary directory
  --extract=DIR       extract into DIR and do not run the installer (= --noexec --target DIR)
  --quiet             print nothing but errors (also passed to the installer)
  --nox11 --noprogress --nodiskspace --nochown --accept   accepted, nothing to do
HELP
    cat <<'HELP'
@HELP_INFO@
HELP
}

# the payload: everything after line $skip of this file
payload_bytes() { tail -n +"$((skip + 1))" "$0"; }

sha256_tool() {  # the command that prints a file's sha256 first on its line; fails when there is none
    if command -v sha256sum >/dev/null 2>&1; then echo sha256sum
    elif command -v shasum >/dev/null 2>&1; then echo "shasum -a 256"
    elif command -v openssl >/dev/null 2>&1; then echo "openssl dgst -sha256 -r"
    else return 1
    fi
}

sha256_of() {  # TOOL FILE -> the file's sha256 (64 hex digits); fails when the tool fails or prints none
    out=$($1 "$2") || return 1
    out=${out%%[ 	]*}
    case $out in *[!0-9a-f]*|"") return 1 ;; esac
    [ "${#out}" -eq 64 ] || return 1
    printf '%s\n' "$out"
}

cleanup() {
    [ -n "$payload" ] && rm -f "$payload"
    [ -n "$tmp" ] && rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

verify() {  # copies the payload to a temporary file and checks it; sets $payload
    payload=$(mktemp "$TMPROOT/opbuild-run-payload.XXXXXX") || die "cannot write in $TMPROOT"
    payload_bytes >"$payload" || die "cannot read the payload of $0"
    tool=$(sha256_tool) || die "cannot verify the payload: none of sha256sum, shasum, openssl is installed: nothing installed"
    sum=$(sha256_of "$tool" "$payload") || die "cannot verify the payload: \`$tool\` failed or printed no sha256: nothing installed"
    if [ "$sum" != "$SHA" ]; then
        die "the payload is damaged (sha256 $sum, expected $SHA): nothing installed"
    fi
    say "Verifying archive integrity... SHA256 checksums are OK. All good."
}

# ---- options: this header's are taken, the others are kept in order for the installer ----------
n=$# i=0 want_target=n
while [ "$i" -lt "$n" ]; do
    arg=$1; shift; i=$((i + 1))
    if [ "$want_target" = y ]; then target=$arg want_target=n; continue; fi
    case $arg in
        --help|-h) help; exit 0 ;;
        --info)
            printf 'Identification: %s\nTarget directory: %s\nUncompressed size: %s KB\nCompression: gzip\n' \
                "$label" "$targetdir" "$(((totalsize + 1023) / 1024))"
            printf 'Encryption: n\nDate of packaging: (not recorded: the same package gives the same file)\n'
            printf 'Built with opbuild pack (a makeself-compatible layout)\nScript run after extraction:\n'
            printf '     %s %s\nkeep directory: %s\nPayload size: %s bytes\nSHA256: %s\n' \
                "$script" "$scriptargs" "$keep" "$filesizes" "$SHA"
            exit 0 ;;
        --list) payload_bytes | gzip -dc | tar -tvf -; exit $? ;;
        --check) verify; exit 0 ;;
        --noexec) noexec=y ;;
        --keep) keep=y ;;
        --target) want_target=y ;;
        --target=*) target=${arg#--target=} ;;
        --extract=*) target=${arg#--extract=} noexec=y
                     [ -n "$target" ] || die "--extract= needs a directory" 2 ;;
        --quiet) quiet=y; set -- "$@" "$arg" ;;
        --nox11|--noprogress|--nodiskspace|--nochown|--accept) ;;  # makeself's, nothing to do here
        --) while [ "$i" -lt "$n" ]; do set -- "$@" "$1"; shift; i=$((i + 1)); done ;;
        *) set -- "$@" "$arg" ;;
    esac
done
[ "$want_target" = n ] || die "--target needs a directory" 2

verify
if [ -n "$target" ]; then
    mkdir -p "$target" || die "cannot create $target"
    dir=$target keep=y
else
    tmp=$(mktemp -d "$TMPROOT/opbuild-run.XXXXXX") || die "cannot write in $TMPROOT"
    dir=$tmp
fi
say "Uncompressing $label"
# every decompression error stops the install: the whole stream tested first (its CRC, its
# length), then gzip's and tar's own status of the extraction, each checked (sh has no pipefail)
gzip -t "$payload" 2>/dev/null || die "the payload does not decompress (gzip -t failed: a damaged archive): nothing installed"
gzstatus=$(mktemp "$TMPROOT/opbuild-run-gzip.XXXXXX") || die "cannot write in $TMPROOT"
(cd "$dir" && { gzip -dc "$payload"; echo "$?" >"$gzstatus"; } | tar -xf -)
tar_status=$? gz_status=$(cat "$gzstatus"); rm -f "$gzstatus"
[ "$gz_status" = 0 ] || die "the payload does not decompress (gzip exit status ${gz_status:-?}): nothing installed"
[ "$tar_status" = 0 ] || die "cannot extract the payload into $dir (tar exit status $tar_status): nothing installed"
rm -f "$payload"; payload=
[ "$keep" = y ] && tmp=
if [ "$noexec" = y ]; then
    if [ "$keep" = y ]; then say "extracted into $dir"; else say "verified (not kept: add --keep or --target DIR)"; fi
    exit 0
fi
command -v bash >/dev/null 2>&1 || die "the installer needs bash"
(cd "$dir" && OPBUILD_RUN_NAME=$me bash "$script" $scriptargs "$@")
status=$?
[ "$keep" = y ] && say "kept $dir"
exit $status
