"""The words' model kept in her cache folder: a later process maps it instead of reading and
converting the GGUF again (~4 s of processor), bit for bit the same, and never a stale, truncated
or damaged copy."""

from __future__ import annotations

import filecmp
import os
import shutil

import numpy as np
import pytest

from companion.voice.turns.text_model import stored
from companion.voice.turns.text_model.q8 import Q8
from companion.voice.turns.text_turn import PROMPT, TextTurn, resolve_text_model

WORDS = ("Could you", "What time is it?", "Ten of clubs.", "It's 2024, isn't it")


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """Her words' model loaded as she loads it, with an empty cache folder ($XDG_CACHE_HOME):
    read and converted from its GGUF, and stored."""
    cache = tmp_path_factory.mktemp("xdg-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(cache))
        model = TextTurn(resolve_text_model())
        model.load()
    return model, cache / "companion" / "text-turn"


def arrays(model) -> dict[str, np.ndarray]:
    found = {}
    for name, weights in model.tensors().items():
        found.update({f"{name}.q": weights.q, f"{name}.scale": weights.scale} if isinstance(weights, Q8)
                     else {name: weights})
    return found


def assert_bit_identical(mine, theirs) -> None:
    assert mine.shape == theirs.shape
    a, b = arrays(mine), arrays(theirs)
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].dtype == b[name].dtype and a[name].shape == b[name].shape, name
        assert a[name].tobytes() == b[name].tobytes(), name


def test_her_first_load_stores_the_converted_model_in_her_cache_folder(converted):
    model, folder = converted
    assert [p.name for p in folder.iterdir()] == [stored.stored_file(model.path, folder).name]  # no temporary left


def test_a_second_load_maps_the_stored_model_without_reading_the_gguf_and_reads_words_bit_for_bit_alike(
        converted, monkeypatch):
    first, folder = converted
    import gguf

    def no_gguf(*_args, **_kwargs):
        raise AssertionError("the GGUF was read again")

    monkeypatch.setattr(gguf, "GGUFReader", no_gguf)
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder.parent.parent))
    second = TextTurn(first.path)
    second.load()
    assert_bit_identical(second._model, first._model)
    assert second._tokenizer.to_str() == first._tokenizer.to_str()
    assert not second._model.embedding.flags.writeable  # shared pages of the file, not a private copy
    for words in WORDS:
        assert second.probability_sync(words).probability == first.probability_sync(words).probability, words
    ids = first.tokens(f"{PROMPT}What is the capital of France?")
    assert np.array_equal(second._model.forward(ids, second._model.new_cache(64)),
                          first._model.forward(ids, first._model.new_cache(64)))


def test_a_damaged_store_is_ignored_and_written_again(converted, tmp_path):
    model, folder = converted
    original = stored.stored_file(model.path, folder)
    damaged = stored.stored_file(model.path, tmp_path)
    shutil.copyfile(original, damaged)
    with damaged.open("r+b") as handle:  # one byte of the weights flipped
        handle.seek(damaged.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0x10]))
    assert stored.read_stored(model.path, tmp_path) is None
    tokenizer, llama = stored.load_model(model.path, tmp_path)
    assert_bit_identical(llama, model._model)  # converted from the GGUF again
    assert filecmp.cmp(damaged, original, shallow=False)  # and stored whole again


@pytest.mark.parametrize("damage", ["truncated", "half-written", "empty", "not ours"])
def test_a_truncated_or_half_written_store_is_not_read(converted, tmp_path, damage):
    model, folder = converted
    original = stored.stored_file(model.path, folder)
    copy = stored.stored_file(model.path, tmp_path)
    shutil.copyfile(original, copy)
    size = copy.stat().st_size
    with copy.open("r+b") as handle:
        if damage == "truncated":
            handle.truncate(size - 4096)
        elif damage == "half-written":  # all there but the checksum, which the writer puts last
            handle.seek(16)
            handle.write(bytes(4))
        elif damage == "empty":
            handle.truncate(0)
        else:
            handle.write(b"PK\x03\x04")
    assert stored.read_stored(model.path, tmp_path) is None


def test_the_store_of_a_gguf_that_changed_since_is_not_read(converted, tmp_path):
    model, _ = converted
    gguf = shutil.copyfile(model.path, tmp_path / model.path.name)
    folder = tmp_path / "cache"
    stored.store(gguf, folder, model._tokenizer, model._model)
    assert stored.read_stored(gguf, folder) is not None
    seen = gguf.stat()
    os.utime(gguf, ns=(seen.st_atime_ns, seen.st_mtime_ns + 1_000_000_000))  # a reinstall, a new copy
    assert stored.read_stored(gguf, folder) is None


def test_a_store_replaced_while_another_process_has_it_mapped_leaves_that_model_whole(converted, tmp_path):
    model, _ = converted
    stored.store(model.path, tmp_path, model._tokenizer, model._model)
    _, mapped = stored.read_stored(model.path, tmp_path)
    stored.store(model.path, tmp_path, model._tokenizer, model._model)  # a second process started at once
    assert_bit_identical(mapped, model._model)
    assert [p.name for p in tmp_path.iterdir()] == [stored.stored_file(model.path, tmp_path).name]
