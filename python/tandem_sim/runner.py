"""One run of the simulator: a run spec (TOML) in, its result (one line of JSON) out."""
import os
import shutil
import subprocess


def find_tandem(path=None):
    """The tandem binary: `path`, else $TANDEM_BIN, else `tandem` on PATH. Raises if none is found."""
    for candidate in (path, os.environ.get("TANDEM_BIN"), shutil.which("tandem")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError("no tandem binary: pass its path, set TANDEM_BIN, or put it on PATH")


def run_spec(spec_text, tandem):
    """Runs one spec through `tandem sim exec -` and returns its result text (bytes as written)."""
    proc = subprocess.run([tandem, "sim", "exec", "-"], input=spec_text.encode(), capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"tandem sim exec failed ({proc.returncode}): {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode()
