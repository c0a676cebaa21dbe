#!/usr/bin/env bash
# Builds OpenSSL from the same source and `Configure` options that tlslab's
# vendored release build used (once; kept under $CARGO_TARGET_DIR) and
# prints where it is. Run from the repository after `cargo build --release`.
#
#   scripts/build-openssl.sh            the `openssl` command (for `speed`,
#                                       `s_time`, `s_server`): prints its path
#   scripts/build-openssl.sh --shared   libssl.so.3 and libcrypto.so.3 made from
#                                       that build: prints their directory, for
#                                       TLSLAB_NGINX_OPENSSL (nginx on the same
#                                       OpenSSL as tlslab)
set -euo pipefail
target="${CARGO_TARGET_DIR:-target}"
shared=no
if [ "${1:-}" = "--shared" ]; then shared=yes; fi
source_dir=$(cargo metadata --format-version 1 --locked | python3 -c '
import json, os, sys
meta = json.load(sys.stdin)
src = [p for p in meta["packages"] if p["name"] == "openssl-src"][0]
print(os.path.join(os.path.dirname(src["manifest_path"]), "openssl"))')

# The Configure line openssl-src ran for the release build, minus its paths.
configure_args() {
  local output
  output=$(ls -t "$target"/release/build/openssl-sys-*/output | head -n 1)
  grep -o '"./Configure".*' "$output" | head -n 1 | sed 's/^"\.\/Configure" //' |
    tr ' ' '\n' | tr -d '"' | grep -v -e '^--prefix=' -e '^--openssldir=' | tr '\n' ' '
}

build="$target/openssl-speed"
if [ ! -x "$build/apps/openssl" ]; then
  args=$(configure_args)
  rm -rf "$build" && mkdir -p "$build"
  cp -a "$source_dir/." "$build/"
  (cd "$build" && perl ./Configure $args >/dev/null &&
    make -j"$(nproc)" build_generated >/dev/null && make -j"$(nproc)" apps/openssl >/dev/null)
fi
if [ "$shared" = no ]; then
  echo "$build/apps/openssl"
  exit 0
fi

# Shared libraries from the static ones just built (openssl-src's source
# lacks util/mkdef.pl, which a `shared` Configure needs): each exported
# function carries the symbol version its util/*.num file gives it
# (OPENSSL_3.0.0 and later), as in a regular shared build, so that programs
# linked against another OpenSSL 3 (Debian's nginx) load them. libcrypto
# also exports its internal functions, which libssl calls.
libs="$target/openssl-shared"
if [ ! -e "$libs/libssl.so.3" ]; then
  mkdir -p "$libs"
  version_script() { # numbers file, whether to hide what it does not list
    awk -v hide="$2" '$4 ~ /^EXIST/ {
        v = $3; gsub("_", ".", v); v = "OPENSSL_" v
        if (!(v in seen)) { seen[v] = 1; order[++n] = v }
        symbols[v] = symbols[v] "    " $1 ";\n"
      }
      END {
        for (i = 1; i <= n; i++) {
          printf "%s {\n  global:\n%s", order[i], symbols[order[i]]
          if (i == 1 && hide == "yes") printf "  local: *;\n"
          printf "}%s;\n", (i == 1 ? "" : " " order[i - 1])
        }
      }' "$1"
  }
  version_script "$build/util/libcrypto.num" no >"$libs/libcrypto.map"
  version_script "$build/util/libssl.num" yes >"$libs/libssl.map"
  cc -shared -o "$libs/libcrypto.so.3" -Wl,-soname,libcrypto.so.3 \
    -Wl,--version-script="$libs/libcrypto.map" \
    -Wl,--whole-archive "$build/libcrypto.a" -Wl,--no-whole-archive -lpthread -ldl
  cc -shared -o "$libs/libssl.so.3" -Wl,-soname,libssl.so.3 \
    -Wl,--version-script="$libs/libssl.map" \
    -Wl,--whole-archive "$build/libssl.a" -Wl,--no-whole-archive \
    -L"$libs" -l:libcrypto.so.3 -Wl,--no-undefined
fi
(cd "$libs" && pwd)
