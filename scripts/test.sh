#!/usr/bin/env bash
# Runs every check and test of rankscale from a bare Debian 12 machine:
# installs what is missing, builds both MPI flavours, lints, and runs the
# unit, property and MPI integration tests (real mpirun, MPICH and Open MPI).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# Each step says when it starts, in seconds since this script began, so that
# a CI log shows where the time goes.
step() { echo "test: $* (at ${SECONDS} s)"; }
step "setup"
scripts/setup.sh
step "build"
scripts/build.sh
# The MSRV build: the workspace's rust-version is the oldest Rust it
# promises, so the suite must build with exactly that toolchain. Where it
# is the default toolchain, the builds above (and every test below) are
# the MSRV build; otherwise it is checked with it, and a machine without
# it fails here rather than pass a promise nobody checked.
msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)
step "MSRV build (rust-version $msrv)"
if [[ "$(rustc --version)" == "rustc $msrv"[.\ ]* ]]; then
  echo "test: the default toolchain is the MSRV ($(rustc --version)): the builds above are the MSRV build"
elif rustup toolchain list 2>/dev/null | grep -q "^$msrv[.-]"; then
  scripts/with-mpi openmpi cargo "+$msrv" check --workspace --all-targets --quiet
else
  echo "test: no Rust $msrv toolchain here (rustup toolchain install $msrv): the MSRV build cannot run" >&2
  exit 1
fi
step "cargo fmt --check"
cargo fmt --all --check
for imp in mpich openmpi; do
  step "clippy ($imp)"
  scripts/with-mpi "$imp" cargo clippy --release --workspace --all-targets --quiet -- -D warnings
done
step "the CLI without the OTF2 library (--no-default-features)"
# A machine without libotf2 builds the CLI without the `otf2` feature: the
# OTF2 crate must not be in that build at all, and `export --otf2` must say
# how to get it instead of failing obscurely.
# (The first check proves the second can see the crate.)
cargo tree -p rankscale -e normal --prefix none | grep -q '^otf2 '
if cargo tree -p rankscale --no-default-features -e normal --prefix none | grep -q '^otf2 '; then
  echo "test: the OTF2 crate is still linked without the otf2 feature" >&2
  exit 1
fi
CARGO_TARGET_DIR=target/no-otf2 cargo build --quiet --no-default-features --bin rankscale
nootf2_out=$(mktemp -d)
target/no-otf2/debug/rankscale import --format pertext -o "$nootf2_out/t.trace" tests/data/pertext/small >/dev/null
if target/no-otf2/debug/rankscale export --otf2 -o "$nootf2_out/a" "$nootf2_out/t.trace" 2>"$nootf2_out/err"; then
  echo "test: export --otf2 succeeded in a build without OTF2" >&2
  exit 1
fi
grep -q "libotf2-trace-dev" "$nootf2_out/err" || { cat "$nootf2_out/err" >&2; exit 1; }
echo "test: without OTF2: $(cat "$nootf2_out/err")"
rm -rf "$nootf2_out"
step "the fuzz targets compile (running them needs cargo-fuzz: see compress/fuzz)"
CARGO_TARGET_DIR=target/fuzz cargo check --quiet --manifest-path compress/fuzz/Cargo.toml
step "cargo doc (warnings are errors) and the doc examples"
RUSTDOCFLAGS="-D warnings" scripts/with-mpi openmpi cargo doc --no-deps --workspace --quiet
cargo test --release --workspace --doc --quiet
step "cargo test (MPI tests run one at a time: the machine is small)"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
set +e
RUST_TEST_THREADS=1 cargo test --release --workspace --lib --bins --tests --no-fail-fast 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# The closing lines: every failed test with where it panicked (the end of
# a long log is what a CI page keeps), then one count over all binaries.
if grep -q ' FAILED$' "$log"; then
  echo "test: failed tests:"
  grep -E '^test .* FAILED$' "$log" | sed 's/^/  /'
  grep -E -A2 "^thread '.*' \([0-9]+\) panicked at|^thread '.*' panicked at" "$log" | cut -c1-400 | head -60
fi
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "total: %d passed, %d failed\n", p, f }' "$log"
step "done"
exit "$status"
