#!/usr/bin/env bash
# Build kube-apiserver for the lab from Debian's `kubernetes` source package, offline from Go's point of view.
#
#   lab/k8s/build_kube_apiserver.sh DEST
#
# DEST must not exist; on success it holds `kube-apiserver` and `VERSION`. The build runs in a temporary
# directory next to DEST, which is renamed into place only when everything succeeded, so an interrupted
# build never leaves a half-filled DEST. tests/run keys DEST by the hash of this file: changing the recipe
# here rebuilds. Needs: golang-go (1.19), golang-github-modern-go-reflect2-dev, make, rsync, apt-get.
#
# Steps:
#   1. fetch the source package with a private apt configuration holding a deb-src entry for the machine's
#      own Debian mirror (the system's apt configuration is only read, never changed);
#   2. unpack the upstream tarball (it carries vendor/);
#   3. replace vendored reflect2 1.0.1 with Debian's 1.0.2: 1.0.1 crashes under Go >= 1.18 the first time
#      a custom resource is created (runtime.mapiterinit fault in reflect2.UnsafeIterate);
#   4. `make WHAT=cmd/kube-apiserver` in GOPATH mode, as Kubernetes 1.20 expects, with the module proxy off.
set -euo pipefail

KUBE_SOURCE_VERSION=1.20.5+really1.20.2-1.1+deb12u1
KUBE_UPSTREAM_DIR=kubernetes-1.20.2
REFLECT2_DEB=/usr/share/gocode/src/github.com/modern-go/reflect2

dest=${1:?usage: build_kube_apiserver.sh DEST}
[ ! -e "$dest" ] || { echo "build_kube_apiserver: $dest exists" >&2; exit 1; }
[ -f "$REFLECT2_DEB/reflect2.go" ] || { echo "build_kube_apiserver: $REFLECT2_DEB missing (apt: golang-github-modern-go-reflect2-dev)" >&2; exit 1; }
mkdir -p "$(dirname "$dest")"
work=$(mktemp -d "$dest.build.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The Debian mirror the machine already uses (deb822 *.sources or one-line sources.list).
mirror=$(
  {
    cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ {print $2}' || true
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; break}}' || true
  } | grep -E '/debian/?$' | head -1 || true
)
[ -n "$mirror" ] || { echo "build_kube_apiserver: no Debian mirror found in the apt configuration" >&2; exit 1; }

apt_dir=$work/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s bookworm main\n' "$mirror" > "$apt_dir/sources.list"
apt_opts=(-q -o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
  -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
echo "build_kube_apiserver: fetching kubernetes $KUBE_SOURCE_VERSION source from $mirror" >&2
apt-get "${apt_opts[@]}" update >/dev/null
(cd "$work" && apt-get "${apt_opts[@]}" source --download-only "kubernetes=$KUBE_SOURCE_VERSION" >/dev/null)

tar -C "$work" -xzf "$work"/kubernetes_*.orig.tar.gz
src=$work/$KUBE_UPSTREAM_DIR
[ -d "$src/vendor" ] || { echo "build_kube_apiserver: $src/vendor missing" >&2; exit 1; }

rm -rf "$src/vendor/github.com/modern-go/reflect2"
cp -r "$REFLECT2_DEB" "$src/vendor/github.com/modern-go/reflect2"

echo "build_kube_apiserver: make WHAT=cmd/kube-apiserver (several minutes)" >&2
(cd "$src" && env GO111MODULE=off GOPROXY=off GOFLAGS= CGO_ENABLED=0 KUBE_VERBOSE=0 \
  make WHAT=cmd/kube-apiserver >"$work/make.log" 2>&1) || { tail -40 "$work/make.log" >&2; exit 1; }

out=$work/out
mkdir -p "$out"
cp "$src/_output/bin/kube-apiserver" "$out/kube-apiserver"
"$out/kube-apiserver" --version > "$out/VERSION"
mv "$out" "$dest"
echo "build_kube_apiserver: $(cat "$dest/VERSION") in $dest" >&2
