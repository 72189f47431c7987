#!/usr/bin/env bash
# Installs whatever this project needs and the machine lacks: Debian packages and PyPI packages.
# Idempotent and quick when everything is present; run by `make run`, `make test` and `make build`.
set -euo pipefail

debian_packages=(
  cmake ninja-build g++ pkg-config python3-pip
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev
  liburing-dev libstarpu-dev
  verilator yosys libjpeg-dev libjpeg-turbo-progs
  clang libclang-rt-14-dev
  ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo
)
python_modules=(matplotlib numpy ray prometheus_client)  # ray: tandem sim sweep --ray and its tests; prometheus_client: the /metrics test's parser

missing=()
for pkg in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

python=${PYTHON:-python3}
missing_py=()
for mod in "${python_modules[@]}"; do
  "$python" -c "import $mod" 2>/dev/null || missing_py+=("$mod")
done
if ((${#missing_py[@]})); then
  echo "setup: installing Python packages: ${missing_py[*]}"
  "$python" -m pip install -q "${missing_py[@]}" 2>/dev/null \
    || "$python" -m pip install -q --break-system-packages "${missing_py[@]}"
fi

# The project's own package (python/tandem_sim), editable: Ray workers import it by name.
if ! "$python" -c "import tandem_sim" 2>/dev/null; then
  echo "setup: installing python/tandem_sim (editable)"
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  "$python" -m pip install -q -e "$here/python" 2>/dev/null \
    || "$python" -m pip install -q --break-system-packages -e "$here/python"
fi
