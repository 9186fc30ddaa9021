"""What a new user runs into: interrupts, options a command cannot use, misleading messages."""

from __future__ import annotations

import signal

import pytest

from coldbrew.cli import main
from coldbrew.errors import ColdbrewError


def test_an_interrupt_a_library_swallowed_still_exits_130(monkeypatch, capsys):
    import coldbrew.cli as cli

    def finishes_anyway(args):
        try:  # as Python does with an interrupt raised in a finaliser
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass
        return 0

    monkeypatch.setattr(cli, "handler", lambda command: finishes_anyway)
    # Python's own Ctrl-C handler, as in a terminal (a shell's background job inherits SIGINT
    # ignored, and coldbrew then leaves it so)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert main(["doctor"]) == 130
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
    finally:
        signal.signal(signal.SIGINT, previous)
    assert "interrupted" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--model", "knn", "--epochs", "3", "--lr", "0.1"], "knn cannot use --epochs, --lr"),
        (["--model", "blend", "--features", "content"], "blend cannot use --features"),
        (["--features", "content", "--text-encoder", "mpnet"], "content has no text block"),
        (["--model", "lm", "--text-encoder", "mpnet"], "lm cannot use --text-encoder (its own"),
    ],
)
def test_options_a_model_cannot_use_are_refused_in_one_line(tmp_path, capsys, flags, message):
    out = tmp_path / "run"
    assert main(["train", "--data", "synthetic:small", *flags, "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1
    assert not out.exists()


def test_options_a_model_cannot_use_do_not_split_a_leaderboard(tmp_path):
    from coldbrew.config import config_yaml, make_config
    from coldbrew.research.boards.leaderboard import check_same_settings

    (tmp_path / "config.yaml").write_text(config_yaml(make_config({"model": "knn", "epochs": 2})))
    check_same_settings(tmp_path, make_config({"model": "knn", "epochs": 5, "lr": 0.1}))
    with pytest.raises(ColdbrewError, match="other settings \\(neighbors"):
        check_same_settings(tmp_path, make_config({"model": "knn", "neighbors": 8}))


def test_an_lm_run_serves_a_board_of_any_text_encoder(tmp_path):
    """The LM reads texts through its own backbone: a board on mpnet reuses its MiniLM run; a
    model that reads the text block does not."""
    from coldbrew.config import config_yaml, make_config
    from coldbrew.research.boards.leaderboard import check_same_settings

    (tmp_path / "config.yaml").write_text(config_yaml(make_config({"model": "lm"})))
    check_same_settings(tmp_path, make_config({"model": "lm", "text_encoder": "mpnet@128"}))
    (tmp_path / "config.yaml").write_text(config_yaml(make_config({"model": "gar"})))
    with pytest.raises(ColdbrewError, match="other settings \\(text_encoder"):
        check_same_settings(tmp_path, make_config({"model": "gar", "text_encoder": "mpnet"}))


def test_an_empty_or_file_parent_out_says_what_is_wrong(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--data", "synthetic:small", "--out", "", "--quiet"]) == 2
    assert "--out is empty" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
    (tmp_path / "afile").write_text("x")
    assert main(["train", "--data", "synthetic:small", "--out", "afile/run", "--quiet"]) == 2
    assert "afile is a file, not a folder" in capsys.readouterr().err


def test_an_option_typo_shows_the_subcommands_usage_and_the_closest_name(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["blend", "--runs", "a,b", "--out", "x", "--wieghts", "1,2"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("usage: coldbrew blend ")
    assert (
        "coldbrew blend: error: unrecognized arguments --wieghts 1,2; did you mean --weights?"
        in error
    )


def test_a_zoo_backbone_given_to_the_lm_is_refused_at_once(tmp_path, capsys):
    argv = ["train", "--model", "lm", "--backbone", "als", "--data", "synthetic:small"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 2
    assert "--backbone als is a collaborative backbone of the cold-start zoo" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "run").exists()


def test_progress_bars_stay_out_of_a_redirected_log(tmp_path, capsys):
    pytest.importorskip("transformers")
    from coldbrew.data.text.backbones import load_backbone
    from coldbrew.system.terminal import bars_shown
    from sentence_support import tiny_sentence_folder

    folder = tiny_sentence_folder(tmp_path / "encoder")
    capsys.readouterr()
    load_backbone(str(folder), progress=True)  # stderr is captured here: not a terminal
    assert "Loading weights" not in capsys.readouterr().err
    assert not bars_shown(True)


def test_train_model_blend_without_weights_points_to_coldbrew_blend(tmp_path, capsys):
    argv = ["train", "--model", "blend", "--data", "synthetic:small", "--out", str(tmp_path / "b")]
    assert main([*argv, "--runs", f"{tmp_path}/a,{tmp_path}/c"]) == 2
    error = capsys.readouterr().err
    assert "needs their --weights (e.g. 0.5,0.5)" in error and "coldbrew blend --runs" in error
