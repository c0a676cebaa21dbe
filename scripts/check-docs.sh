#!/usr/bin/env bash
# Runs every tlslab command of README.md and docs/**/*.md as written, on
# small budgets, and says which failed. The commands are those that
# tests/integration/docs.rs parses: in a ```sh block every line that
# starts with `tlslab` or `cargo run --release --` (after `$ `, `time` and
# NAME=value), in any other block only such lines after `$ `; a trailing
# `\` joins lines. Each line runs in bash as a user would type it (pipes,
# `&&`, redirections, globs), with `tlslab` a wrapper that appends or
# lowers the budgets each command takes:
#   handshake, bulk, speed, cost, tunnel: --runs 2 --warmup 0.02 (and
#     --max-total-time 30 unless given); with --capacity --max-time 0.3
#     --max-total-time 4 instead; --transfer-mb 1 for OpenVPN rows
#   load: --duration 2 (--ramp 0.5 with a preset or a ramp); serve:
#     --duration 1 and, without --bind or --server, --bind 127.0.0.1:0
# The commands of one document run in order in one scratch directory (so
# files one makes, another reads), with a database of its own that first
# holds six runs, which the examples' run ids refer to: 1 and 2 handshake
# runs of one mock matrix, 3 a bulk run, 4 a tunnel run, 5 a load run, 6 a
# handshake run again; other.sqlite is a copy of it. A `tlslab serve` on
# 127.0.0.1:8443 runs for the examples that load "a server you run".
# Commands that need nginx, or root and OpenVPN (or the tun link), are
# skipped with a line saying so where those are missing. The --remote
# examples go to a `tlslab serve --handshakes` on 127.0.0.1:8445.
#
#   scripts/check-docs.sh                 # every document
#   scripts/check-docs.sh docs/bulk.md    # some
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

real=${TLSLAB:-$repo/target/release/tlslab}
if [ ! -x "$real" ]; then
  cargo build --release || exit 1
fi
real=$(cd "$(dirname "$real")" && pwd)/$(basename "$real")
scratch=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT

if [ $# -gt 0 ]; then
  documents=("$@")
else
  mapfile -t documents < <(
    echo README.md
    find docs -name '*.md' | sort
  )
fi

# The wrapper every documented command calls as `tlslab`.
mkdir -p "$scratch/bin"
cat >"$scratch/bin/tlslab" <<EOF
#!/usr/bin/env bash
args=("\$@")
has() {
  local a
  for a in "\${args[@]}"; do [[ \$a == "\$1" || \$a == "\$1="* ]] && return 0; done
  return 1
}
# set_opt NAME VALUE: replaces the option's value, or appends the option.
set_opt() {
  local i n=\${#args[@]}
  for ((i = 0; i < n; i++)); do
    if [[ \${args[i]} == "\$1" ]]; then args[i + 1]=\$2; return; fi
    if [[ \${args[i]} == "\$1="* ]]; then args[i]="\$1=\$2"; return; fi
  done
  args+=("\$1" "\$2")
}
case "\${1:-}" in
  handshake | bulk | speed | cost | tunnel)
    set_opt --warmup 0.02
    if has --capacity; then
      set_opt --max-time 0.3
      set_opt --max-total-time 4
    else
      set_opt --runs 2
      has --max-total-time || set_opt --max-total-time 30
    fi
    if [[ \$1 == tunnel && " \${args[*]} " == *openvpn* ]]; then set_opt --transfer-mb 1; fi
    ;;
  load)
    set_opt --duration 2
    if has --preset || has --ramp; then set_opt --ramp 0.5; fi
    ;;
  serve)
    set_opt --duration 1
    has --bind || has --server || args+=(--bind 127.0.0.1:0)
    ;;
esac
exec "$real" "\${args[@]}"
EOF
chmod +x "$scratch/bin/tlslab"

export XDG_CACHE_HOME="$scratch/cache" # certificate chains, made once

# The runs the examples' ids refer to.
seed="$scratch/seed"
mkdir -p "$seed/data"
echo "seeding runs 1-6 (handshake, handshake, bulk, tunnel, load, handshake)"
(
  export XDG_DATA_HOME="$seed/data"
  mock=(handshake --backend mock --tls 1.2 --group rsa,dhe1024,x25519,p384
    --cert rsa2048,ecdsa_p256 --runs 10 --warmup 0 -q)
  "$real" "${mock[@]}" &&
    "$real" "${mock[@]}" &&
    "$real" bulk --backend openssl --suite aes128gcm --size 1024 --runs 10 --warmup 0 -q &&
    "$real" tunnel --cipher aes-128-cbc,bf-cbc --digest sha1 --runs 10 --warmup 0 -q &&
    "$real" load --server embedded --rate 20 --duration 1 --clients 2 -q &&
    "$real" "${mock[@]}"
) >"$scratch/seed.log" 2>&1 || {
  cat "$scratch/seed.log"
  echo "the seed runs failed"
  exit 1
}

# A server you run, for the examples with --target 127.0.0.1:8443.
if (exec 3<>/dev/tcp/127.0.0.1/8443) 2>/dev/null; then
  echo "note: 127.0.0.1:8443 is taken; the --target examples use what listens there"
else
  "$real" serve --bind 127.0.0.1:8443 --duration 3600 -q >"$scratch/serve.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 50); do
    (exec 3<>/dev/tcp/127.0.0.1/8443) 2>/dev/null && break
    sleep 0.1
  done
fi

# A handshake server for the --remote examples (which name a device on
# the network: the script aims them at this one).
"$real" serve --handshakes --bind 127.0.0.1:8445 --duration 3600 -q >"$scratch/handshakes.log" 2>&1 &
handshake_server_pid=$!
trap 'kill $handshake_server_pid 2>/dev/null; cleanup' EXIT

have_nginx() { command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; }
have_link() { [ "$(id -u)" = 0 ] && [ -e /dev/net/tun ] && command -v ip >/dev/null 2>&1; }
have_openvpn() { [ "$(id -u)" = 0 ] && command -v openvpn >/dev/null 2>&1 && command -v ip >/dev/null 2>&1; }

# Prints "FILE:LINE<TAB>COMMAND LINE" for every documented command line.
extract() {
  awk '
    function emit() {
      line = pending; pending = ""
      gsub(/^[ \t]+/, "", line)
      rest = line
      while (rest ~ /^(time|[A-Z_]+=[^ ]*)[ \t]/) sub(/^[^ \t]+[ \t]+/, "", rest)
      if (rest ~ /^tlslab([ \t]|$)/ || rest ~ /^cargo run --release --[ \t]/)
        printf "%s:%d\t%s\n", FILENAME, start, line
    }
    /^[ \t]*```/ {
      if (!inblock) { inblock = 1; info = $0; sub(/^[ \t]*```/, "", info); gsub(/[ \t]/, "", info) }
      else inblock = 0
      pending = ""; next
    }
    !inblock { next }
    {
      text = $0; sub(/^[ \t]+/, "", text)
      if (pending == "") {
        start = FNR
        if (text ~ /^\$ /) text = substr(text, 3)
        else if (info != "sh" && info != "bash" && info != "console") next
        pending = text
      } else pending = pending " " text
      if (pending ~ /\\$/) { sub(/[ \t]*\\$/, "", pending); next }
      emit()
    }
  ' "$1"
}

passed=0
failed=0
skipped=0
failures=()
for doc in "${documents[@]}"; do
  work="$scratch/work/${doc//\//_}"
  mkdir -p "$work"
  cp -r "$seed/data" "$work/data"
  cp "$seed/data/tlslab/tlslab.sqlite" "$work/other.sqlite"
  # HOME is the scratch directory, with the directories the install
  # examples write completion scripts and manual pages into.
  for dir in .local/share/bash-completion/completions .zfunc .config/fish/completions \
    .local/share/man/man1; do
    mkdir -p "$work/home/$dir"
  done
  while IFS=$'\t' read -r place line; do
    command=${line//cargo run --release --/tlslab}
    why=
    if [[ $command == *"--server nginx"* ]] ||
      { [[ $command == *"tlslab load"* ]] && [[ $command != *"--server embedded"* ]] &&
        [[ $command != *"--target"* ]] && [[ $command != *"--preset apache-study"* ]]; }; then
      have_nginx || why="nginx is not installed (install: apt-get install nginx-light)"
    fi
    if [[ $command == *"--engine"*openvpn* ]]; then
      have_openvpn || why="needs root, openvpn and ip (install: apt-get install openvpn iproute2)"
    fi
    if [[ $command == *"--link tun"* ]] || [[ $command == *"--preset pq-network"* ]]; then
      have_link || why="needs root, /dev/net/tun and ip (install: apt-get install iproute2)"
    fi
    if [[ $command == *"--remote "* ]]; then
      command=$(sed -E 's/--remote [^ ]+/--remote 127.0.0.1:8445/' <<<"$command")
    fi
    if [[ $command == *"| man "* ]] && ! command -v man >/dev/null 2>&1; then
      why="man is not installed"
    fi
    if [ -n "$why" ]; then
      echo "SKIP $place: $line: $why"
      skipped=$((skipped + 1))
      continue
    fi
    log="$work/$((passed + failed + skipped)).log"
    start=$SECONDS
    if (cd "$work" && HOME="$work/home" XDG_DATA_HOME="$work/data" PATH="$scratch/bin:$PATH" \
      timeout 300 bash -o pipefail -c "$command") </dev/null >"$log" 2>&1; then
      echo "ok   $place: $line ($((SECONDS - start)) s)"
      passed=$((passed + 1))
    else
      status=$?
      echo "FAIL $place: $line (exit $status, $((SECONDS - start)) s)"
      tail -n 15 "$log" | sed 's/^/     | /'
      failed=$((failed + 1))
      failures+=("$place: $line")
    fi
  done < <(extract "$doc")
done

echo
if [ "$failed" -gt 0 ]; then
  echo "failed:"
  printf '  %s\n' "${failures[@]}"
fi
echo "check-docs: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
