#!/usr/bin/env bash
# Builds the real kube-apiserver and etcd that the real-cluster suite runs, from Go modules, into a cache
# outside the clone, keyed by version, so fresh clones and later runs reuse them.
# Why a wrapper module: k8s.io/kubernetes pins its staging modules to v0.0.0 with ./staging replaces that Go
# ignores in a dependency, so we require it and replace each staging module with its published v0.Y.Z.
set -euo pipefail

KUBE_VERSION="${FLEETGATE_KUBE_VERSION:-v1.34.4}"
ETCD_VERSION="${FLEETGATE_ETCD_VERSION:-v3.6.16}"
HELM_VERSION="${FLEETGATE_HELM_VERSION:-v3.19.5}"
CACHE="${FLEETGATE_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fleetgate/bin}"
mkdir -p "$CACHE"

log() { echo "[build-binaries] $*" >&2; }

command -v go >/dev/null || { echo "build-binaries: go is not installed" >&2; exit 3; }

# One build at a time per cache dir: a second caller waits and then finds the binaries.
exec 9>"$CACHE/.lock"
flock 9

build_kube_apiserver() {
  local out="$CACHE/kube-apiserver-$KUBE_VERSION"
  if [[ -x "$out" ]]; then log "reusing $out"; return; fi
  local start=$SECONDS work minor
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
  log "building kube-apiserver $KUBE_VERSION (several minutes on 2 cores)"
  (
    cd "$work"
    go mod init fleetgate.test/kube-apiserver >/dev/null 2>&1
    local gomod
    gomod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    [[ -f "$gomod" ]] || { echo "cannot read go.mod of k8s.io/kubernetes@$KUBE_VERSION" >&2; exit 1; }
    local goline
    goline=$(grep -E '^go [0-9]' "$gomod" | head -1)
    {
      echo "module fleetgate.test/kube-apiserver"
      echo
      echo "$goline"
      grep -E '^godebug ' "$gomod" || true
      echo
      echo "require k8s.io/kubernetes $KUBE_VERSION"
      echo
      # Every staging module becomes its published v0.<minor>.<patch>.
      grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$gomod" | awk -v v="v0.${KUBE_VERSION#v1.}" '{print "replace " $1 " => " $1 " " v}'
    } > go.mod
    cat > tools.go <<'GO'
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
GO
    go mod tidy >/dev/null 2>&1 || go mod tidy
    local ld="-s -w"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ld="$ld -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
    done
    CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$out.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  )
  mv "$out.tmp" "$out"
  log "kube-apiserver $KUBE_VERSION built in $((SECONDS - start)) s"
}

build_etcd() {
  local out="$CACHE/etcd-$ETCD_VERSION"
  if [[ -x "$out" ]]; then log "reusing $out"; return; fi
  local start=$SECONDS work
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  log "building etcd $ETCD_VERSION"
  (
    cd "$work"
    go mod init fleetgate.test/etcd >/dev/null 2>&1
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null 2>&1 || go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    cat > tools.go <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
    go mod tidy >/dev/null 2>&1 || go mod tidy
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.tmp" go.etcd.io/etcd/server/v3
  )
  mv "$out.tmp" "$out"
  log "etcd $ETCD_VERSION built in $((SECONDS - start)) s"
}

# helm for the chart tests (helm lint, helm template). Its own module builds as is: go install module@version.
build_helm() {
  local out="$CACHE/helm-$HELM_VERSION"
  if [[ -x "$out" ]]; then log "reusing $out"; return; fi
  local start=$SECONDS work
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  log "building helm $HELM_VERSION"
  GOBIN="$work" CGO_ENABLED=0 go install -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  mv "$work/helm" "$out.tmp"
  mv "$out.tmp" "$out"
  log "helm $HELM_VERSION built in $((SECONDS - start)) s"
}

build_etcd
build_kube_apiserver
build_helm
echo "KUBE_APISERVER=$CACHE/kube-apiserver-$KUBE_VERSION"
echo "ETCD=$CACHE/etcd-$ETCD_VERSION"
echo "HELM=$CACHE/helm-$HELM_VERSION"
