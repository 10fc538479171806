"""Copy Streamlit's frontend (its scripts, styles and fonts) where nginx serves it, each
compressible file beside a gzip copy of itself, for deploy/nginx.conf's `location /static/`
(docs/deployment.md §4).

    sudo /opt/transformer-viz/.venv/bin/python deploy/static_files.py \\
        /var/www/transformer-viz/static

Run it with the app's own Python (so that it copies the Streamlit the app runs), after installing
and after every upgrade of Streamlit. Every file name carries a hash of its content, so files are
only added: a browser still holding an older page finds the files it asks for. A file the copy lacks
is asked of the app, as before (the configuration's `try_files`). Standard library only.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import shutil
import sys
from pathlib import Path

# woff2 and png are compressed
COMPRESSED = (".js", ".css", ".json", ".svg", ".map", ".txt", ".ttf", ".otf")


def streamlit_static() -> Path:
    """The folder of the installed Streamlit's frontend that its pages load as /static/."""
    spec = importlib.util.find_spec("streamlit")
    if spec is None or spec.origin is None:
        raise SystemExit("streamlit is not installed for this Python: "
                         "run this with the app's own Python")
    folder = Path(spec.origin).parent / "static" / "static"
    if not folder.is_dir():
        raise SystemExit(f"{folder} is missing: this Streamlit keeps its frontend elsewhere")
    return folder


def copy_static(destination: Path, level: int = 9) -> tuple[int, int, int]:
    """Copy into ``destination`` (made if need be); returns (files, bytes, bytes as sent
    compressed)."""
    source = streamlit_static()
    files = plain = sent = 0
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        target = destination / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        size = path.stat().st_size
        files, plain = files + 1, plain + size
        if path.suffix in COMPRESSED:
            data = gzip.compress(path.read_bytes(), compresslevel=level, mtime=0)
            if len(data) < size:
                Path(f"{target}.gz").write_bytes(data)
                size = len(data)
        sent += size
    return files, plain, sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("destination", type=Path, help="the folder nginx serves as /static/")
    args = parser.parse_args()
    files, plain, sent = copy_static(args.destination)
    print(f"{files} files, {plain / 2**20:.1f} MiB, {sent / 2**20:.1f} MiB as sent compressed, "
          f"in {args.destination}", file=sys.stderr)


if __name__ == "__main__":
    main()
