"""What ``--help`` shows users: each command lists the options it uses, in plain words; the
original CLCRec's spellings are listed on ``train`` alone, yet still parse where they did."""

import argparse
import re

import pytest

from coldbrew.cli import build_parser, main


def help_of(capsys, monkeypatch, *argv: str) -> str:
    monkeypatch.setenv("COLUMNS", "1000")  # one line per option
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return capsys.readouterr().out


def listed(text: str, flag: str) -> bool:
    """Whether ``flag`` (exactly: ``--seed`` is not ``--seeds``) is listed in ``text``."""
    return re.search(re.escape(flag) + r"(?![\w-])", text) is not None


def option_names(text: str) -> set[str]:
    """The options ``text`` lists (each option line's first flag), not those its words name."""
    return {line.split()[0].rstrip(",") for line in text.splitlines() if line.startswith("  --")}


def every_parser(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from every_parser(sub)


def test_the_leaderboard_lists_seeds_and_models_and_no_training_only_flags(capsys, monkeypatch):
    text = help_of(capsys, monkeypatch, "leaderboard")
    assert listed(text, "--seeds") and listed(text, "--models")
    for flag in ("--seed", "--model", "--model_name", "--PATH_weight_save", "--save_file"):
        assert not listed(text, flag), flag
    for flag in ("--l_r", "--step", "--prefix", "--has_v", "--has-v", "--batch_size"):
        assert not listed(text, flag), flag
    assert listed(text, "--batch-size") and listed(text, "--epochs")


def test_the_leaderboard_still_names_the_flag_it_wants(tmp_path, capsys):
    assert main(["leaderboard", "--models", "clcrec", "--out", str(tmp_path), "--seed", "2"]) == 2
    assert "give --seeds LIST to the leaderboard, not --seed" in capsys.readouterr().err


def test_train_lists_the_original_clcrec_flags_under_their_own_heading(capsys, monkeypatch):
    text = help_of(capsys, monkeypatch, "train")
    heading = text.index("original CLCRec flags:")
    for flag in ("--l_r", "--dim_E", "--has_v", "--topK", "--PATH_weight_save", "--step"):
        assert text.index("\n  " + flag + " ") > heading, flag
    assert "--l_r LR              the original's spelling of --lr" in text
    # a listed option is listed once, in its dash spelling
    assert not listed(text, "--batch_size") and listed(text, "--batch-size")


def test_train_for_another_model_lists_no_clcrec_only_flags(capsys, monkeypatch):
    text = help_of(capsys, monkeypatch, "train", "--model", "gar")
    options = "\n".join(line for line in text.splitlines() if line.startswith("  --"))
    for flag in ("--has-v", "--has_v", "--has-a", "--has_a", "--has-t", "--has_t", "--l_r"):
        assert not listed(options, flag), flag
    assert "original CLCRec flags" not in text
    assert listed(options, "--rank-weight") and listed(options, "--backbone")


@pytest.mark.parametrize("command", ["search", "tune", "profile", "memory", "forecast"])
def test_other_commands_list_no_original_spellings(command, capsys, monkeypatch):
    text = help_of(capsys, monkeypatch, command)
    for flag in ("--l_r", "--PATH_weight_save", "--num_workers", "--has_v", "--topK"):
        assert not listed(text, flag), (command, flag)


def test_forecast_lists_the_forecasters_options_alone(capsys, monkeypatch):
    text = help_of(capsys, monkeypatch, "forecast")
    assert "lstm options" in text and listed(text, "--window")
    assert "clcrec options" not in text and not listed(text, "--lr-lambda")


def test_unlisted_spellings_still_parse():
    parser = build_parser()
    args = parser.parse_args(["tune", "--out", "x.yaml", "--l_r", "0.1", "--batch_size", "8"])
    assert (args.lr, args.batch_size) == ("0.1", "8")
    args = parser.parse_args(["train", "--model", "gar", "--has_v", "true", "--save_file", "f"])
    assert (args.has_v, args.save_file) == ("true", "f")
    args = parser.parse_args(
        ["leaderboard", "--models", "a", "--out", "o", "--PATH_weight_save", "p"]
    )
    assert args.PATH_weight_save == "p"


def test_no_help_text_has_rst_markup_or_speaks_to_developers():
    for parser in every_parser(build_parser()):
        text = parser.format_help()
        assert "``" not in text, parser.prog
        for phrase in ("delegate", "imports torch", "MemTracker", "see README"):
            assert phrase not in text, (parser.prog, phrase)


def test_defaults_are_written_as_a_user_writes_them(capsys, monkeypatch):
    text = help_of(capsys, monkeypatch, "train")
    assert "cut-offs for every metric (default: 10,20,50)" in text
    assert "(default: None)" not in text and "(default: False)" not in text


def test_train_lists_the_run_options_and_the_models_names_not_every_models_options(
    capsys, monkeypatch
):
    text = help_of(capsys, monkeypatch, "train")
    from coldbrew.registry import MODELS

    models = text[text.index("\nmodels:\n") :]
    assert "coldbrew train --model NAME --help lists a model's options" in models
    for name in MODELS:
        assert f"\n  {name} " in models, name
    options = option_names(text)
    for flag in ("--rank-weight", "--backbone", "--ridge-lambda", "--dim"):  # models' options
        assert flag not in options, flag
    assert {"--epochs", "--data"} <= options
    assert len(text.splitlines()) < 140  # every model's options: 375


def test_model_s_help_names_every_model(capsys, monkeypatch):
    text = help_of(capsys, monkeypatch, "train")
    line = next(line for line in text.splitlines() if line.startswith("  --model MODEL"))
    assert "one of clcrec, lm, " in line and ", ridge," in line
    assert "coldbrew train --model NAME --help lists its options" in line


def test_a_closed_form_models_help_lists_only_the_options_it_accepts(capsys, monkeypatch):
    text = help_of(capsys, monkeypatch, "train", "--model", "ridge")
    options = option_names(text)
    for flag in ("--epochs", "--lr", "--batch-size", "--optimizer", "--patience", "--l_r"):
        assert flag not in options, flag
    assert {"--ridge-lambda", "--data"} <= options
    assert "ridge options" in text and "models:" not in text
