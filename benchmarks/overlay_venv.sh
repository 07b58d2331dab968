# Sourced by the setup scripts of the benchmarks' reference venvs (core_algos/setup_reference_venv.sh,
# grpo_step/setup_trl_venv.sh): builds a venv that installs only a pinned requirements file with
# --no-deps and borrows everything else (torch, transformers, numpy, ...) from verl-cpp's venv
# through a .pth file that puts verl-cpp's site-packages *after* its own.
#
#   build_overlay_venv NAME VENV TARGET_VENV REQUIREMENTS PTH_LINE
#
# NAME prefixes the messages; PTH_LINE is what the .pth file holds (a path, or an `import site; ...`
# line). The caller checks the result and writes its stamp.
build_overlay_venv() {
  local name="$1" venv="$2" target="$3" requirements="$4" pth_line="$5"
  # Same interpreter as verl-cpp's venv, so torch's and numpy's compiled modules load in both.
  local base_python
  base_python="$("$venv/bin/python" -c 'import sys; print(sys._base_executable)')"
  if [ -x "$target/bin/python" ] && [ "$("$target/bin/python" -c 'import sys; print(sys.version)')" != \
       "$("$venv/bin/python" -c 'import sys; print(sys.version)')" ]; then
    rm -rf "$target"
  fi
  [ -x "$target/bin/python" ] || "$base_python" -m venv "$target"
  local target_site
  target_site="$("$target/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  # site.py processes a site-packages directory's .pth files in name order after the directory
  # itself: the borrowed site-packages comes after the venv's own packages.
  echo "$pth_line" > "$target_site/zz-verl-cpp-shared-site-packages.pth"
  echo "$name: installing $(basename "$requirements") into $target (--no-deps)"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$target/bin/python" -m pip install -q --no-deps -r "$requirements"
}
