#!/bin/bash
# install.sh: installs the op package beside it (packages/vendors/<vendor>/) into an OPP tree.
#
# Run by the self-extracting custom_opp_<os>_<arch>.run after it has verified and extracted its
# payload (and by `opbuild install`). Needs bash and coreutils only. Options: help.info beside it
# (CANN's meanings; --replace is opbuild's).
#
# Guarantees: nothing is written before every check passed; the package is staged beside its
# destination, in vendors/.<v>.pkg-XXXXXX, and vendors/<v> is a symbolic link to it, replaced by
# one rename (atomic: a reader sees the old package or the new one, never none); a run that fails
# or is killed leaves its staging directory, which it or the next run removes; installs and
# uninstalls into one vendors/ take turns (the lock directory vendors/.opbuild.lock), so
# config.ini's load_priority keeps every vendor. A vendors/<v> that is a real directory (installed
# by an older installer) is replaced by two renames once (a run killed between them leaves it in
# vendors/.<v>.old-*, which the next run puts back first). Installing the identical package again
# changes nothing. Exit status: 0 done, 1 refused or failed, 2 bad usage.

set -u
umask 077
me=${OPBUILD_RUN_NAME:-install.sh}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 1

say() { [ "$quiet" = y ] || printf '%s\n' "$*"; }
warn() { printf '%s: warning: %s\n' "$me" "$*" >&2; }
die() { printf '%s: error: %s\n' "$me" "$1" >&2; exit "${2:-1}"; }

usage() {
    echo "usage: $me [--install-path=ABS] [--install-for-all] [--force] [--replace] [--quiet] [--help]"
    echo "Install the op package of vendor $vendor."
    cat -- "$here/help.info"
}

# ---- the package -------------------------------------------------------------------------------
shopt -s nullglob dotglob
sources=("$here"/packages/vendors/*/)
[ "${#sources[@]}" = 1 ] || die "$here/packages/vendors/ must hold exactly one vendor directory"
source_dir=${sources[0]%/}
vendor=${source_dir##*/}

# ---- options -----------------------------------------------------------------------------------
install_path= quiet=n for_all=n force=n replace=n
for arg in "$@"; do
    case $arg in
        --install-path=*) install_path=${arg#--install-path=}
                          [ -n "$install_path" ] || die "--install-path= needs a directory" 2 ;;
        --install-for-all) for_all=y ;;
        --quiet) quiet=y ;;
        --force) force=y ;;
        --replace) replace=y ;;
        --help|-h) usage; exit 0 ;;
        *) warn "unknown option $arg ignored (see --help)" ;;
    esac
done

if [ -n "$install_path" ]; then
    case $install_path in /*) ;; *) die "--install-path=$install_path is relative: give an absolute path" 2 ;; esac
    base=$install_path
elif [ -n "${ASCEND_CUSTOM_OPP_PATH:-}" ]; then
    case $ASCEND_CUSTOM_OPP_PATH in
        *:*) die "ASCEND_CUSTOM_OPP_PATH=$ASCEND_CUSTOM_OPP_PATH holds several paths: give one, or --install-path=ABS" 2 ;;
        /*) ;;
        *) die "ASCEND_CUSTOM_OPP_PATH=$ASCEND_CUSTOM_OPP_PATH is relative: give an absolute path" 2 ;;
    esac
    base=$ASCEND_CUSTOM_OPP_PATH
elif [ -n "${ASCEND_OPP_PATH:-}" ]; then
    case $ASCEND_OPP_PATH in /*) ;; *) die "ASCEND_OPP_PATH=$ASCEND_OPP_PATH is relative: give an absolute path" 2 ;; esac
    base=$ASCEND_OPP_PATH
else
    die "give --install-path=ABS (or set ASCEND_CUSTOM_OPP_PATH or ASCEND_OPP_PATH)" 2
fi
base=${base%/}
[ -n "$base" ] || base=/
vendors_dir=${base%/}/vendors
dest=$vendors_dir/$vendor
if [ "$for_all" = y ]; then
    dir_mode=755 file_mode=644 script_mode=555 chmod_spec=u=rwX,go=rX; umask 022
else
    dir_mode=750 file_mode=640 script_mode=550 chmod_spec=u=rwX,g=rX,o=; umask 027
fi

# ---- the shared-library check (before anything is written) -----------------------------------
elf_header() {  # FILE -> "class data type machine" of an ELF file; fails for anything else
    local -a b
    b=($(od -An -tu1 -N20 -v -- "$1" 2>/dev/null)) || return 1
    [ "${#b[@]}" = 20 ] && [ "${b[0]} ${b[1]} ${b[2]} ${b[3]}" = "127 69 76 70" ] || return 1
    if [ "${b[5]}" = 2 ]; then
        echo "${b[4]} ${b[5]} $((b[16] * 256 + b[17])) $((b[18] * 256 + b[19]))"
    else
        echo "${b[4]} ${b[5]} $((b[17] * 256 + b[16])) $((b[19] * 256 + b[18]))"
    fi
}

machine_name() {  # MACHINE CLASS DATA (ELF e_machine, EI_CLASS, EI_DATA) -> e.g. "x86-64 (64-bit, little-endian)"
    local name
    case $1 in
        3) name="x86 (i386)" ;; 40) name=ARM ;; 62) name=x86-64 ;; 183) name=AArch64 ;;
        243) name=RISC-V ;; 21) name=PowerPC ;; 22) name=S390 ;; 258) name=LoongArch ;;
        *) name="ELF machine $1" ;;
    esac
    echo "$name ($([ "$2" = 1 ] && echo 32 || echo 64)-bit, $([ "$3" = 2 ] && echo big || echo little)-endian)"
}

glibc_refs() {  # FILE... -> the GLIBC_x.y version names they reference, one a line
    local token
    cat -- "$@" | tr -cs 'A-Za-z0-9_.' '\n' | sort -u | while IFS= read -r token; do
        case $token in GLIBC_[0-9]*) echo "${token#GLIBC_}" ;; esac
    done
}

machine_glibc() {  # this machine's glibc version (e.g. 2.36); fails when nothing can tell
    local v libc
    v=$(getconf GNU_LIBC_VERSION 2>/dev/null) && [ -n "$v" ] && { echo "${v##* }"; return 0; }
    v=$(ldd --version 2>/dev/null | head -n 1) && [ -n "$v" ] && [[ $v == *[Gg][Ll][Ii][Bb][Cc]* ]] \
        && { echo "${v##* }"; return 0; }
    for libc in /lib64/libc.so.6 /lib/*-linux-gnu*/libc.so.6 /usr/lib64/libc.so.6 /usr/lib/*-linux-gnu*/libc.so.6 \
                /lib/libc.so.6 /usr/lib/libc.so.6; do
        [ -f "$libc" ] || continue
        v=$(glibc_refs "$libc" | sort -V | tail -n 1)
        [ -n "$v" ] && { echo "$v"; return 0; }
    done
    return 1
}

check_libraries() {
    local self lib hdr class data type mach libs=() need have
    self=$(elf_header "$(readlink -f "$BASH" 2>/dev/null || echo "$BASH")") \
        || die "cannot read the ELF header of this shell ($BASH) to learn the machine's architecture; --force skips the check"
    read -r class data type mach <<<"$self"
    shopt -s globstar
    for lib in "$source_dir"/**/*.so "$source_dir"/**/*.so.*; do
        [ -f "$lib" ] && [ ! -L "$lib" ] || continue
        hdr=$(elf_header "$lib") || continue
        read -r -a h <<<"$hdr"
        [ "${h[2]}" = 3 ] || continue  # ET_DYN only (kernel objects for the device are ET_REL)
        if [ "${h[0]} ${h[1]} ${h[3]}" != "$class $data $mach" ]; then
            die "${lib#"$source_dir"/} is built for $(machine_name "${h[3]}" "${h[0]}" "${h[1]}"), this machine is $(machine_name "$mach" "$class" "$data"): nothing installed (--force skips this check)"
        fi
        libs+=("$lib")
    done
    shopt -u globstar
    [ "${#libs[@]}" -gt 0 ] || return 0
    need=$(glibc_refs "${libs[@]}" | sort -V | tail -n 1)
    [ -n "$need" ] || return 0
    if ! have=$(machine_glibc); then
        warn "cannot tell this machine's glibc version (no getconf, ldd or libc.so.6): the libraries need GLIBC_$need; check skipped"
        return 0
    fi
    if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | tail -n 1)" != "$have" ]; then
        die "the package's libraries need GLIBC_$need, this machine has glibc $have: nothing installed (--force skips this check)"
    fi
}

[ "$force" = y ] || check_libraries

# ---- helpers -----------------------------------------------------------------------------------
sha256_lines() {  # FILE... -> "<sha256> <space or *><file>" lines: sha256sum, else shasum, else openssl
    if command -v sha256sum >/dev/null 2>&1; then sha256sum -- "$@"
    elif command -v shasum >/dev/null 2>&1; then shasum -a 256 -- "$@"
    elif command -v openssl >/dev/null 2>&1; then openssl dgst -sha256 -r "$@"
    else return 2
    fi
}

tree_listing() {  # DIR -> one sorted line per entry: kind, path, content (file sha256, link target); fails if a hash fails
    (
        set -o pipefail
        cd "$1" || exit 1
        shopt -s globstar dotglob nullglob
        local p files=() line
        for p in **; do
            if [ -L "$p" ]; then printf 'l %s -> %s\n' "$p" "$(readlink -- "$p")"
            elif [ -d "$p" ]; then printf 'd %s\n' "$p"
            elif [ -f "$p" ]; then files+=("./$p")
            else printf 'o %s\n' "$p"; fi
        done
        if [ "${#files[@]}" -gt 0 ]; then
            sha256_lines "${files[@]}" | while IFS= read -r line; do printf 'f %s %s\n' "${line:68}" "${line:0:64}"; done
        fi
    ) | LC_ALL=C sort
    return "${PIPESTATUS[0]}"
}

mode_listing() {  # DIR -> the mode of every entry, sorted
    (cd "$1" && shopt -s globstar dotglob nullglob && stat -c '%a %n' -- . **) | LC_ALL=C sort
}

pkg_prefix=.$vendor.pkg-  # vendors/<prefix>XXXXXX: a package; vendors/<vendor> links to one
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

restore_interrupted_swap() {  # a legacy swap killed between its renames left the old package aside
    local old
    for old in "$vendors_dir"/."$vendor".old-*; do
        if [ ! -e "$dest" ] && [ ! -L "$dest" ] && [ -d "$old/$vendor" ]; then
            mv -T -- "$old/$vendor" "$dest" || die "cannot restore $dest from $old"
            warn "restored $dest (a previous run was interrupted)"
        fi
        rm -rf -- "$old"  # (after a swap killed before its clean-up: the replaced package)
    done
}

remove_leftovers() {  # a failed or killed run's staging directories and temporaries
    local p current=
    [ -L "$dest" ] && current=$(readlink -- "$dest")
    for p in "$vendors_dir/$pkg_prefix"*; do
        [ "${p##*/}" = "$current" ] || rm -rf -- "$p"
    done
    for p in "$vendors_dir"/."$vendor".install-* "$vendors_dir"/."$vendor".link-* "$vendors_dir"/.config.ini.??????; do
        rm -rf -- "$p"
    done
}

set_load_priority() {  # put $vendor first in vendors/config.ini (created if absent), other lines kept
    local ini=$vendors_dir/config.ini tmp line key value v out=() found=n
    local -a names
    if [ -f "$ini" ]; then
        while IFS= read -r line || [ -n "$line" ]; do
            if [ "$found" = n ] && [[ $line == *priority*=* ]]; then
                key=${line%%=*} value=${line#*=}
                key=${key#"${key%%[![:space:]]*}"} key=${key%"${key##*[![:space:]]}"}
                IFS=, read -r -a names <<<"$value"
                line="$key=$vendor"
                for v in "${names[@]}"; do
                    v=${v#"${v%%[![:space:]]*}"} v=${v%"${v##*[![:space:]]}"}
                    [ -n "$v" ] && [ "$v" != "$vendor" ] && line+=",$v"
                done
                found=y
            fi
            out+=("$line")
        done <"$ini"
    fi
    [ "$found" = y ] || out=("load_priority=$vendor" "${out[@]}")
    if [ -f "$ini" ] && [ "$(printf '%s\n' "${out[@]}")" = "$(cat -- "$ini")" ]; then
        chmod "$file_mode" -- "$ini"
        return 0
    fi
    tmp=$(mktemp "$vendors_dir/.config.ini.XXXXXX") || die "cannot write in $vendors_dir"
    printf '%s\n' "${out[@]}" >"$tmp" && chmod "$file_mode" -- "$tmp" && mv -f -- "$tmp" "$ini" \
        || { rm -f -- "$tmp"; die "cannot update $ini"; }
}

write_set_env() {  # DIR: the bin/set_env.bash of a package installed with --install-path
    local q
    printf -v q '%q' "$dest"
    mkdir -p -- "$1/bin" || return 1
    cat >"$1/bin/set_env.bash" <<SETENV || return 1
# set_env.bash of the op package of vendor $vendor (written by its installer): source it.
export ASCEND_CUSTOM_OPP_PATH=$q\${ASCEND_CUSTOM_OPP_PATH:+:\$ASCEND_CUSTOM_OPP_PATH}
export LD_LIBRARY_PATH=$q/op_api/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
SETENV
}

# ---- stage, compare, swap ----------------------------------------------------------------------
staging= aside= link= committed=n
cleanup() {
    [ -n "$link" ] && rm -f -- "$link"
    [ -n "$staging" ] && [ "$committed" = n ] && rm -rf -- "$staging"
    if [ -n "$aside" ]; then
        if [ ! -e "$dest" ] && [ -d "$aside/$vendor" ]; then mv -T -- "$aside/$vendor" "$dest"; fi
        rm -rf -- "$aside"
    fi
    rm -rf -- "$lock_dir.$$"
    [ "$locked" = y ] && rm -rf -- "$lock_dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

if [ ! -d "$vendors_dir" ]; then
    mkdir -p -- "$vendors_dir" && chmod "$dir_mode" -- "$vendors_dir" || die "cannot create $vendors_dir"
fi
take_lock
restore_interrupted_swap
remove_leftovers

staging=$(mktemp -d "$vendors_dir/${pkg_prefix}XXXXXX") || die "cannot write in $vendors_dir"
new=$staging
cp -R -P -- "$source_dir/." "$new/" || die "cannot copy the package into $staging"
mkdir -p -- "$new/scripts" && cp -- "$here/uninstall.sh" "$new/scripts/uninstall.sh" || die "cannot write $new/scripts"
if [ -n "$install_path" ]; then write_set_env "$new" || die "cannot write $new/bin/set_env.bash"; fi
chmod -R "$chmod_spec" -- "$new" && chmod "$script_mode" -- "$new/scripts/uninstall.sh" \
    || die "cannot set the permissions in $staging"

report=
if [ -d "$dest" ]; then
    new_listing=$(tree_listing "$new") && dest_listing=$(tree_listing "$dest") \
        || die "cannot compare $dest with the new package: no sha256sum, shasum or openssl, or it failed: nothing installed"
    if [ "$new_listing" = "$dest_listing" ]; then
        if [ "$(mode_listing "$new")" = "$(mode_listing "$dest")" ]; then
            report="already installed (identical)"
        fi
    elif [ "$replace" != y ]; then
        die "$dest holds a different package of vendor $vendor; use --replace to replace it"
    fi
elif [ -e "$dest" ] || [ -L "$dest" ]; then
    die "$dest exists and is not a directory"
fi

if [ -z "$report" ]; then
    link=$vendors_dir/.$vendor.link-${staging##*"$pkg_prefix"}
    ln -s -- "${staging##*/}" "$link" || die "cannot write in $vendors_dir"
    if [ -L "$dest" ] || [ ! -e "$dest" ]; then
        old_target=
        [ -L "$dest" ] && old_target=$(readlink -- "$dest")
        mv -T -- "$link" "$dest" || die "cannot move the package to $dest"  # the one rename
        committed=y link=
        case $old_target in "$pkg_prefix"*) rm -rf -- "$vendors_dir/$old_target" ;; esac
        report="$([ -n "$old_target" ] && echo replaced || echo installed) $dest"
    else  # a real directory (an older installer's): aside, then the link in its place
        aside=$(mktemp -d "$vendors_dir/.$vendor.old-XXXXXX") || die "cannot write in $vendors_dir"
        mv -T -- "$dest" "$aside/$vendor" && mv -T -- "$link" "$dest" || die "cannot move the package to $dest"
        committed=y link=
        report="replaced $dest"
    fi
fi

if [ -n "$install_path" ]; then
    say "$me: $report"
    printf -v hint '%q' "$dest/bin/set_env.bash"  # (a path with a space or quote: still one word)
    say "set it up with: source $hint"
else
    set_load_priority
    say "$me: $report; load_priority has $vendor first"
fi
exit 0
