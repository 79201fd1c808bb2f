# Sourced by the scripts that build the tests' third-party programs from Go modules (the
# Kubernetes control plane and node, CoreDNS, Helm, the chart linters, Jaeger). The caller
# defines log and die. Every build follows the same rules: once per version (the binaries
# are cached and a later run finds them), niced (tens of minutes on two cores for the
# largest), under a lock (two test runs starting together build once), with a build log,
# and into a temporary directory moved into place only when complete, so an interrupted
# build never leaves binaries that look complete.

# have_all <dir> <binary>...   true when every binary is in dir and executable
have_all() {
  local dir=$1 b
  shift
  for b in "$@"; do [[ -x "$dir/$b" ]] || return 1; done
}

# go_build_once <what> <module dir> <dest dir> <lock and log path, without extension> "<binaries>" "<ldflags>" <package>...
#
# Builds the packages with `go build` in the module dir into dest unless every one of the
# binaries (space-separated) is there already. The lock is <path>.lock, the log <path>.log.
# A caller whose package's binary name differs from the one it wants defines
# go_build_fixup <tmp dir>, run on the complete build before it is moved into place.
go_build_once() {
  local what=$1 module=$2 dest=$3 stem=$4 binaries=$5 ldflags=$6
  shift 6
  # shellcheck disable=SC2086 # the binaries are a space-separated list of plain names
  have_all "$dest" $binaries && return 0
  command -v go > /dev/null || die "go is not installed; it builds $what from $module/go.mod"
  mkdir -p "$(dirname "$stem")"
  local lock_fd
  exec {lock_fd}> "$stem.lock"
  flock "$lock_fd"
  # shellcheck disable=SC2086
  if ! have_all "$dest" $binaries; then # another run may have built them while this one waited
    local tmp="$dest.tmp.$$" started=$SECONDS
    rm -rf "$tmp" && mkdir -p "$tmp"
    log "building $what into $dest (once; slow)"
    (
      cd "$module"
      GOFLAGS="-trimpath -buildvcs=false -mod=readonly" CGO_ENABLED=0 nice -n 10 go build -ldflags="-s -w $ldflags" -o "$tmp/" "$@"
    ) > "$stem.log" 2>&1 || { rm -rf "$tmp"; tail -20 "$stem.log" >&2; die "build failed; see $stem.log"; }
    if [[ $(type -t go_build_fixup) == function ]]; then go_build_fixup "$tmp"; fi
    rm -rf "$dest" && mv "$tmp" "$dest"
    log "built $what in $((SECONDS - started))s"
  fi
  exec {lock_fd}>&-
}
