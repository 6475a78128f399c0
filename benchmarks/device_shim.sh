# Sourced by the device scripts (gcn_gpu.sh, structure_gpu.sh, student64_gpu.sh), from the repository root with REPO and
# PY set: makes the `eqsearch` import namespace from this checkout's folders without installing it (a lent device has
# the dependencies but not eqsearch), adds the wheels carried in .whl/ where there are any, and prints the GPU.
SHIM=$(mktemp -d)
mkdir -p "$SHIM/eqsearch"
VERSION=$("$PY" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
echo "__version__ = \"$VERSION\"" > "$SHIM/eqsearch/__init__.py"
for part in engine ingest evaluation training export; do ln -s "$REPO/$part" "$SHIM/eqsearch/$part"; done
if compgen -G ".whl/*.whl" > /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SHIM/site" .whl/*.whl
  export PYTHONPATH="$SHIM:$SHIM/site"
else
  export PYTHONPATH="$SHIM"
fi
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || true
