#!/usr/bin/env bash
# ansible-test bootstraps pip in its virtualenvs with a get-pip script it downloads from a host
# outside the package registries. Provide the same thing from PyPI instead: pip's own wheel and
# a small script that installs it, cached where ansible-test looks for the script.
set -euo pipefail
venv_python=${1:?path to the virtualenv python that runs ansible-test}
version=$("$venv_python" -c 'from ansible_test._internal.python_requirements import get_venv_packages
import sys
class P: version = "%d.%d" % sys.version_info[:2]
print(get_venv_packages(P)["pip"])')
cache=$HOME/.ansible/test/cache
script=$cache/get_pip_${version//./_}.py
[ -s "$script" ] && exit 0
mkdir -p "$cache"
"$venv_python" -m pip download --quiet --no-deps --only-binary=:all: -d "$cache" "pip==$version"
wheel=$(find "$cache" -maxdepth 1 -name "pip-$version-*.whl" | head -n 1)
cat > "$script.tmp" <<PY
# Offline stand-in for get-pip.py: installs pip $version from its wheel, fetched from PyPI.
import sys
sys.path.insert(0, "$wheel")
from pip._internal.cli.main import main
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(main(["install", "--upgrade", "--force-reinstall", *args]))
PY
mv "$script.tmp" "$script"
