#!/bin/bash
# sigmatrace installed as a user gets it (label integration): `cmake --install` into a temporary
# prefix (softnic as its own component), the prefix then moved elsewhere (the tree must be
# relocatable and name nothing of the build tree), and from there: --version, the man page, the
# modulefile (where environment-modules is installed), then a real verbs program (perftest's
# ib_write_bw, two emulated hosts on softnic) profiled in Full mode, analysed, queried with an
# installed SQL file, and reported, its operations exactly softnic's own count (SOFTNIC_WQE_LOG).
# Then the packages: cpack's .deb and .tar.gz, unpacked, run the same command.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR. Exit 77 (skipped) without perftest or softnic.
build=$(cd "$1" && pwd) src=$2
. "$src/scripts/lib/shell_test.sh"
command -v ib_write_bw >/dev/null || skip "perftest (ib_write_bw) is not installed"
[ -e "$build/softnic/libibverbs.so.1" ] || skip "softnic is not built"
work=""
test_work_dir work

cmake --install "$build" --prefix "$work/staged" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "cmake --install failed"; }
cmake --install "$build" --prefix "$work/staged" --component softnic >>"$work/install.log" 2>&1 || fail "cmake --install --component softnic failed"
mv "$work/staged" "$work/p"  # somewhere the install never was: nothing may point back to it or to the build
p=$work/p
st=$p/bin/sigmatrace
lib=$(find "$p" -name libsigmatrace.so -type f)
[ -n "$lib" ] || fail "no libsigmatrace.so installed"
for f in include/sigmatrace.h share/sigmatrace/queries/rank_matrix.sql share/sigmatrace/queries/kernel_matrix.sql \
         share/man/man1/sigmatrace.1 share/doc/sigmatrace/README.md share/doc/sigmatrace/docs/nccl.md; do
  [ -f "$p/$f" ] || fail "$f is not installed"
done
[ -z "$(find "$p" -path '*/sigmatrace/softnic/libibverbs.so.1')" ] && fail "softnic's component did not install its libibverbs"
# The softnic libraries stay out of the loader's default path (they stand in for rdma-core).
[ -z "$(find "$p" -maxdepth 3 -name 'libibverbs*' -not -path '*/sigmatrace/softnic/*')" ] || fail "softnic's libibverbs is on the library path"
for f in "$st" "$lib"; do
  ! readelf -d "$f" | grep -E 'RPATH|RUNPATH' | grep -q "$build" || fail "$f still names the build tree in its run path"
done

"$st" --version | grep -Eq '^sigmatrace [0-9]+\.[0-9]+\.[0-9]+ \([0-9a-z.-]+\)$' || fail "--version does not name the version and the revision: $("$st" --version)"
"$st" --help | head -2 | grep -q '^Usage: sigmatrace ' || fail "--help does not start with the program's name"
grep -q 'SIGMATRACE_MODE' "$p/share/man/man1/sigmatrace.1" || fail "the man page lacks the SIGMATRACE_* variables"
if command -v man >/dev/null; then
  MANWIDTH=100 man -l "$p/share/man/man1/sigmatrace.1" 2>/dev/null | grep -q 'sigmatrace profile' || fail "man cannot render the page"
fi
if [ -f /usr/share/modules/init/bash ]; then
  found=$(bash -c "source /usr/share/modules/init/bash && module use '$p/share/modulefiles' && module load sigmatrace && command -v sigmatrace")
  [ "$found" = "$st" ] || fail "module load sigmatrace put '$found' on PATH, not $st"
else
  echo "modulefile not loaded: environment-modules is not installed"
fi

env=$(cd "$work" && "$st" profile --softnic --dry-run -- true)  # (the default output directory is the current one)
grep -q "LD_PRELOAD='$lib:" <<<"$env" || { echo "$env"; fail "the installed command does not preload the installed library"; }
! grep -q "$build" <<<"$env" || { echo "$env"; fail "the installed command names the build tree"; }

# A real verbs program from the installed tree, exactly what softnic executed.
source "$src/scripts/lib/perftest_pair.sh"
exp=$work/exp
mkdir -p "$work/oracle"
export SOFTNIC_FABRIC="install-$$" SIGMATRACE_RUN_ID="install-$$" SOFTNIC_WQE_LOG=$work/oracle
perftest_pair "$st" "$exp" "$work/ib_write_bw" ib_write_bw -n 300 -s 4096
"$st" analyze -q "$exp" >"$work/analyze.log" 2>&1 || { cat "$work/analyze.log"; fail "the installed analyze failed"; }
python3 "$src/tests/gpu/checks/check_verbs_oracle.py" "$exp/aggregate.json" "$work/oracle" --min-qps 1 || fail "the trace is not what softnic executed"
rows=$("$st" sql "$exp" "$(cat "$p/share/sigmatrace/queries/rank_matrix.sql")" --csv) || fail "sql with the installed query failed"
grep -q '1228800' <<<"$rows" || { echo "$rows"; fail "the rank matrix lacks the 300 WRITEs of 4 KiB"; }
"$st" report --html "$exp" >"$work/report.log" 2>&1 && [ -s "$exp/report.html" ] || { cat "$work/report.log"; fail "the installed report failed"; }

# The packages: made by cpack, unpacked, the command run from them.
if command -v dpkg-deb >/dev/null; then
  (cd "$work" && cpack -G "DEB;TGZ" -B "$work/pkg" --config "$build/CPackConfig.cmake") >"$work/cpack.log" 2>&1 ||
    { tail -30 "$work/cpack.log"; fail "cpack failed"; }
  deb=$(ls "$work"/pkg/*.deb) && tgz=$(ls "$work"/pkg/*.tar.gz) || fail "cpack made no .deb or .tar.gz"
  dpkg-deb -c "$deb" >"$work/deb.list" || fail "dpkg-deb cannot list $deb"
  grep -q '/usr/bin/sigmatrace$' "$work/deb.list" || fail "the .deb lacks usr/bin/sigmatrace"
  ! grep -q 'sigmatrace/softnic/' "$work/deb.list" || fail "the main .deb carries softnic"
  dpkg-deb -x "$deb" "$work/deb"
  "$work/deb/usr/bin/sigmatrace" profile --dry-run -- true | grep -q "LD_PRELOAD='$work/deb/usr/lib" || fail "the .deb's command does not find its library"
  mkdir -p "$work/tgz" && tar -xzf "$tgz" -C "$work/tgz" --strip-components=1
  "$work/tgz/bin/sigmatrace" --version >/dev/null || fail "the .tar.gz's command does not run"
fi
# The Spack recipe cannot be run without Spack: its syntax, at least.
python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$src/packaging/spack/packages/sigmatrace/package.py" ||
  fail "the Spack recipe does not parse"
echo "PASS: installed, moved, and run from the install and the packages; the trace exactly softnic's count"
