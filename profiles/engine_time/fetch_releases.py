"""Write `profiles/data/engine_time/releases.yaml`: every release of each serving framework on PyPI, as pip
lists it (`pip index versions --pre PACKAGE`, pre-releases and post-releases included), so that an engine
version that never existed is refused (profiles.engine_time.releases). Run it offline when a framework
ships a release, then raise `newest_release` in frameworks.yaml once that release's rules are read:

    python3 -m profiles.engine_time.fetch_releases

The file keeps what PyPI does not hold: TensorRT-LLM release candidates published on NVIDIA's own index
(pypi.nvidia.com, which this machine cannot reach) are written in `releases.yaml` by hand with their source,
and this script carries them over.
"""
from __future__ import annotations

import argparse
import datetime
import re
import subprocess
import sys

import yaml

from models.errors import doc_description, run_script, script_args
from profiles.engine_time.releases import DATA_FILE, PACKAGES

_LISTED = re.compile(r"^Available versions: (.+)$", re.MULTILINE)


def pypi_versions(package: str) -> list[str]:
    """Every version of `package` that pip's index lists, newest first (as pip prints them)."""
    done = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "--pre", package],
                          capture_output=True, text=True, timeout=300, check=False)
    found = _LISTED.search(done.stdout)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"fetch_releases: pip index versions {package} failed: {done.stderr.strip()[-300:]}")
    return [v.strip() for v in found.group(1).split(",")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=doc_description(__doc__))
    script_args(parser, argv)
    old = yaml.safe_load(DATA_FILE.read_text(encoding="utf-8")) if DATA_FILE.is_file() else {}
    frameworks = {}
    for framework, package in PACKAGES.items():
        kept = dict((old.get("frameworks") or {}).get(framework) or {})
        kept.update(package=package, pypi=pypi_versions(package))
        frameworks[framework] = kept
    today = datetime.date.today().isoformat()
    text = yaml.safe_dump({"fetched": today, "source": old.get("source", ""), "frameworks": frameworks},
                          sort_keys=False, width=120, allow_unicode=True, default_flow_style=None)
    DATA_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {DATA_FILE}: " + ", ".join(f"{fw} {len(v['pypi'])}" for fw, v in frameworks.items()))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
