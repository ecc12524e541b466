"""Every gold drawing of the current corpus reads back in ezdxf, another maintained DXF reader,
with nothing repaired or deleted by its auditor: the angular dimensions the gold writer adds as
raw pairs name an anonymous block that exists (`*D<n>`), so readers that drop a DIMENSION
without a geometry block keep them."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import ezdxf

from .conftest import binary

COSMETIC = ("Fixed invalid table head handle in table", "Fixed invalid transparency for entity")


def test_every_gold_reads_back_in_ezdxf(tmp_path: Path) -> None:
    subprocess.run(
        [
            str(binary("deskbroker")),
            "bench",
            "corpus",
            "--out",
            str(tmp_path / "public"),
            "--gold-out",
            str(tmp_path / "gold"),
        ],
        check=True,
        capture_output=True,
    )
    golds = sorted((tmp_path / "gold").rglob("*.dxf"))
    assert len(golds) == 21, golds
    angular = 0
    for gold in golds:
        doc = ezdxf.readfile(gold)
        before = Counter(entity.dxftype() for entity in doc.modelspace())
        auditor = doc.audit()
        after = Counter(entity.dxftype() for entity in doc.modelspace())
        assert not auditor.has_errors, (gold.name, [e.message for e in auditor.errors])
        # Two repairs of what the `dxf` crate writes are cosmetic (a table head's handle, an
        # entity's transparency 0); anything else (a deleted or rebuilt entity) is a failure.
        repairs = [f.message for f in auditor.fixes if not f.message.startswith(COSMETIC)]
        assert not repairs, (gold.name, repairs)
        assert before == after, (gold.name, before, after)
        # Every DIMENSION the file holds is in ezdxf's model space, each with its block.
        written = gold.read_bytes().count(b"\r\n  0\r\nDIMENSION\r\n")
        assert after["DIMENSION"] == written, (gold.name, after, written)
        for dimension in doc.modelspace().query("DIMENSION"):
            assert dimension.get_geometry_block() is not None, gold.name
            if dimension.dimtype & 0x0F == 2:
                angular += 1
    # Corpus v3's chamfered drawings (tasks 013, 018, 021) carry an angular dimension each.
    assert angular == 3, angular
