#!/usr/bin/env bash
# The fresh-machine pass: the README's test command (`cargo test`, with CI
# unset) as it runs on a new Debian 12 machine with only a Rust toolchain.
# It runs in a private mount namespace in which every optional program the
# tests use is gone: /usr/bin and /usr/sbin (and any other directory of PATH
# holding one of them) get an overlay whose upper directory holds a whiteout
# (a 0/0 character device) for each, so the path vanishes (a /dev/null bound
# over it would still exist and be found). HOME, XDG_CACHE_HOME,
# XDG_DATA_HOME, XDG_CONFIG_HOME and TMPDIR point at new empty directories,
# and the tests' certificate cache (target/tmp/certs) is replaced by a new
# one through TLSLAB_TEST_CERT_DIR, so nothing an earlier run left is reused.
# CARGO_HOME and RUSTUP_HOME keep pointing at the real ones: cargo and rustup
# work and nothing is rebuilt. Each test that lacks its program must print a
# `skipped:` line and pass. Needs root (mount namespaces, overlays, mknod).
#
#   scripts/fresh-machine-test.sh             # cargo test
#   scripts/fresh-machine-test.sh --locked    # arguments go to cargo test
#
# Exits with cargo test's status and says how long the pass took.
set -euo pipefail

# The optional programs the tests (and the issues after 23) look for; a name
# is hidden only where it exists. Add a program here when a test starts
# using one.
HIDDEN_PROGRAMS=(
  # servers under test
  nginx apache2 apache2ctl apachectl haproxy caddy
  # VPN engines and the namespaces they run in: a Debian 12 image with only
  # a Rust toolchain has no iproute2
  openvpn wireguard-go wg wg-quick ip
  # the HTML report's browser
  chromium chromium-browser
  # counting, tracing and profiling
  valgrind valgrind.bin callgrind_control callgrind_annotate cg_annotate strace perf
  # load generators and QUIC clients (ngtcp2-client / ngtcp2-server: GnuTLS)
  h2load wrk gtlsclient gtlsserver
  # the HTTP/2 conformance suite (tests/integration/serve/h2spec.rs)
  h2spec
  # Slurm and munge (tests/integration/slurm.rs)
  sbatch srun squeue scontrol scancel sinfo slurmctld slurmd munged munge unmunge mungekey
  # the ARM devices under qemu-user
  qemu-arm qemu-aarch64 qemu-arm-static qemu-aarch64-static
)

self=$(realpath "$0")
cd "$(dirname "$self")/.."

if [ -z "${TLSLAB_FRESH_SCRATCH:-}" ]; then
  # Outside: make the scratch directories, run this script again in a
  # mount namespace of its own, clean up, say how long it took.
  if [ "$(id -u)" -ne 0 ]; then
    echo "fresh-machine-test: needs root (mount namespace, overlays, whiteouts)" >&2
    exit 2
  fi
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/tlslab-fresh.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
  # Kept pointing at the real ones, whatever HOME becomes inside.
  export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
  export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
  started=$(date +%s)
  status=0
  TLSLAB_FRESH_SCRATCH="$scratch" unshare --mount --propagation private \
    bash "$self" "$@" || status=$?
  elapsed=$(($(date +%s) - started))
  printf 'fresh-machine pass: cargo test%s exited %d after %dm%02ds\n' \
    "${*:+ $*}" "$status" $((elapsed / 60)) $((elapsed % 60))
  exit "$status"
fi

# Inside the namespace: nothing mounted here reaches the rest of the machine.
scratch=$TLSLAB_FRESH_SCRATCH
unset TLSLAB_FRESH_SCRATCH
mount --make-rprivate /

# The directories that hold a program to hide: /usr/bin, /usr/sbin and any
# other of PATH (each once, symbolic links such as /bin resolved).
declare -A directories=()
IFS=: read -r -a path_entries <<<"$PATH"
for dir in /usr/bin /usr/sbin "${path_entries[@]}"; do
  [ -d "$dir" ] || continue
  real=$(realpath "$dir")
  for program in "${HIDDEN_PROGRAMS[@]}"; do
    if [ -e "$real/$program" ] || [ -L "$real/$program" ]; then
      directories[$real]=1
      break
    fi
  done
done
directories[/usr/bin]=1
directories[/usr/sbin]=1

# The overlays' upper and work directories live on a tmpfs of their own
# (an overlay's upper directory cannot be on every filesystem).
layers=$scratch/layers
mkdir -p "$layers"
mount -t tmpfs tlslab-fresh "$layers"
index=0
hidden=()
for dir in "${!directories[@]}"; do
  index=$((index + 1))
  upper=$layers/$index/upper work=$layers/$index/work
  mkdir -p "$upper" "$work"
  for program in "${HIDDEN_PROGRAMS[@]}"; do
    if [ -e "$dir/$program" ] || [ -L "$dir/$program" ]; then
      mknod "$upper/$program" c 0 0
      hidden+=("$dir/$program")
    fi
  done
  mount -t overlay tlslab-fresh -o "lowerdir=$dir,upperdir=$upper,workdir=$work" "$dir"
done
echo "fresh-machine pass: hidden ${#hidden[@]} programs: ${hidden[*]:-none}"

# Nothing on the list may still be found (a copy somewhere else on PATH).
for program in "${HIDDEN_PROGRAMS[@]}"; do
  if found=$(command -v "$program"); then
    echo "fresh-machine-test: $program is still found at $found" >&2
    exit 2
  fi
done
echo "fresh-machine pass: none of the ${#HIDDEN_PROGRAMS[@]} names on the list is found on PATH"

# A new home, caches, data, configuration and temporary directory; the
# tests' certificate cache in a new directory too.
for dir in home cache data config tmp test-certs; do
  mkdir -p "$scratch/$dir"
done
# As /tmp is: a test runs tlslab as nobody, which makes its temporary files there.
chmod 0755 "$scratch"
chmod 1777 "$scratch/tmp"
export HOME=$scratch/home
export XDG_CACHE_HOME=$scratch/cache
export XDG_DATA_HOME=$scratch/data
export XDG_CONFIG_HOME=$scratch/config
export TMPDIR=$scratch/tmp
export TLSLAB_TEST_CERT_DIR=$scratch/test-certs
# The README's command as written: CI unset, and no variable that points
# tlslab at a program (TLSLAB_NGINX, TLSLAB_CHROMIUM, ...).
unset CI
for name in $(compgen -e); do
  case $name in
    TLSLAB_TEST_CERT_DIR) ;;
    TLSLAB_*) unset "$name" ;;
  esac
done

exec cargo test "$@"
