"""What `activestream` does before any command: a numba cache it can write to."""

import sys


def test_a_numba_cache_that_cannot_be_written_is_copied_into_the_temporary_folder(tmp_path, monkeypatch):
    import os
    import tempfile

    from consumer.cli import writable_numba_cache

    image_cache = tmp_path / "image" / "numba"
    (image_cache / "sub").mkdir(parents=True)
    (image_cache / "sub" / "kernel.nbi").write_bytes(b"index")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    monkeypatch.delitem(sys.modules, "numba", raising=False)  # as before numba's first import
    writable = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == str(image_cache) else writable(p, mode))
    for _ in range(2):  # the second command finds the first one's copy
        monkeypatch.setenv("NUMBA_CACHE_DIR", str(image_cache))
        writable_numba_cache()
        copy = temporary / f"activestream-numba-{os.getuid()}"
        assert os.environ["NUMBA_CACHE_DIR"] == str(copy)
        assert (copy / "sub" / "kernel.nbi").read_bytes() == b"index"
    assert [p.name for p in temporary.iterdir()] == [copy.name]
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(temporary))  # writable: left as it is
    writable_numba_cache()
    assert os.environ["NUMBA_CACHE_DIR"] == str(temporary)

