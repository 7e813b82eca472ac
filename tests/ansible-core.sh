#!/usr/bin/env bash
# ansible-test sanity or units on one ansible-core release meta/runtime.yml admits (requires_ansible ">=2.16.0"),
# as kubernetes.core tests each release it supports. 2.16 to 2.19 run on this machine's Python (Debian 12's 3.11,
# the Makefile's VENV_PYTHON), each from a virtualenv of its own; 2.20 and 2.21 need Python 3.12 or newer and run
# on Debian 13's Python 3.13, in tests/trixie-controller.sh's root file system. Nothing else differs: the same copy
# of the collection, the same ansible-test command as make sanity and make units (tests/ansible-test.sh).
#
# `molecule` runs a Molecule scenario from that release instead, as a user of it runs the collection: the Ansible
# package of its line (ansible 9 for 2.16), the collections galaxy.yml needs newer than that package has taken from
# .venv's Ansible package where they admit the release, and molecule and the Python libraries as requirements.txt
# pins them (2.20 and 2.21: the playbooks from Debian 13's Python, see below). make test runs `preinstall` from the
# oldest release and `vip` from the newest (SCENARIOS: preinstall@2.16.19, vip@2.21.5), each failing on a deprecation
# warning of the collection's in its output (tests/deprecations.py).
# Usage: tests/ansible-core.sh sanity|units VERSION [ansible-test arguments...]
#        tests/ansible-core.sh molecule VERSION [molecule test arguments...]
set -euo pipefail
command=${1:?sanity, units or molecule}; version=${2:?an ansible-core version, e.g. 2.16.19}; shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "$command" = molecule ]; then
  pins=$(grep -E '^(molecule|molecule-plugins\[podman\]|kubernetes|jmespath|netaddr)==' "$root/requirements.txt")
  output=$(mktemp); started=$(mktemp)
  trap 'rm -f "$output" "$started"' EXIT
  case ${version%.*} in
    2.16)
      # The Ansible package of the release line, on this machine's Python (3.11).
      package=ansible==9.13.0
      venv=${XDG_CACHE_HOME:-$HOME/.cache}/slipway/ansible-core/molecule-$version
      if [ ! -e "$venv/.complete" ]; then
        rm -rf "$venv"
        "${VENV_PYTHON:-/usr/bin/python3}" -m venv "$venv"
        # shellcheck disable=SC2086  # one requirement per word
        "$venv/bin/pip" install --quiet "$package" "ansible-core==$version" $pins
        touch "$venv/.complete"
      fi
      # kubernetes.core: galaxy.yml needs >=3.0.0, ansible 9 has 2.4.2; .venv's (ansible 12's) admits ansible-core 2.16.
      collections=$venv/collections/ansible_collections
      mkdir -p "$collections/kubernetes"
      ln -sfn "$("$root/.venv/bin/python" -c 'import ansible_collections.kubernetes.core as c; print(list(c.__path__)[0])')" \
        "$collections/kubernetes/core"
      echo "molecule from ansible-core $version ($("$venv/bin/ansible" --version | head -n 1)), $venv"
      set +e
      PATH=$venv/bin:$PATH ANSIBLE_COLLECTIONS_PATH=$root/.cache/collections:$venv/collections \
        "$venv/bin/molecule" test "$@" 2>&1 | tee "$output"
      rc=${PIPESTATUS[0]}
      set -e
      ;;
    2.20 | 2.21)
      # Debian 13's Python (3.13) in tests/trixie-controller.sh's root file system, where ansible-core and the
      # Python libraries the playbooks use are installed as requirements.txt pins them; the collections galaxy.yml
      # needs are .venv's (ansible 12's), which admit these releases. Molecule itself runs from .venv, and so do the
      # two playbooks of its harness, molecule/resources/create.yml and destroy.yml, which start and remove the lab's
      # podman containers from this machine; every other playbook (converge, idempotence, side effects, verify, and
      # each run they make through molecule/resources/files/stage.py) is ansible-playbook of this release, in a
      # container of that root file system on the host's network, the checkout and $HOME at their own paths.
      rootfs=$("$root/tests/trixie-controller.sh")
      venv=/opt/ansible-core/molecule-$version
      if [ ! -e "$rootfs$venv/.complete" ]; then
        rm -rf "${rootfs:?}$venv"
        podman run --rm --rootfs "$rootfs" /usr/bin/python3 -m venv "$venv"
        # shellcheck disable=SC2086  # one requirement per word
        podman run --rm --rootfs "$rootfs" "$venv/bin/pip" install --quiet "ansible-core==$version" \
          $(grep -vE '^molecule' <<<"$pins")
        touch "$rootfs$venv/.complete"
      fi
      site=$("$root/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
      # The checkout's own Python packages (lab/, operator/, tools/: pyproject.toml), as .venv finds them.
      packages=$("$root/.venv/bin/python" -c 'import sys; print(":".join(p for p in sys.path if p.startswith(sys.argv[1] + "/") and "/.venv/" not in p))' "$root")
      bin=$root/.cache/ansible-core/molecule-$version/bin
      mkdir -p "$bin"
      cat > "$bin/ansible-playbook" <<SCRIPT
#!/usr/bin/env bash
# Made by tests/ansible-core.sh molecule $version: Molecule's harness from .venv, every other playbook from
# ansible-core $version on Debian 13's Python.
for arg; do
  case \$arg in */molecule/resources/create.yml | */molecule/resources/destroy.yml)
    exec "$root/.venv/bin/ansible-playbook" "\$@" ;;
  esac
done
env=(--env HOME --env "PATH=$venv/bin:/usr/bin:/bin" --env "PYTHONPATH=$packages"
     --env "ANSIBLE_COLLECTIONS_PATH=\${ANSIBLE_COLLECTIONS_PATH:+\$ANSIBLE_COLLECTIONS_PATH:}$site")
while IFS= read -r name; do env+=(--env "\$name"); done < <(compgen -e | grep -E '^(ANSIBLE|MOLECULE|SLIPWAY)_' | grep -vx ANSIBLE_COLLECTIONS_PATH)
exec podman run --rm --network host --volume "$root:$root" --volume "\$HOME:\$HOME" --workdir "\$PWD" "\${env[@]}" \\
  --rootfs "$rootfs" "$venv/bin/ansible-playbook" "\$@"
SCRIPT
      chmod +x "$bin/ansible-playbook"
      echo "molecule from .venv, its playbooks from ansible-core $version on Debian 13's Python" \
        "($(podman run --rm --rootfs "$rootfs" "$venv/bin/ansible" --version | head -n 1), $rootfs$venv)"
      set +e
      PATH=$bin:$PATH "$root/.venv/bin/molecule" test "$@" 2>&1 | tee "$output"
      rc=${PIPESTATUS[0]}
      set -e
      ;;
    *)
      echo "ansible-core $version: tests/ansible-core.sh runs Molecule from 2.16, 2.20 and 2.21 (2.19 is .venv's)" >&2
      exit 2
      ;;
  esac
  # No deprecation warning of this collection's in the whole output, nor in the logs of the runs the scenario's steps
  # made (stage.py: .cache/test-logs/SCENARIO/, those written since this run began) (tests/deprecations.py).
  scenario=; previous=
  for arg; do [ "$previous" = -s ] || [ "$previous" = --scenario-name ] && scenario=$arg; previous=$arg; done
  steps=()
  if [ -n "$scenario" ] && [ -d "$root/.cache/test-logs/$scenario" ]; then
    mapfile -t steps < <(find "$root/.cache/test-logs/$scenario" -type f -name '*.log' -newer "$started" | sort)
  fi
  "$root/.venv/bin/python" "$root/tests/deprecations.py" "$root" "$output" "${steps[@]}" || rc=1
  exit "$rc"
fi
case ${version%.*} in
  2.16 | 2.17 | 2.18 | 2.19)
    python=${VENV_PYTHON:-/usr/bin/python3}
    venv=${XDG_CACHE_HOME:-$HOME/.cache}/slipway/ansible-core/$version
    if [ ! -x "$venv/bin/ansible-test" ]; then
      rm -rf "$venv"
      "$python" -m venv "$venv"
      "$venv/bin/pip" install --quiet "ansible-core==$version"
    fi
    echo "ansible-core $version on $("$venv/bin/python" --version) ($venv)"
    SLIPWAY_ANSIBLE_VENV=$venv exec "$root/tests/ansible-test.sh" "$command" "$@"
    ;;
  2.20 | 2.21)
    rootfs=$("$root/tests/trixie-controller.sh" "$version")
    echo "ansible-core $version on Debian 13's Python ($rootfs)"
    SLIPWAY_ANSIBLE_ROOTFS=$rootfs SLIPWAY_ANSIBLE_VENV=/opt/ansible-core/$version \
      exec "$root/tests/ansible-test.sh" "$command" "$@"
    ;;
  *)
    echo "ansible-core $version: meta/runtime.yml admits 2.16 and newer, and this script knows releases up to 2.21" >&2
    exit 2
    ;;
esac
