"""The site's tables keep code whole: the theme breaks inline code anywhere (``word-break:
break-word``), which split file names such as ``manifest.json`` in a narrow column."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_the_site_keeps_code_in_table_cells_whole():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    sheets = [ROOT / "docs" / name for name in config.get("extra_css", [])]
    rules = "".join(sheet.read_text() for sheet in sheets if sheet.is_file())
    found = re.search(r"table[^{]*code\s*\{[^}]*word-break:\s*normal", rules)
    assert found, "no stylesheet keeps code in table cells from breaking mid-word"


def test_no_table_row_names_a_file_beside_a_paragraph():
    # a file name in a first column beside ~700 characters was squeezed to a few letters
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for number, line in enumerate(page.read_text().splitlines(), 1):
            cells = line.strip().strip("|").split("|") if line.startswith("|") else []
            if cells and re.search(r"`[\w./-]+\.[a-z]{2,}`", cells[0]) and len(line) > 400:
                raise AssertionError(f"{page.name}:{number}: a file name beside a long cell")
