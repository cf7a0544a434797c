#!/usr/bin/env bash
# Creates (once) and names the virtual environment of the PyPI peers: tools/peers/requirements.txt
# installed into a venv of Debian's /usr/bin/python3, cached outside the repository so that every
# clone and build directory of the machine shares it (tools/peers/README.md).
#
#   tools/peers/venv.sh            create it if missing, print its python
#   tools/peers/venv.sh --path     print where it is (or would be), create nothing
#   tools/peers/venv.sh --check    exit 0 when it is complete, 1 otherwise, create nothing
#
# Where: $ROTA_PEERS_VENV if set, else ${XDG_CACHE_HOME:-$HOME/.cache}/rota/peers-<first 12 hex
# digits of the requirements' sha256>, so a changed pin builds a new venv beside the old one.
# Safe against a second caller (a lock) and an interrupted install (a venv counts only once its
# `.complete` marker is written, after pip succeeded; an incomplete one is rebuilt).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
requirements="$here/requirements.txt"
base_python=${ROTA_PEERS_BASE_PYTHON:-/usr/bin/python3}

digest=$(sha256sum "$requirements" | cut -c1-12)
venv=${ROTA_PEERS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/rota/peers-$digest}
marker="$venv/.complete"

case "${1:-}" in
  --path)
    echo "$venv"
    exit 0
    ;;
  --check)
    [ -f "$marker" ] && [ -x "$venv/bin/python" ]
    exit $?
    ;;
  "") ;;
  *)
    echo "venv.sh: unknown option '$1' (--path, --check, or none)" >&2
    exit 2
    ;;
esac

if [ -f "$marker" ] && [ -x "$venv/bin/python" ]; then
  echo "$venv/bin/python"
  exit 0
fi

if ! "$base_python" -c 'import ensurepip, venv' 2>/dev/null; then
  echo "venv.sh: $base_python cannot create a virtual environment: install Debian's python3-venv" \
    "(make peers does)" >&2
  exit 1
fi

mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if [ ! -f "$marker" ]; then  # another caller may have finished it while this one waited
  rm -rf "$venv"
  echo "venv.sh: creating the peers' virtual environment in $venv (about 5.6 GB, once)" >&2
  start=$SECONDS
  "$base_python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --requirement "$requirements" >&2
  "$venv/bin/python" -c 'import torch, transformers, tokenizers, safetensors, fla' >&2
  sha256sum "$requirements" >"$marker"
  echo "venv.sh: done in $((SECONDS - start)) s" >&2
fi
echo "$venv/bin/python"
