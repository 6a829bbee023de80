#!/usr/bin/env bash
# Install the ballreader appliance on Raspberry Pi OS Bookworm (64-bit):
#   sudo ./install.sh                 install, or bring an install up to date
#   sudo ./install.sh --uninstall     remove it; keeps the record, config and broker users
#   sudo ./install.sh --purge         remove everything, the record too
#   ./install.sh --root DIR           lay every file out under DIR (CI); DESTDIR=DIR works too
# Running it again changes nothing unless the source changed. See docs/install.md.
set -euo pipefail

usage() {
    sed -n '2,7s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
    echo "Options: --root DIR, --python PATH (default /usr/bin/python3), --uninstall, --purge"
}

ROOT="${DESTDIR:-}"
ACTION=install
PURGE=0
PYTHON="${BALLREADER_PYTHON:-/usr/bin/python3}"
while [ $# -gt 0 ]; do
    case "$1" in
        --root) [ $# -ge 2 ] || { usage >&2; exit 2; }; ROOT=$2; shift 2 ;;
        --root=*) ROOT=${1#*=}; shift ;;
        --python) [ $# -ge 2 ] || { usage >&2; exit 2; }; PYTHON=$2; shift 2 ;;
        --python=*) PYTHON=${1#*=}; shift ;;
        --uninstall) ACTION=uninstall; shift ;;
        --purge) ACTION=uninstall; PURGE=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "install.sh: unknown option: $1" >&2; usage >&2; exit 2 ;;
    esac
done

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Where things go on the Pi. In staging every path is prefixed with ROOT.
OPT=/opt/ballreader
VENV=$OPT/venv
ETC=/etc/ballreader
CONFIG=$ETC/ballreader.toml
CRED_DIR=$ETC/credentials
CRED=$CRED_DIR/mqtt-password
STATE=/var/lib/ballreader
UNIT=/etc/systemd/system/ballreader.service
MQ_CONF=/etc/mosquitto/conf.d/ballreader.conf
MQ_PASSWD=/etc/mosquitto/ballreader.passwd
MQ_ACL=/etc/mosquitto/ballreader.acl
APP_USER=ballreader
APP_GROUPS=(video gpio dialout audio)
APT_PACKAGES=(python3-picamera2 mosquitto mosquitto-clients espeak-ng python3-venv)

STAGING=0
if [ -n "$ROOT" ]; then
    ROOT=$(realpath -m "$ROOT")
    [ "$ROOT" = / ] && ROOT=""
fi
[ -n "$ROOT" ] && STAGING=1

say() { echo "install.sh: $*"; }
die() { echo "install.sh: error: $*" >&2; exit 1; }
R() { printf '%s%s' "$ROOT" "$1"; }

# Commands that change the live system (apt, users, systemd): in staging only shown.
live() {
    if [ "$STAGING" = 1 ]; then
        echo "install.sh: would run: $*"
    else
        echo "+ $*"
        "$@"
    fi
}

# Owner and mode of PATH (a path on the target). Owners only exist on the live system.
fix_perms() {
    local path=$1 mode=$2 owner=$3 real
    real=$(R "$path")
    if [ "$(stat -c %a "$real")" != "${mode#0}" ]; then
        chmod "$mode" "$real"
        say "mode $mode on $path"
    fi
    if [ "$STAGING" = 0 ] && [ "$(stat -c %U:%G "$real")" != "$owner" ]; then
        chown "$owner" "$real"
        say "owner $owner on $path"
    fi
}

put_dir() { # PATH MODE OWNER
    if [ ! -d "$(R "$1")" ]; then
        mkdir -p "$(R "$1")"
        say "made $1"
    fi
    fix_perms "$@"
}

# Copy SRC to PATH when it differs; CHANGED=1 tells the caller to restart what reads it.
CHANGED=0
put_file() { # SRC PATH MODE OWNER
    local src=$1 path=$2
    CHANGED=0
    if [ ! -f "$(R "$path")" ] || ! cmp -s "$src" "$(R "$path")"; then
        mkdir -p "$(dirname "$(R "$path")")"
        cp "$src" "$(R "$path").new"
        chmod "$3" "$(R "$path").new"
        mv -f "$(R "$path").new" "$(R "$path")"
        CHANGED=1
        say "wrote $path"
    fi
    fix_perms "$path" "$3" "$4"
}

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# ---------------------------------------------------------------- live system

check_live_system() {
    [ "$(id -u)" = 0 ] || die "run as root (sudo ./install.sh), or stage with --root DIR"
    local codename
    # shellcheck source=/dev/null
    codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
    [ "$codename" = bookworm ] || say "warning: made for Raspberry Pi OS Bookworm, this is '${codename:-unknown}'"
}

apt_packages() {
    if [ "$STAGING" = 1 ]; then
        live apt-get install -y --no-install-recommends "${APT_PACKAGES[@]}"
        return 0
    fi
    local missing=() pkg
    for pkg in "${APT_PACKAGES[@]}"; do
        [ "$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)" = installed ] || missing+=("$pkg")
    done
    [ ${#missing[@]} = 0 ] && return 0
    # Off Raspberry Pi OS there is no python3-picamera2 (camera.kind "opencv" still works):
    # when it is all that is missing and apt does not know it, there is nothing to do.
    if [ "${missing[*]}" = python3-picamera2 ] && ! apt_knows python3-picamera2; then
        say "warning: python3-picamera2 is not in apt here (not Raspberry Pi OS?), skipping it"
        return 0
    fi
    live apt-get update
    if ! apt_knows python3-picamera2; then
        say "warning: python3-picamera2 is not in apt here (not Raspberry Pi OS?), skipping it"
        local keep=()
        for pkg in "${missing[@]}"; do [ "$pkg" = python3-picamera2 ] || keep+=("$pkg"); done
        missing=("${keep[@]}")
        [ ${#missing[@]} = 0 ] && return 0
    fi
    live env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}

apt_knows() { # PACKAGE: apt has a version of it to install
    local policy
    policy=$(apt-cache policy "$1" 2>/dev/null || true)
    [[ "$policy" =~ Candidate:\ [^\(] ]]
}

system_user() {
    local group list
    list=$(IFS=,; echo "${APP_GROUPS[*]}")
    if [ "$STAGING" = 1 ]; then
        say "would make the groups $list if missing, and the system user $APP_USER in them"
        return 0
    fi
    for group in "${APP_GROUPS[@]}"; do
        # gpio exists on Raspberry Pi OS only; systemd refuses to start with a missing group.
        getent group "$group" >/dev/null || live groupadd --system "$group"
    done
    if ! getent passwd "$APP_USER" >/dev/null; then
        live useradd --system --user-group --groups "$list" --home-dir "$STATE" \
            --no-create-home --shell /usr/sbin/nologin "$APP_USER"
    else
        for group in "${APP_GROUPS[@]}"; do
            id -nG "$APP_USER" | tr ' ' '\n' | grep -qx "$group" || live usermod -a -G "$group" "$APP_USER"
        done
    fi
}

# ---------------------------------------------------------------- the code

# The source that pip would install, copied out so no build litter lands in the repo.
stage_source() {
    local extra=()
    for f in README.md LICENSE LICENSE.txt; do [ -f "$SRC/$f" ] && extra+=("$f"); done
    mkdir "$WORK/ballreader"
    (cd "$SRC" && tar --exclude=__pycache__ --exclude='*.pyc' --exclude='*.egg-info' \
        -cf - pyproject.toml constraints.txt "${extra[@]}" firmware vision services) | tar -xf - -C "$WORK/ballreader"
    (cd "$WORK/ballreader" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) \
        | sha256sum | cut -d' ' -f1
}

# sha256sum lines for our installed code, relative to OPT (check: cd OPT && sha256sum -c).
write_manifest() {
    local opt purelib
    opt=$(R "$OPT")
    purelib=$("$opt/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
    (cd "$opt" && find "${purelib#"$opt"/}"/firmware "${purelib#"$opt"/}"/vision \
        "${purelib#"$opt"/}"/services venv/bin/ballreader -type f ! -path '*/__pycache__/*' -print0 \
        | LC_ALL=C sort -z | xargs -0 sha256sum) > "$WORK/MANIFEST.sha256"
    put_file "$WORK/MANIFEST.sha256" "$OPT/MANIFEST.sha256" 0644 root:root
}

manifest_holds() {
    [ -f "$(R "$OPT")/MANIFEST.sha256" ] \
        && (cd "$(R "$OPT")" && sha256sum --check --quiet --status MANIFEST.sha256)
}

install_code() {
    put_dir "$OPT" 0755 root:root
    local fingerprint stamp venv
    fingerprint=$(stage_source)
    venv=$(R "$VENV")
    if [ ! -x "$venv/bin/python" ]; then
        # System site packages: picamera2 and libcamera come from apt, not PyPI.
        "$PYTHON" -m venv --system-site-packages "$venv"
        say "made the virtual environment $VENV"
    fi
    stamp=$(cat "$(R "$OPT")/SOURCE.sha256" 2>/dev/null || true)
    if [ "$stamp" = "$fingerprint" ] && [ -x "$venv/bin/ballreader" ] && manifest_holds; then
        say "code is up to date"
        return 0
    fi
    # Same version number with new code: uninstall first so pip really replaces it.
    "$venv/bin/python" -m pip uninstall --yes --quiet ballreader >/dev/null 2>&1 || true
    # The versions the reader was trained and measured with (constraints.txt); with apt's
    # picamera2, the [pi] extra (a simplejpeg for the venv's numpy 2: see pyproject.toml).
    local target="$WORK/ballreader"
    if [ "$(dpkg-query -W -f='${db:Status-Status}' python3-picamera2 2>/dev/null || true)" = installed ]; then
        target="$WORK/ballreader[pi]"
    fi
    "$venv/bin/python" -m pip install --quiet --no-input --disable-pip-version-check --root-user-action=ignore \
        -c "$WORK/ballreader/constraints.txt" "$target"
    say "installed ballreader into $VENV"
    write_manifest
    echo "$fingerprint" > "$WORK/SOURCE.sha256"
    put_file "$WORK/SOURCE.sha256" "$OPT/SOURCE.sha256" 0644 root:root
    CODE_CHANGED=1
}

# ---------------------------------------------------------------- config and secrets

config_and_state() {
    # The appliance's web page saves calibration into its config (a new file renamed over
    # the old one), so the service user may write in this folder; the credentials folder
    # inside stays root's alone.
    put_dir "$ETC" 0770 "root:$APP_USER"
    if [ ! -f "$(R "$CONFIG")" ]; then
        put_file "$SRC/systemd/ballreader.toml" "$CONFIG" 0640 "root:$APP_USER"
    else
        say "keeping $CONFIG"
    fi
    put_dir "$CRED_DIR" 0700 root:root
    if [ ! -s "$(R "$CRED")" ]; then
        (umask 077; "$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(24))' > "$(R "$CRED")")
        say "made the MQTT password $CRED"
        NEW_SECRET=1
    fi
    fix_perms "$CRED" 0600 root:root
    put_dir "$STATE" 0750 "$APP_USER:$APP_USER"
    put_file "$SRC/docs/install.md" "$OPT/docs/install.md" 0644 root:root
}

device_id() {
    local id
    id=$(sed -n 's/^[[:space:]]*device_id[[:space:]]*=[[:space:]]*"\([a-z0-9-]*\)".*/\1/p' "$(R "$CONFIG")" | head -n 1)
    echo "${id:-ballreader}" # the appliance's own default when the key is absent
}

mosquitto_files() {
    put_file "$SRC/systemd/mosquitto-ballreader.conf" "$MQ_CONF" 0644 root:root
    [ "$CHANGED" = 1 ] && BROKER_CHANGED=1
    # Hashes are salted: write the appliance's line only when it is missing or the
    # password is new, so a second run leaves the file alone.
    if [ "$NEW_SECRET" = 1 ] || ! grep -q "^$APP_USER:" "$(R "$MQ_PASSWD")" 2>/dev/null; then
        command -v mosquitto_passwd >/dev/null || die "mosquitto_passwd not found (apt install mosquitto)"
        # Other users' lines (boards, consoles) are kept as they are; they are hashed already.
        (umask 077
         grep -v "^$APP_USER:" "$(R "$MQ_PASSWD")" > "$WORK/others" 2>/dev/null || true
         echo "$APP_USER:$(cat "$(R "$CRED")")" > "$WORK/passwd"
         # Hashed in a private file: the password never appears on a command line.
         mosquitto_passwd -U "$WORK/passwd"
         cat "$WORK/others" "$WORK/passwd" > "$WORK/passwd.all")
        put_file "$WORK/passwd.all" "$MQ_PASSWD" 0640 root:mosquitto
        BROKER_CHANGED=1
    fi
    fix_perms "$MQ_PASSWD" 0640 root:mosquitto
    if [ ! -f "$(R "$MQ_ACL")" ]; then
        local id
        id=$(device_id)
        # Home Assistant's node id for the device: see services/ha_discovery.py.
        sed -e "s/@DEVICE_ID@/$id/g" -e "s/@HA_NODE@/bingo_${id//-/_}/g" \
            "$SRC/systemd/mosquitto-acl" > "$WORK/acl"
        put_file "$WORK/acl" "$MQ_ACL" 0640 root:mosquitto
        BROKER_CHANGED=1
    fi
    fix_perms "$MQ_ACL" 0640 root:mosquitto
}

# ---------------------------------------------------------------- systemd

units() {
    put_file "$SRC/systemd/ballreader.service" "$UNIT" 0644 root:root
    [ "$CHANGED" = 1 ] && UNIT_CHANGED=1
    if [ "$STAGING" = 1 ]; then
        # Enabling is only a symlink; systemctl --root makes it without a running systemd.
        if command -v systemctl >/dev/null; then
            # (It warns that multi-user.target is missing: a staging root has no systemd.)
            systemctl --root="$ROOT" --quiet enable ballreader.service 2>/dev/null \
                || die "systemctl --root=$ROOT enable ballreader.service failed"
        else
            echo "install.sh: would run: systemctl enable ballreader.service"
        fi
        echo "install.sh: would run: systemctl daemon-reload; systemctl restart mosquitto ballreader"
        return 0
    fi
    [ "$UNIT_CHANGED" = 1 ] && live systemctl daemon-reload
    systemctl --quiet is-enabled ballreader.service 2>/dev/null || live systemctl enable ballreader.service
    systemctl --quiet is-enabled mosquitto.service 2>/dev/null || live systemctl enable mosquitto.service
    [ "$BROKER_CHANGED" = 1 ] && live systemctl restart mosquitto.service
    # --no-block: a Pi without its camera yet is still installed; the service reports that.
    if [ "$UNIT_CHANGED" = 1 ] || [ "$CODE_CHANGED" = 1 ] || [ "$NEW_SECRET" = 1 ]; then
        live systemctl restart --no-block ballreader.service
    else
        systemctl --quiet is-active ballreader.service || live systemctl start --no-block ballreader.service
    fi
    say "see: systemctl status ballreader; journalctl -u ballreader"
}

do_install() {
    CODE_CHANGED=0 UNIT_CHANGED=0 BROKER_CHANGED=0 NEW_SECRET=0
    [ "$STAGING" = 1 ] && say "staging into $ROOT (apt, users and systemd are only shown)"
    [ "$STAGING" = 0 ] && check_live_system
    apt_packages
    [ -x "$PYTHON" ] || die "$PYTHON not found (apt install python3-venv, or --python PATH)"
    system_user
    config_and_state
    install_code
    mosquitto_files
    units
    say "done"
}

# ---------------------------------------------------------------- uninstall

remove() { # PATH...: remove what exists, and say so
    local path
    for path in "$@"; do
        if [ -e "$(R "$path")" ] || [ -L "$(R "$path")" ]; then
            rm -rf -- "$(R "$path")"
            say "removed $path"
        fi
    done
}

do_uninstall() {
    [ "$STAGING" = 0 ] && check_live_system
    if [ -f "$(R "$UNIT")" ]; then
        if [ "$STAGING" = 1 ]; then
            if command -v systemctl >/dev/null; then
                systemctl --root="$ROOT" --quiet disable ballreader.service 2>/dev/null \
                    || die "systemctl --root=$ROOT disable ballreader.service failed"
            fi
        else
            live systemctl disable --now ballreader.service
        fi
    fi
    remove /etc/systemd/system/multi-user.target.wants/ballreader.service "$UNIT" "$OPT" "$MQ_CONF"
    if [ "$PURGE" = 1 ]; then
        remove "$ETC" "$MQ_PASSWD" "$MQ_ACL" "$STATE"
        if [ "$STAGING" = 1 ] || getent passwd "$APP_USER" >/dev/null; then
            live userdel "$APP_USER"
        fi
    else
        say "kept the record $STATE, the config $ETC and the broker users $MQ_PASSWD"
    fi
    live systemctl daemon-reload
    if [ "$STAGING" = 1 ] || systemctl --quiet is-active mosquitto.service; then
        live systemctl restart mosquitto.service
    fi
    say "done"
}

if [ "$ACTION" = install ]; then do_install; else do_uninstall; fi
