#!/usr/bin/env bash
# Build kube-apiserver, kube-scheduler, kube-controller-manager, kubectl, etcd and helm from the Go module proxy into
# ~/.cache/gpupool/bin/<k8s-version>/ (or $GPUPOOL_CACHE/bin/<version>).
# K8S_VERSION other than tools/kube's (an older release of the compatibility matrix, docs/testbed.md): only the
# control plane (kube-apiserver, kube-scheduler, kube-controller-manager) differs per release, built from a module
# generated from that release's go.mod (tools/kube-release-module.sh, kept in $GPUPOOL_CACHE/modules/<version>/);
# etcd, kubectl and helm stay tools/kube's.
# Called by tests/sandbox when no binary is found elsewhere; safe to rerun: a
# binary already in the cache is not rebuilt. Prints progress and timings
# because the first (cold) build takes many minutes on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BASE_VERSION=$(sed -n 's#^[[:space:]]*\(require[[:space:]]*\)\{0,1\}k8s.io/kubernetes \(v[0-9.]*\).*#\2#p' "$here/kube/go.mod")
[ -n "$BASE_VERSION" ] || { echo "[build-binaries] cannot read the k8s.io/kubernetes version from $here/kube/go.mod" >&2; exit 1; }
K8S_VERSION=${K8S_VERSION:-$BASE_VERSION}
# helm.sh/helm/v3 sits inside the require block ("\thelm.sh/helm/v3 vX // indirect").
HELM_VERSION=$(sed -n 's#^[[:space:]]*\(require[[:space:]]*\)\{0,1\}helm.sh/helm/v3 \(v[0-9.]*\).*#\2#p' "$here/helm/go.mod")
[ -n "$HELM_VERSION" ] || { echo "[build-binaries] cannot read the helm version from $here/helm/go.mod" >&2; exit 1; }
cache=${GPUPOOL_CACHE:-$HOME/.cache/gpupool}
dest="$cache/bin/$K8S_VERSION"
mkdir -p "$dest"
kube_module="$here/kube"
if [ "$K8S_VERSION" != "$BASE_VERSION" ]; then
  case ${1:-all} in
    kube-apiserver|kube-scheduler|kube-controller-manager) ;;
    *) echo "[build-binaries] $K8S_VERSION is a matrix release: only its control plane is built for it (etcd, kubectl, helm are $BASE_VERSION's)" >&2; exit 2 ;;
  esac
  kube_module="$cache/modules/$K8S_VERSION"
  # A module generated before the scheduler and the controller manager were built lacks their tool lines (and sums).
  if [ ! -x "$dest/$1" ] && { [ ! -f "$kube_module/go.sum" ] || ! grep -q "cmd/$1\$" "$kube_module/go.mod"; }; then
    echo "[build-binaries] generating the build module for the $K8S_VERSION control plane in $kube_module"
    "$here/kube-release-module.sh" "$K8S_VERSION" "$kube_module"
  fi
fi
export GOFLAGS="${GOFLAGS:--buildvcs=false} -mod=readonly"
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
minor=$(echo "$K8S_VERSION" | cut -d. -f2)
ver_flags="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
ver_flags="$ver_flags -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"

build() { # name module-dir package ldflags
  local name=$1 dir=$2 pkg=$3 flags=$4
  if [ -x "$dest/$name" ]; then echo "[build-binaries] $name: cached at $dest/$name"; return; fi
  echo "[build-binaries] building $name from $pkg (cold builds take minutes; go prints nothing meanwhile)"
  local t0=$SECONDS
  ( cd "$dir" && go build -trimpath -ldflags "-s -w $flags" -o "$dest/$name.tmp" "$pkg" )
  mv "$dest/$name.tmp" "$dest/$name"
  echo "[build-binaries] $name built in $((SECONDS - t0))s -> $dest/$name"
}
which=${1:-all}
[ "$which" = all ] || [ "$which" = etcd ] && build etcd "$here/kube" go.etcd.io/etcd/server/v3 ""
[ "$which" = all ] || [ "$which" = kube-apiserver ] && build kube-apiserver "$kube_module" k8s.io/kubernetes/cmd/kube-apiserver "$ver_flags"
[ "$which" = all ] || [ "$which" = kube-scheduler ] && build kube-scheduler "$kube_module" k8s.io/kubernetes/cmd/kube-scheduler "$ver_flags"
[ "$which" = all ] || [ "$which" = kube-controller-manager ] && build kube-controller-manager "$kube_module" k8s.io/kubernetes/cmd/kube-controller-manager "$ver_flags"
[ "$which" = all ] || [ "$which" = kubectl ] && build kubectl "$here/kube" k8s.io/kubernetes/cmd/kubectl "$ver_flags"
[ "$which" = all ] || [ "$which" = helm ] && build helm "$here/helm" helm.sh/helm/v3/cmd/helm "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
echo "[build-binaries] done: $dest"
