"""The site's mkdocs hooks (docs/hooks/coldbrew_docs.py): generated option tables, the check
that every flag a page shows exists, and the BENCHMARKS.md link rewrite."""

import dataclasses
import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hooks():
    spec = importlib.util.spec_from_file_location(
        "coldbrew_docs", ROOT / "docs" / "hooks" / "coldbrew_docs.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def page(uri: str):
    return SimpleNamespace(file=SimpleNamespace(src_uri=uri))


def test_a_model_table_has_one_row_per_option_with_its_default(hooks):
    from coldbrew.models.zoo.gar_config import GAROptions

    table = hooks.options_table("gar")
    rows = [line for line in table.splitlines() if line.startswith("| `--")]
    assert len(rows) == len(dataclasses.fields(GAROptions))
    assert "| `--rank-weight` | 0.9 | α: the recommender ranks" in table
    assert "| `--backbone` | als |" in table  # inherited from TeacherOptions
    # GAR's own run defaults are said under the table
    assert "`--batch-size 8192`" in table and "`--epochs 2`" in table


def test_the_run_table_names_the_original_spelling(hooks):
    table = hooks.options_table("run")
    assert "| `--lr` (original: `--l_r`) | 0.002 |" in table
    assert "| `--ks` | 10,20,50 |" in table
    assert "| `--grad-clip` | none |" in table


def test_a_pipe_in_a_help_text_does_not_break_the_table(hooks):
    assert hooks._cell("a|b") == "a\\|b"


def test_a_marker_expands_and_an_unknown_name_fails(hooks):
    assert "| `--dim` (original: `--dim_E`) | 64 |" in hooks.expand("<!-- options: clcrec -->")
    with pytest.raises(ValueError, match="no such model"):
        hooks.expand("<!-- options: clcrecc -->")


def test_flags_in_code_are_checked_against_every_command(hooks):
    text = (
        "`coldbrew leaderboard --models a,b --seeds 1,2`\n"
        "```bash\ncoldbrew train --num-neg 64 --num_neg 64 --lr-typo 1\n"
        "torchrun --nproc-per-node 2 -m coldbrew train\n```\n"
        "prose --not-code is not checked; `--cold-candidates split`"
    )
    assert hooks.unknown_flags(text) == ["--lr-typo"]


def test_a_stale_flag_is_a_warning_which_strict_builds_turn_into_failures(hooks, caplog):
    with caplog.at_level("WARNING", logger="mkdocs.hooks.coldbrew_docs"):
        hooks.on_page_markdown("`coldbrew train --num-negs 3`", page("models/clcrec.md"))
    assert "models/clcrec.md: --num-negs is no option" in caplog.text


def test_links_to_the_root_benchmarks_file_point_at_the_site_copy(hooks):
    out = hooks.on_page_markdown("[a](../BENCHMARKS.md#x) [b](BENCHMARKS.md)", page("gpu.md"))
    assert out == "[a](benchmarks.md#x) [b](BENCHMARKS.md)"
    out = hooks.on_page_markdown("[a](../../BENCHMARKS.md)", page("models/zoo.md"))
    assert out == "[a](../benchmarks.md)"


def test_the_benchmarks_pages_links_into_docs_are_site_links(hooks):
    # BENCHMARKS.md sits at the root, so it links docs/benchmark-history.md; the site's page is
    # a sibling
    out = hooks.on_page_markdown('--8<-- "BENCHMARKS.md"', page("benchmarks.md"))
    assert "](docs/" not in out and "](benchmark-history.md" in out
    assert hooks.on_page_markdown("[b](docs/x.md)", page("gpu.md")) == "[b](docs/x.md)"


def test_every_page_names_only_flags_that_exist(hooks):
    """The site's own pages, as the build sees them (``make docs`` also checks links)."""
    pages = sorted((ROOT / "docs").rglob("*.md"))
    assert len(pages) >= 10
    for path in pages:
        if path.name in hooks.HISTORY_PAGES:
            continue
        markdown = hooks.expand(path.read_text(encoding="utf-8"))
        assert hooks.unknown_flags(markdown) == [], path.relative_to(ROOT)


def test_a_benchmark_scripts_options_are_known_and_others_are_not(hooks):
    # benchmarks/gpu/gpu_check.py declares --dry-run; nothing declares --gpu-chek
    assert hooks.unknown_flags("`python benchmarks/gpu/gpu_check.py --dry-run`") == []
    assert hooks.unknown_flags("`python benchmarks/gpu/gpu_check.py --gpu-chek`") == ["--gpu-chek"]


def test_the_benchmark_history_may_quote_flags_since_removed(hooks, caplog):
    # it records commands as they ran; every other page is checked
    with caplog.at_level("WARNING", logger="mkdocs.hooks.coldbrew_docs"):
        hooks.on_page_markdown("`bench.py --speed-stepz 5`", page("benchmark-history.md"))
        assert "--speed-stepz" not in caplog.text
        hooks.on_page_markdown("`bench.py --speed-stepz 5`", page("performance.md"))
    assert "performance.md: --speed-stepz is no option" in caplog.text
