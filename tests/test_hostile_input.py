"""Hostile or broken values get one clear message (CLI: exit 2, one line), never a traceback: nesting deep enough
to overflow the TOML reader, an output folder that is a device, a lone surrogate, paths too long for the
filesystem, a special file as the base model, a zip member bigger than its header says, a dataset link that
leads out of the workspace while shared."""

from __future__ import annotations

import io
import struct
import zipfile

import pytest

from trainer.cli import main
from trainer.errors import UserError


def one_line_exit_2(argv: list[str], capsys) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    assert code == 2, err
    assert "Traceback" not in err and len(lines) == 1, err
    assert len(lines[0]) < 400, lines[0]  # a message to read, not the value echoed back
    return lines[0]


def test_toml_nested_past_the_readers_recursion_is_a_message(tmp_path, capsys):
    cfg = tmp_path / "deep.toml"
    cfg.write_text("[dataset]\npath = " + "[" * 100_000 + "]" * 100_000 + "\n")
    for command in ("plan", "train"):
        assert "nested too deeply" in one_line_exit_2([command, str(cfg)], capsys)
    assert "nested too deeply" in one_line_exit_2(["plan", "--set", "dataset.trigger=" + "[" * 100_000], capsys)


def test_an_output_dir_that_is_a_device_or_a_file_is_named(tmp_path, capsys):
    line = one_line_exit_2(["train", "--set", "save.output_dir=/dev/null"], capsys)
    assert "save.output_dir: /dev/null is a device" in line and "not a folder" in line
    file = tmp_path / "f"
    file.write_text("x")
    line = one_line_exit_2(["train", "--set", f"save.output_dir={file}/runs"], capsys)
    assert f"save.output_dir: {file} is a file" in line


def test_a_lone_surrogate_in_text_is_refused_by_its_key(capsys):
    line = one_line_exit_2(["plan", "--set", 'dataset.trigger="a\\ud800b"'], capsys)
    assert "'dataset.trigger'" in line and "lone surrogate" in line
    line = one_line_exit_2(["check-dataset", ".", "--trigger", "a\udcffb"], capsys)  # argv's surrogateescape
    assert "--trigger" in line and "lone surrogate" in line


def test_paths_too_long_for_the_filesystem_are_refused_shortly(capsys):
    line = one_line_exit_2(["plan", "--set", "dataset.path=" + "a" * 5000], capsys)
    assert "'dataset.path'" in line and "5,000 characters long" in line
    line = one_line_exit_2(["plan", "--set", "save.output_dir=/tmp/" + "b" * 300], capsys)
    assert "'save.output_dir'" in line and "longer than 255 bytes" in line
    line = one_line_exit_2(["check-dataset", "/tmp/" + "c" * 300], capsys)
    assert "check-dataset DIR" in line and "255 bytes" in line


def test_a_special_file_as_base_model_says_what_it_is():
    from trainer.models.base import classify_base

    with pytest.raises(UserError, match="/dev/zero is a character device, not a model folder"):
        classify_base("/dev/zero")
    with pytest.raises(UserError, match=r"cannot be used \(File name too long"):
        classify_base("/tmp/" + "m" * 300)


def _zip_with_a_lying_header(method: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        z.writestr("10_zxc/ok.txt", b"zxc")
        z.writestr("10_zxc/a.png", b"A" * 100_000)
    data = bytearray(buf.getvalue())
    local = data.index(b"PK\x03\x04", 1)  # the second member's local header
    central = data.rindex(b"PK\x01\x02")  # its central directory entry
    struct.pack_into("<I", data, local + 22, 10)  # "uncompressed size: 10 bytes"
    struct.pack_into("<I", data, central + 24, 10)
    return bytes(data)


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_a_zip_member_bigger_than_its_header_is_refused_and_leaves_no_file(tmp_path, method):
    from ui.paths import import_uploads

    upload = tmp_path / "up.zip"
    upload.write_bytes(_zip_with_a_lying_header(method))
    dest = tmp_path / "ds"
    with pytest.raises(UserError, match=r"10_zxc/a\.png is not what the archive's header says"):
        import_uploads([upload], dest)
    assert not (dest / "10_zxc" / "a.png").exists()
    assert (dest / "10_zxc" / "ok.txt").read_text() == "zxc"


def test_while_shared_a_dataset_link_out_of_the_workspace_is_refused(tmp_path):
    from ui.paths import PathPolicy

    ws = tmp_path / "ws"
    ds = ws / "datasets" / "d" / "10_zxc"
    ds.mkdir(parents=True)
    (ds / "a.png").write_bytes(b"x")
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"x")
    inside = ws / "datasets" / "d" / "10_zxc" / "b.png"
    inside.symlink_to(ds / "a.png")  # a link that stays inside is fine
    (ws / "datasets" / "d2").mkdir()
    (ws / "datasets" / "d2" / "loop").symlink_to(ws / "datasets" / "d2")  # a loop ends, it is not followed forever
    (ws / "datasets" / "d" / "sub").symlink_to(ws / "datasets" / "d2", target_is_directory=True)

    def dataset(path: str, validation: str = ""):
        from trainer.config.schema import from_dict

        return from_dict({"dataset": {"path": path}, "validation": {"path": validation}})

    shared, local = PathPolicy(ws, restricted=True), PathPolicy(ws, restricted=False)
    shared.resolve_folders(dataset("datasets/d"))
    (ws / "datasets" / "d2" / "c.png").symlink_to(secret)  # reached through the linked folder "sub"
    (ws / "datasets" / "ok").mkdir()
    for cfg in (dataset("datasets/d"), dataset("datasets/d2"), dataset("datasets/ok", validation="datasets/d2")):
        with pytest.raises(UserError, match=r"c\.png is a link to .*secret\.png, outside the workspace"):
            shared.resolve_folders(cfg)
    with pytest.raises(UserError, match=r"validation\.path: .* is outside the workspace"):
        shared.resolve_folders(dataset("datasets/ok", validation=str(tmp_path)))
    (ws / "datasets" / "val").mkdir()
    cfg = dataset("datasets/ok", validation="datasets/val")
    shared.resolve_folders(cfg)  # a workspace-relative folder is the workspace's, not the process's directory
    assert cfg.validation.path == str(ws / "datasets" / "val")
    local.resolve_folders(dataset("datasets/d"))  # on the user's own machine a link is theirs to make


def test_a_workspace_relative_base_folder_is_a_folder_and_hub_ids_wait_for_the_users_own_machine(tmp_path):
    from ui.paths import PathPolicy

    ws = tmp_path / "ws"
    (ws / "models" / "mine").mkdir(parents=True)
    for restricted in (True, False):
        policy = PathPolicy(ws, restricted=restricted)
        assert policy.check_base("models/mine") == str(ws / "models" / "mine")
    assert PathPolicy(ws, restricted=False).check_base("owner/model") == "owner/model"
    with pytest.raises(UserError, match=r"owner/model is a hub id\. While the app is shared"):
        PathPolicy(ws, restricted=True).check_base("owner/model")
    with pytest.raises(UserError, match=r"cannot be used \(File name too long"):
        PathPolicy(ws, restricted=False).check_base("/tmp/" + "m" * 300 + "/x.safetensors")


def test_typed_paths_the_filesystem_cannot_take_are_messages(tmp_path):
    from ui.paths import PathPolicy

    with pytest.raises(UserError, match=r"dataset.path: a+….*\(5,000 characters\) cannot be used"):
        PathPolicy(tmp_path, restricted=False).resolve("a" * 5000, "dataset.path")


def test_the_cli_names_a_file_the_system_refused_without_a_traceback(capsys):
    line = one_line_exit_2(["tiny-model", "sd15", "/dev/null/tiny"], capsys)
    assert line.startswith("error: /dev/null") and "Not a directory" in line
