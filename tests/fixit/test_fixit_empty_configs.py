"""Empty Fixit configs and datasets: the files keep their schema, the dataset card names only
configs `datasets` can load, the pages say what is empty; and staff build a version from the web."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from portal.core.serializers import canonical_names
from portal.fixit import exports
from portal.fixit.models import Dataset
from tests.support.factories import make_user, sync_catalog
from tests.support.hf_offline import hf_offline

REPO = Path(__file__).resolve().parents[2]
# Three real repair rows (H200, docs/examples/fixit-h200, published as format fixit-1: read with the canonical names)
# and no generation row.
REPAIR_ROWS = [
    canonical_names(json.loads(line))
    for line in (REPO / "docs/examples/fixit-h200/repair/train.jsonl").read_text().splitlines()
]


def _write(files: dict[str, bytes], folder: Path) -> Path:
    for path, data in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(data)
    return folder


def test_every_config_the_card_names_loads_and_an_empty_one_keeps_its_schema(tmp_path, monkeypatch):
    """Catches: the card naming a `generation` config of 0 rows, whose Parquet (a row group of 0 rows) makes
    `datasets.load_dataset(folder, "generation")` fail with "BatchSize must be greater than 0"."""
    hf_offline(monkeypatch)
    import datasets

    files = exports.dataset_files(name="x", version=1, repair=REPAIR_ROWS, generation=[], manifest_fields={})
    folder = _write(files, tmp_path / "x")
    empty = pq.ParquetFile(folder / "generation/train.parquet")
    assert empty.metadata.num_rows == 0 and empty.metadata.num_row_groups == 0
    assert empty.schema_arrow == exports.GENERATION_SCHEMA
    written = pq.read_table(folder / "repair/train.parquet").column("speedup_factor").to_pylist()
    assert written == [r["speedup_factor"] for r in REPAIR_ROWS] and all(written)  # a fixit-1 row's `speedup`, kept
    card = (folder / "README.md").read_text()
    header = card.split("---")[1]
    assert "config_name: repair" in header and "generation" not in header
    assert "Empty: generation (no rows)" in card
    cache = str(tmp_path / "cache")
    for config in ("repair", "generation"):
        if f"config_name: {config}" in header:
            assert datasets.load_dataset(str(folder), config, split="train", cache_dir=cache).num_rows == 3
    with pytest.raises(ValueError, match="'generation' not found. Available: \\['repair'\\]"):
        datasets.load_dataset(str(folder), "generation", cache_dir=cache)


@pytest.fixture
def fixit_dirs(settings, tmp_path):
    settings.FIXIT_DIR = tmp_path / "fixit"
    settings.ARTIFACTS_DIR = tmp_path / "artifacts"
    sync_catalog()


@pytest.mark.django_db
def test_staff_build_a_version_from_the_web_and_an_empty_one_says_so(client, fixit_dirs):
    """Catches: no web way to build a dataset, and an empty version published without a word."""
    staff = make_user("ops", is_staff=True)
    client.force_login(staff)
    listing = client.get("/fixit/").content.decode()
    assert 'id="dataset-build-form"' in listing and 'action="/fixit/build"' in listing
    response = client.post("/fixit/build", {"name": "first-try", "arches": ["sm_90a"], "verified_only": "on"})
    assert response.status_code == 302 and response["Location"] == "/fixit/first-try/v1/"
    dataset = Dataset.objects.get(name="first-try")
    assert dataset.filters["arches"] == ["sm_90a"] and dataset.filters["verified_only"] is True
    page = client.get(response["Location"]).content.decode()
    assert "no evaluation matched: it is empty" in page  # the message after building
    assert 'id="dataset-empty"' in page
    assert '<span class="badge notice">empty</span>' in client.get("/fixit/").content.decode()
    # A version with repair rows but no generation row names the empty config.
    Dataset.objects.filter(id=dataset.id).update(repair_rows=3)
    page = client.get(response["Location"]).content.decode()
    assert 'id="dataset-empty-config"' in page and "generation: no rows." in page


@pytest.mark.django_db
def test_only_staff_may_build_from_the_web(client, fixit_dirs):
    response = client.post("/fixit/build", {"name": "nope"})
    assert response.status_code == 404
    client.force_login(make_user("alice"))
    assert 'id="dataset-build-form"' not in client.get("/fixit/").content.decode()
    assert client.post("/fixit/build", {"name": "nope"}).status_code == 404
    assert not Dataset.objects.exists()


@pytest.mark.django_db
def test_a_refused_build_shows_the_reason_on_the_form(client, fixit_dirs):
    client.force_login(make_user("ops", is_staff=True))
    response = client.post("/fixit/build", {"name": "bad", "min_speedup": "-1"})
    assert response.status_code == 400
    assert "Ensure this value is greater than or equal to 0" in response.content.decode()
